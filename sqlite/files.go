package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// maxReaderStmts caps a reader pool's prepared statement cache. Queries
// built with IN lists of many sizes could otherwise grow it without bound;
// past the cap new queries run unprepared. Cached statements are never
// closed before the pool is, since another goroutine may be reading
// through one.
const maxReaderStmts = 512

// readerPool is a file's reader connections with a cache of prepared
// statements. It is a sqlitedb.Querier.
type readerPool struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newReaderPool(db *sql.DB) *readerPool {
	return &readerPool{db: db, stmts: map[string]*sql.Stmt{}}
}

// stmt returns a prepared statement for query, preparing it once; nil (and
// no error) when the cache is full.
func (p *readerPool) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[query]; ok {
		return st, nil
	}
	if len(p.stmts) >= maxReaderStmts {
		return nil, nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.stmts[query] = st
	return st, nil
}

// QueryContext runs query through a cached prepared statement.
func (p *readerPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return p.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (p *readerPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.stmt(ctx, query)
	if err != nil || st == nil {
		// A prepare error surfaces through Scan, as database/sql does.
		return p.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// closeStmts closes the cached statements (the pool itself is closed by
// its owner).
func (p *readerPool) closeStmts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.stmts {
		st.Close()
	}
	p.stmts = map[string]*sql.Stmt{}
}

// enableWAL switches a writable file to WAL unless it already is. A file
// system without the shared memory or locks WAL needs (NFS, SMB, FUSE)
// leaves the file in its rollback-journal mode with a warning. A file
// already in WAL is never moved off it. Changing the mode needs a lock, so
// a busy answer is retried within budget.
func enableWAL(ctx context.Context, conn *sql.Conn, path string, budget time.Duration, now func() time.Time, log *slog.Logger) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return openErr(err, path, "read journal mode")
	}
	if strings.EqualFold(mode, "wal") {
		return nil
	}
	deadline := now().Add(budget)
	for {
		err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		switch {
		case err == nil:
			if !strings.EqualFold(mode, "wal") {
				log.Warn("WAL mode not available; staying in rollback-journal mode", "path", path, "mode", mode)
			}
			return nil
		case sqlitedb.IsBusy(err) && now().Before(deadline):
			select {
			case <-ctx.Done():
				return sqlitedb.Wrap(ctx.Err(), "enable WAL on %s", path)
			case <-time.After(50 * time.Millisecond):
			}
		case sqlitedb.IsBusy(err):
			return sqlitedb.Wrap(err, "enable WAL on %s", path)
		case sqlitedb.IsWALUnsupported(err):
			log.Warn("WAL mode not supported by this file system; staying in rollback-journal mode", "path", path, "err", err)
			return nil
		default:
			return openErr(err, path, "enable WAL")
		}
	}
}

// openErr classifies an error met while opening. A damaged file is invalid
// here, where the path is the caller's input, unlike damage met later
// (sqlitedb.Code calls that internal).
func openErr(err error, path, what string) error {
	if sqlitedb.IsCorrupt(err) {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "open %s: %s", path, what)
	}
	return sqlitedb.Wrap(err, "open %s: %s", path, what)
}

// writeErr classifies a write failure with sqlitedb.Code; an error that
// already carries a code is returned as it is.
func writeErr(err error, what string) error {
	var coded *sessiondb.Error
	if errors.As(err, &coded) {
		return err
	}
	return sqlitedb.Wrap(err, "%s", what)
}
