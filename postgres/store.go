// Package postgres implements the sessiondb history store on PostgreSQL,
// for deployments where several processes on several machines share one
// history: the same contract as the sqlite package (storetest holds both
// to it), through github.com/jackc/pgx/v5.
//
// A Store owns a connection pool. Its tables live in one schema (Options.
// Schema, else the connection's search_path), created and migrated by Open
// under an advisory lock, so two processes starting together never both
// migrate. Appends arriving together share one transaction (group commit),
// counters are updated in the same statement as their rows, titles are
// kept unique by a unique index, and transactions that lose a
// serialization or deadlock race are retried within a time budget.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiondb/sessiondb"
)

// DefaultWriteBudget bounds how long a write keeps retrying a transaction
// that lost a serialization or deadlock race, as the SQLite backend's
// budget bounds its wait for the write lock.
const DefaultWriteBudget = 20 * time.Second

// DefaultMaxConns is the pool size when neither Options.MaxConns nor the
// URL's pool_max_conns sets one: enough for readers beside the
// group-commit writer, few enough that twelve processes fit in the
// server's max_connections (100 by default, 3 of them reserved). A server
// set for more or fewer takes ?pool_max_conns=N in the URL.
const DefaultMaxConns = 8

// Options tune Open. The zero value works in the connection's current
// schema with the wall clock, the default budget and pool, and no logging.
type Options struct {
	// Schema is the schema holding the store's tables, created when
	// missing; "" means the schema the URL's search_path parameter names
	// (also created when missing), else the connection's current schema
	// (normally public). Several stores can share a database in different
	// schemas.
	Schema string
	// ReadOnly refuses every write with invalid and never migrates; the
	// schema must already hold a store.
	ReadOnly bool
	// MustExist refuses (not_found) a schema that holds no store yet
	// instead of creating one; an older store is still migrated.
	MustExist bool
	// WriteBudget bounds the retries of a write; 0 means DefaultWriteBudget.
	WriteBudget time.Duration
	// MaxConns is the pool size; 0 means the URL's pool_max_conns when it
	// has one, else DefaultMaxConns.
	MaxConns int32
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings (bad stored JSON); nil discards them.
	Logger *slog.Logger
	// Tracer, when set, sees every statement the store sends (logging,
	// metrics; the index tests EXPLAIN what it records). A tracer that is
	// also a pgx.BatchTracer sees the statements of batched appends.
	Tracer pgx.QueryTracer
}

// conn is what every store of this package holds: the pool on one schema
// and the rules for writing through it.
type conn struct {
	pool     *pgxpool.Pool
	schema   string // as the server resolved it
	readOnly bool
	budget   time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// Store is the history store in one PostgreSQL schema. It is safe for
// concurrent use by many goroutines, and many Stores in many processes may
// share one schema. Close it to release its connections.
type Store struct {
	*conn

	app *appender

	// imports remembers, for ImportSession, children whose parent had
	// not been imported yet.
	imports sessiondb.ImportLinks

	notify *notifier

	closeOnce sync.Once
}

var _ sessiondb.Store = (*Store)(nil)

// Open connects to the PostgreSQL server at url (a postgres:// URL or a
// keyword/value connection string), creates or migrates the store's
// schema, and returns the Store. A bad URL is invalid; a server that
// cannot be reached is internal.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	c, err := openConn(ctx, url, o, historyMigrations)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: c}
	s.app = newAppender(s)
	s.notify = newNotifier(s)
	return s, nil
}

// openConn opens the pool on the schema o and url name, creating the
// schema when asked, and brings set's migrations up to date.
func openConn(ctx context.Context, url string, o Options, set migrationSet) (*conn, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open PostgreSQL store: %s", redact(err.Error(), url))
	}
	if sp := cfg.ConnConfig.RuntimeParams["search_path"]; o.Schema == "" && sp != "" && !strings.Contains(sp, ",") {
		// A URL naming one schema (?search_path=agents) is a store
		// location like Options.Schema: created when missing.
		o.Schema = strings.Trim(strings.TrimSpace(sp), `"`)
	}
	if o.Schema != "" {
		if err := sessiondb.CheckSafeName("schema", o.Schema); err != nil {
			return nil, sessiondb.Wrap("", err, "open PostgreSQL store")
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = quoteIdent(o.Schema)
	}
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case strings.Contains(url, "pool_max_conns="):
		// The URL's pool_max_conns, which ParseConfig read, is the
		// operator's setting for a server whose max_connections is not
		// PostgreSQL's default: it stands.
	default:
		cfg.MaxConns = DefaultMaxConns
	}
	// Idle connections are let go, so an idle fleet of processes does not
	// sit on the server's connection slots.
	cfg.MaxConnIdleTime = time.Minute
	c := &conn{readOnly: o.ReadOnly, budget: o.WriteBudget, log: o.Logger, now: time.Now}
	if c.budget <= 0 {
		c.budget = DefaultWriteBudget
	}
	if o.Now != nil {
		c.now = o.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open PostgreSQL store: %s", redact(err.Error(), url))
	}
	c.pool = pool
	if o.Schema != "" && !o.ReadOnly && !o.MustExist {
		// CREATE SCHEMA IF NOT EXISTS can still fail when two processes
		// run it at once; the advisory lock of migrate would not cover it,
		// so it takes the same lock.
		err = c.withMigrationLock(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(o.Schema))
			return err
		})
		if err != nil {
			pool.Close()
			return nil, c.classify(err, "open PostgreSQL store: create schema %s", o.Schema)
		}
	}
	var schema *string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		pool.Close()
		return nil, c.classify(err, "open PostgreSQL store")
	}
	if schema == nil {
		pool.Close()
		if o.ReadOnly || o.MustExist {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "open PostgreSQL store: no %s: the search_path names no schema that exists", set.what)
		}
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open PostgreSQL store: the search_path names no schema that exists")
	}
	c.schema = *schema
	switch {
	case o.ReadOnly:
		err = c.checkMigrated(ctx, set)
	case o.MustExist:
		if err = c.checkExists(ctx, set); err == nil {
			err = c.migrate(ctx, set)
		}
	default:
		err = c.migrate(ctx, set)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return c, nil
}

// Close stops the appender and the notification listener and closes the
// pool. Calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.notify.close()
		s.app.close()
		s.pool.Close()
	})
	return nil
}

// Schema returns the schema holding the store's tables.
func (s *conn) Schema() string { return s.schema }

func (s *conn) epochNow() float64 { return sessiondb.EpochSeconds(s.now()) }

// quoteIdent quotes a name for SQL.
func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// redact removes the password of url from a message that may quote it.
func redact(msg, url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		if at := strings.LastIndex(url, "@"); at > i {
			cred := url[i+3 : at]
			if c := strings.Index(cred, ":"); c >= 0 && cred[c+1:] != "" {
				msg = strings.ReplaceAll(msg, cred[c+1:], "xxxxx")
			}
		}
	}
	return msg
}

// PostgreSQL error codes the store acts on
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	pgUniqueViolation          = "23505"
	pgForeignKeyViolation      = "23503"
	pgSerializationFailure     = "40001"
	pgDeadlockDetected         = "40P01"
	pgLockNotAvailable         = "55P03"
	pgTooManyConnections       = "53300"
	pgReadOnlyTransaction      = "25006"
	pgCharacterNotInRepertoire = "22021"
	pgUntranslatableCharacter  = "22P05"
	pgQueryCanceled            = "57014"
)

// sqlState returns the SQLSTATE of a server error, "" for any other error.
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// constraintOf returns the constraint a server error names, if any.
func constraintOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

// Code classifies an error met while using PostgreSQL, as sqlitedb.Code
// does for SQLite:
//
//   - an error that already carries a code keeps it;
//   - context cancellation or deadline, a cancelled statement, lost
//     serialization or deadlock races, lock timeouts and a server out of
//     connections: busy (the work may succeed if tried again);
//   - unique violations: conflict;
//   - foreign key violations, writes in a read-only store, text PostgreSQL
//     cannot hold (NUL, invalid UTF-8): invalid;
//   - anything else: internal.
func Code(err error) string {
	if err == nil {
		return ""
	}
	if c := sessiondb.CarriedCode(err); c != "" {
		return c
	}
	switch sqlState(err) {
	case pgSerializationFailure, pgDeadlockDetected, pgLockNotAvailable, pgTooManyConnections, pgQueryCanceled:
		return sessiondb.EBUSY
	case pgUniqueViolation:
		return sessiondb.ECONFLICT
	case pgForeignKeyViolation, pgReadOnlyTransaction, pgCharacterNotInRepertoire, pgUntranslatableCharacter:
		return sessiondb.EINVALID
	}
	return sessiondb.EINTERNAL
}

// classify wraps err with its Code and the operation.
func (s *conn) classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var coded *sessiondb.Error
	if errors.As(err, &coded) {
		return err
	}
	return sessiondb.Wrap(Code(err), err, format, args...)
}

// retryable reports whether a failed transaction may succeed if run again
// from the start: it lost a serialization or deadlock race.
func retryable(err error) bool {
	switch sqlState(err) {
	case pgSerializationFailure, pgDeadlockDetected:
		return true
	}
	return false
}

// write runs fn in one read-committed transaction, retrying the whole
// transaction when it loses a serialization or deadlock race, with
// jittered pauses, until the write budget (or ctx) runs out. A read-only
// store refuses with invalid. Errors are classified with Code; what names
// the operation.
func (s *conn) write(ctx context.Context, what string, fn func(tx pgx.Tx) error) error {
	return s.writeRerun(ctx, what, nil, fn)
}

// writeRerun is write that also runs the transaction again, at once,
// while rerun (when not nil) says the failure was a race another
// transaction has already settled by committing.
func (s *conn) writeRerun(ctx context.Context, what string, rerun func(error) bool, fn func(tx pgx.Tx) error) error {
	if s.readOnly {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: store opened read-only", what)
	}
	return s.retry(ctx, what, rerun, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
}

// retry runs fn, a write in a transaction of its own (one statement, or
// a whole transaction), again while it loses a serialization or deadlock
// race, as write does, and at once, with no pause, while rerun (when not
// nil) accepts the error: the one loop every write's reruns go through.
func (s *conn) retry(ctx context.Context, what string, rerun func(error) bool, fn func() error) error {
	start := time.Now()
	deadline := start.Add(s.budget)
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return s.classify(err, "%s", what)
		}
		if rerun != nil && rerun(err) {
			continue
		}
		if !retryable(err) {
			return s.classify(err, "%s", what)
		}
		pause := jitter(time.Since(start))
		if time.Now().Add(pause).After(deadline) {
			return sessiondb.Wrap(sessiondb.EBUSY, err, "%s: gave up after %d attempts in %v", what, attempt, time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return s.classify(ctx.Err(), "%s", what)
		case <-time.After(pause):
		}
	}
}

// jitter is the pause before a retry: short while the race is young,
// longer once it has lasted, as the SQLite writer waits for its lock.
func jitter(elapsed time.Duration) time.Duration {
	lo, hi := 20*time.Millisecond, 150*time.Millisecond
	if elapsed > 2*time.Second {
		hi = time.Second
	}
	return lo + rand.N(hi-lo)
}

// readErr classifies a failed read.
func (s *conn) readErr(err error, format string, args ...any) error {
	return s.classify(err, format, args...)
}

// fmtIDs is a short list of ids for messages.
func fmtIDs(ids []string) string { return fmt.Sprint(strings.Join(ids, ", ")) }
