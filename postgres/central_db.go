package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiondb/sessiondb"
)

// The central registry's service code (central_*.go) follows the SQLite
// backend's (sqlite/central_*.go) statement for statement, so both keep
// NanoClaw's semantics exactly; where PostgreSQL differs it says so (IS
// NOT DISTINCT FROM for SQLite's null-safe IS, ON CONFLICT DO NOTHING for
// INSERT OR IGNORE, qualified columns in upserts, an advisory lock where
// SQLite's single writer made a read-then-insert safe). A change to one
// must be made to the other; storetest.RunRegistry holds both to it.
//
// Its statements are written with ? placeholders (and ?N for a repeated
// one), as NanoClaw's SQL is; rebind numbers them for PostgreSQL at the
// one place statements are sent.

// rebind turns ? into $1, $2, ... in order and ?N into $N, leaving quoted
// text alone.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	quoted := false
	for i := 0; i < len(q); i++ {
		ch := q[i]
		switch {
		case ch == '\'':
			quoted = !quoted
			b.WriteByte(ch)
		case ch == '?' && !quoted:
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
				continue
			}
			n++
			b.WriteString("$" + strconv.Itoa(n))
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// rquerier is what the registry reads through: the pool, or a
// transaction.
type rquerier interface {
	query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// poolQ reads through the pool.
type poolQ struct{ p *pgxpool.Pool }

func (q poolQ) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return q.p.Query(ctx, rebind(sql), args...)
}

// ctxTx is one registry transaction with its context.
type ctxTx struct {
	ctx context.Context
	tx  pgx.Tx
}

// execResult is what Exec reports.
type execResult struct{ n int64 }

// RowsAffected is the number of rows the statement changed.
func (r execResult) RowsAffected() (int64, error) { return r.n, nil }

func (t *ctxTx) Context() context.Context { return t.ctx }

func (t *ctxTx) Exec(sql string, args ...any) (execResult, error) {
	tag, err := t.tx.Exec(t.ctx, rebind(sql), args...)
	return execResult{tag.RowsAffected()}, err
}

// QueryRow reads one row.
func (t *ctxTx) QueryRow(sql string, args ...any) pgx.Row {
	return t.tx.QueryRow(t.ctx, rebind(sql), args...)
}

func (t *ctxTx) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.tx.Query(ctx, rebind(sql), args...)
}

// appendRows appends scan of every row of sql to out.
func appendRows[T any](ctx context.Context, q rquerier, sql string, args []any, out []T, scan func(pgx.Row) (T, error)) ([]T, error) {
	rows, err := q.query(ctx, sql, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// eachRow calls fn for every row of sql.
func eachRow(ctx context.Context, q rquerier, sql string, args []any, fn func(pgx.Row) error) error {
	rows, err := q.query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// valueOf reads a one-column row.
func valueOf[T any](r pgx.Row) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// wrapErr classifies err (nil stays nil) with Code and adds context.
func wrapErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var coded *sessiondb.Error
	if errors.As(err, &coded) {
		return err
	}
	return sessiondb.Wrap(Code(err), err, format, args...)
}

// writeTx runs fn in one write transaction (retried as every write is).
func (c *Central) writeTx(ctx context.Context, what string, fn func(tx *ctxTx) error) error {
	return c.write(ctx, what, func(tx pgx.Tx) error { return fn(&ctxTx{ctx: ctx, tx: tx}) })
}

// readTx runs fn in one read-only transaction: one snapshot.
func (c *Central) readTx(ctx context.Context, what string, fn func(q rquerier) error) error {
	err := pgx.BeginTxFunc(ctx, c.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(&ctxTx{ctx: ctx, tx: tx})
	})
	return wrapErr(err, "%s", what)
}

// placeholders returns "?, ?, ?" for n values.
func qmarks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// nullText is NULL for "", else s.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
