package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiondb/sessiondb/internal/regsql"
)

// The central registry's statements and rows are internal/regsql's,
// shared with the SQLite backend; this file runs them on PostgreSQL
// (regsql.Backend). They are written with ? placeholders (and ?N for a
// repeated one), as NanoClaw's SQL is; rebind numbers them for PostgreSQL
// at the one place statements are sent.

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

// registryBackend runs the registry on a pool.
type registryBackend struct{ c *conn }

var _ regsql.Backend = registryBackend{}

func (b registryBackend) Reader() regsql.Querier { return poolQ{b.c.pool} }

// Read runs fn in one read-only transaction: one snapshot.
func (b registryBackend) Read(ctx context.Context, what string, fn func(regsql.Querier) error) error {
	err := pgx.BeginTxFunc(ctx, b.c.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(&ctxTx{ctx: ctx, tx: tx})
	})
	return b.c.classify(err, "%s", what)
}

// uniqueRetries is how many times a registry write that lost a race to
// insert the same key is run again.
const uniqueRetries = 3

// Write runs fn in one write transaction, retried as every write is, and
// also when it loses a race to insert a key another transaction inserted
// first: under read committed two hosts can both look for a user (a
// chat, a DM) before either inserts it, and the second's insert then
// violates the key. Run again, fn finds the row the first committed, as
// it would have had the two come one after the other (on SQLite they do).
// A key that really is taken fails the same way every time and is
// reported as the conflict it is. The history store's writes do not
// rerun on a violated key: there it is the conflict to report (a title
// another session holds).
func (b registryBackend) Write(ctx context.Context, what string, fn func(regsql.Tx) error) error {
	reruns := 0
	lostInsertRace := func(err error) bool {
		if sqlState(err) != pgUniqueViolation || reruns == uniqueRetries {
			return false
		}
		reruns++
		return true
	}
	return b.c.writeRerun(ctx, what, lostInsertRace, func(tx pgx.Tx) error { return fn(&ctxTx{ctx: ctx, tx: tx}) })
}

func (b registryBackend) Code(err error) string { return Code(err) }

// LockResolve takes a transaction-scoped advisory lock on the key:
// several hosts write at once here, where SQLite lets one writer in.
func (b registryBackend) LockResolve(tx regsql.Tx, key string) error {
	_, err := tx.Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", key)
	return err
}

func (b registryBackend) Now() time.Time { return b.c.now() }

// poolQ reads through the pool.
type poolQ struct{ p *pgxpool.Pool }

func (q poolQ) Each(ctx context.Context, sql string, args []any, fn func(regsql.Scanner) error) error {
	rows, err := q.p.Query(ctx, rebind(sql), args...)
	return eachOf(rows, err, func(r pgx.Rows) error { return fn(r) })
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

func (t *ctxTx) Exec(sql string, args ...any) (regsql.Result, error) {
	tag, err := t.tx.Exec(t.ctx, rebind(sql), args...)
	return execResult{tag.RowsAffected()}, err
}

// QueryRow reads one row.
func (t *ctxTx) QueryRow(sql string, args ...any) regsql.Scanner {
	return t.tx.QueryRow(t.ctx, rebind(sql), args...)
}

func (t *ctxTx) Each(ctx context.Context, sql string, args []any, fn func(regsql.Scanner) error) error {
	rows, err := t.tx.Query(ctx, rebind(sql), args...)
	return eachOf(rows, err, func(r pgx.Rows) error { return fn(r) })
}
