// Package regsql is the control plane's central registry
// (sessiondb.Registry) written once over a small database interface: its
// statements (NanoClaw's tables and columns, in SQL both SQLite and
// PostgreSQL run: ON CONFLICT for INSERT OR IGNORE, IS NOT DISTINCT FROM
// for the null-safe comparison, ? placeholders that the PostgreSQL backend
// numbers at send time) and the mapping of rows to the root's types. The
// backends (sqlite, postgres) open the database, run its migrations and
// implement Backend: how a transaction is run and retried, how a driver's
// errors map to codes, and how two processes resolving one session take
// turns.
package regsql

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Scanner is a row being read.
type Scanner interface {
	Scan(dest ...any) error
}

// Querier runs reads: a connection pool, or a transaction.
type Querier interface {
	// Each calls fn for every row of query.
	Each(ctx context.Context, query string, args []any, fn func(Scanner) error) error
}

// Result is what a statement changed.
type Result interface {
	RowsAffected() (int64, error)
}

// Tx is one write transaction with its context.
type Tx interface {
	Querier
	Context() context.Context
	Exec(query string, args ...any) (Result, error)
}

// Backend is the database under the registry.
type Backend interface {
	// Reader reads outside a transaction.
	Reader() Querier
	// Read runs fn in one read-only snapshot.
	Read(ctx context.Context, what string, fn func(Querier) error) error
	// Write runs fn in one write transaction, retried as the backend does;
	// its errors carry codes and what names the operation.
	Write(ctx context.Context, what string, fn func(Tx) error) error
	// Code classifies a driver error (sessiondb's codes).
	Code(err error) string
	// LockResolve makes resolutions of the session lookup key take turns
	// inside tx, until it ends.
	LockResolve(tx Tx, key string) error
	// Now is the store's clock.
	Now() time.Time
}

// Registry implements sessiondb.Registry over a Backend.
type Registry struct {
	b  Backend
	rq Querier
}

// New returns the registry over b.
func New(b Backend) *Registry { return &Registry{b: b, rq: b.Reader()} }

func (c *Registry) write(ctx context.Context, what string, fn func(Tx) error) error {
	return c.b.Write(ctx, what, fn)
}

// Changed runs query in tx and returns how many rows it changed (the
// backends' own statements too).
func Changed(tx Tx, query string, args ...any) (int64, error) {
	res, err := tx.Exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// changeRows runs one statement in a write transaction of its own and
// returns how many rows it changed.
func (c *Registry) changeRows(ctx context.Context, what, query string, args ...any) (int64, error) {
	var n int64
	err := c.write(ctx, what, func(tx Tx) error {
		var err error
		n, err = Changed(tx, query, args...)
		return err
	})
	return n, err
}

// changeOne runs one statement in a write transaction of its own that
// must change a row: when it changes none, the error is not_found naming
// kind and id.
func (c *Registry) changeOne(ctx context.Context, what, kind, id, query string, args ...any) error {
	return c.write(ctx, what, func(tx Tx) error {
		n, err := Changed(tx, query, args...)
		if err == nil && n == 0 {
			return sessiondb.NotFound(kind, id)
		}
		return err
	})
}

func (c *Registry) read(ctx context.Context, what string, fn func(Querier) error) error {
	return c.b.Read(ctx, what, fn)
}

// wrap classifies err (nil stays nil) and adds context.
func (c *Registry) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return sessiondb.Wrap(c.b.Code(err), err, format, args...)
}

// now is the store's clock.
func (c *Registry) now() time.Time { return c.b.Now() }

// stamp is the store's now as stored.
func (c *Registry) stamp() string { return sessiondb.FormatTimestamp(c.now()) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return sessiondb.FormatTimestamp(t)
}

// intoText scans a nullable text column into *p, NULL as "".
func intoText[S ~string](p *S) sql.Scanner { return textDest[S]{p} }

type textDest[S ~string] struct{ p *S }

func (d textDest[S]) Scan(src any) error {
	var s sql.NullString
	err := s.Scan(src)
	*d.p = S(s.String)
	return err
}

// IntoTime scans a stored timestamp into *p; NULL and forms
// ParseTimestamp does not know read as the zero time. The backends read
// their own tables' timestamps with it too.
func IntoTime(p *time.Time) sql.Scanner { return timeDest{p} }

type timeDest struct{ p *time.Time }

func (d timeDest) Scan(src any) error {
	var s sql.NullString
	err := s.Scan(src)
	*d.p, _ = sessiondb.ParseTimestamp(s.String)
	return err
}

// nullText is NULL for "", else s.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// qmarks returns "?, ?, ?" for n values.
func qmarks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// where is a WHERE clause being built: its conditions, ANDed, and the
// arguments of their placeholders in order.
type where struct {
	conds []string
	args  []any
}

// and adds cond with the arguments of its placeholders.
func (w *where) and(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// equal adds col = v, unless v is "" (a filter's field left unset).
func (w *where) equal(col, v string) {
	if v != "" {
		w.and(col+" = ?", v)
	}
}

// String is the clause with a leading space, "" without conditions.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// pageLimit is the page size of a registry listing for limit: 0 means 100.
func pageLimit(limit int) int {
	if limit == 0 {
		return 100
	}
	return limit
}

// listByTime returns every row of query, ordered by the moment at reads
// from each, query's own order breaking ties; its error names what was
// listed. By the moment, not its text: NanoClaw's ncl writes SQLite's
// "YYYY-MM-DD HH:MM:SS", which sorts before the ISO form of the same day.
func listByTime[T any](ctx context.Context, c *Registry, q Querier, what, query string, args []any, scan func(Scanner) (T, error), at func(T) time.Time) ([]T, error) {
	out, err := AppendRows(ctx, q, query, args, []T{}, scan)
	if err != nil {
		return nil, c.wrap(err, "list %s", what)
	}
	sort.SliceStable(out, func(i, j int) bool { return at(out[i]).Before(at(out[j])) })
	return out, nil
}

// hasRow reports whether query finds a row.
func hasRow(ctx context.Context, q Querier, query string, args ...any) (bool, error) {
	found := false
	err := q.Each(ctx, query, args, func(Scanner) error { found = true; return nil })
	return found, err
}

// mustExist returns not_found naming what (the kind of row) and id when
// table has no row of that id.
func mustExist(ctx context.Context, q Querier, what, table, id string) error {
	ok, err := hasRow(ctx, q, "SELECT 1 FROM "+table+" WHERE id = ?", id)
	if err != nil {
		return err
	}
	if !ok {
		return sessiondb.NotFound(what, id)
	}
	return nil
}

// AppendRows appends scan of every row of query to out (the backends'
// own tables too).
func AppendRows[T any](ctx context.Context, q Querier, query string, args []any, out []T, scan func(Scanner) (T, error)) ([]T, error) {
	err := q.Each(ctx, query, args, func(r Scanner) error {
		v, err := scan(r)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// valueOf reads a one-column row.
func valueOf[T any](r Scanner) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}
