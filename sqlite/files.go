package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
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
	// trace, when set (by tests only), sees every query and its
	// arguments before it runs: the plan tests explain them.
	trace func(query string, args []any)
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
	if p.trace != nil {
		p.trace(query, args)
	}
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
	if p.trace != nil {
		p.trace(query, args)
	}
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
	if sqlitedb.IsNotADB(err) {
		if d := sqlitedb.DescribeNonDatabase(path); d != "" {
			return sessiondb.Wrap(sessiondb.EINVALID, err, "open %s: %s", path, d)
		}
	}
	if sqlitedb.IsCorrupt(err) {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "open %s: %s: the file is damaged (`sessiondb --db %s --read-only doctor` lists what SQLite's integrity check finds)", path, what, path)
	}
	if sqlitedb.IsCantOpen(err) {
		if d := sqlitedb.DescribeAccess(path, what != "read"); d != "" {
			return sessiondb.Wrap(sessiondb.EINVALID, err, "open %s: %s", path, d)
		}
	}
	return sqlitedb.Wrap(err, "open %s: %s", path, what)
}

// openReader opens path read-only with pragmas, creating and changing
// nothing (sqlitedb.OpenReader), and has SQLite read it at once so that a
// file that is not a database is named as such.
func openReader(ctx context.Context, path string, pragmas []string) (*sql.DB, error) {
	db, err := sqlitedb.OpenReader(sqlitedb.Config{Path: path, Pragmas: pragmas}, func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, "SELECT count(*) FROM sqlite_master")
		return err
	})
	if errors.Is(err, sqlitedb.ErrWALUnreadable) {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s read-only", path)
	}
	if err != nil {
		return nil, openErr(err, path, "read")
	}
	return db, nil
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

// fileConns is one SQLite file opened the way every store of this package
// but the history store (which has steps of its own between them) opens
// one: a reader pool that waits up to 5 s for locks, and, unless
// read-only, one writer connection (BEGIN IMMEDIATE within a time budget,
// group commit) on a file in WAL mode, foreign keys on everywhere.
type fileConns struct {
	path     string
	readOnly bool
	now      func() time.Time
	log      *slog.Logger

	db  *sql.DB
	rp  *readerPool
	wdb *sql.DB
	w   *sqlitedb.Writer

	closeOnce sync.Once
	closeErr  error
}

// connConfig says how to open a fileConns.
type connConfig struct {
	path        string
	readOnly    bool
	synchronous string // "NORMAL" or "FULL"
	budget      time.Duration
	now         func() time.Time
	log         *slog.Logger
}

// openFile opens cfg's file for a store (what names it in errors) and
// brings its schema up to date with migrate, closing the file when that
// fails.
func openFile(ctx context.Context, what string, cfg connConfig, migrate func(context.Context, *fileConns) error) (*fileConns, error) {
	f, err := openConns(ctx, cfg)
	if err != nil {
		return nil, sessiondb.Wrap("", err, "open %s", what)
	}
	if err := migrate(ctx, f); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// openConns opens cfg.path: a read-write open creates a missing file
// (folder 0700, file 0600) and, once SQLite has read it, tightens a looser
// one; a read-only open of a missing file is not_found.
func openConns(ctx context.Context, cfg connConfig) (*fileConns, error) {
	if err := sqlitedb.CheckPath(cfg.path); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open")
	}
	f := &fileConns{path: cfg.path, readOnly: cfg.readOnly, now: cfg.now, log: cfg.log}
	if f.now == nil {
		f.now = time.Now
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if cfg.readOnly {
		if _, err := os.Stat(cfg.path); err != nil {
			return nil, sessiondb.Wrap(sessiondb.ENOTFOUND, err, "open %s read-only", cfg.path)
		}
	} else {
		// An existing path is left alone here; its mode is tightened once
		// SQLite has read it as a database.
		if _, _, err := sqlitedb.CreateFile(cfg.path, 0o700, 0o600); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", cfg.path)
		}
	}
	common := []string{"PRAGMA foreign_keys=ON", "PRAGMA journal_size_limit=67108864"}
	readerPragmas := append([]string{"PRAGMA busy_timeout=5000"}, common...)
	if cfg.readOnly {
		db, err := openReader(ctx, cfg.path, readerPragmas)
		if err != nil {
			return nil, err
		}
		f.db, f.rp = db, newReaderPool(db)
		return f, nil
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: cfg.path, Pragmas: readerPragmas})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", cfg.path)
	}
	f.db, f.rp = db, newReaderPool(db)
	sync := cfg.synchronous
	if sync == "" {
		sync = "NORMAL"
	}
	// The writer's connection waits for locks too until the Writer sets
	// its own bounded wait: on a file another process is creating, even
	// these pragmas can meet a lock.
	wdb, err := sqlitedb.Open(sqlitedb.Config{Path: cfg.path, MaxConns: 1,
		Pragmas: append([]string{"PRAGMA busy_timeout=5000"}, append(common, "PRAGMA synchronous="+sync)...)})
	if err != nil {
		f.close()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open writer on %s", cfg.path)
	}
	f.wdb = wdb
	conn, err := wdb.Conn(ctx)
	if err != nil {
		f.close()
		return nil, openErr(err, cfg.path, "open writer connection")
	}
	budget := cfg.budget
	if budget <= 0 {
		budget = sqlitedb.DefaultWriteBudget
	}
	if err := enableWAL(ctx, conn, cfg.path, budget, f.now, f.log); err != nil {
		conn.Close()
		f.close()
		return nil, err
	}
	// SQLite has read the file as a database: only now may it lose the
	// access others had to it (never through a symbolic link).
	if _, err := sqlitedb.Tighten(cfg.path, 0o600); err != nil {
		f.log.Warn("database file permissions", "path", cfg.path, "err", err)
	}
	f.w = sqlitedb.NewWriter(conn)
	f.w.Budget = budget
	f.w.Now = f.now
	return f, nil
}

// write runs fn as one write transaction through the writer. A read-only
// open refuses with invalid; driver errors fn returns unwrapped are
// classified here, naming what.
func (f *fileConns) write(ctx context.Context, what string, fn func(tx *sqlitedb.Tx) error) error {
	if f.w == nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: %s was opened read-only", what, f.path)
	}
	if err := f.w.Do(ctx, fn); err != nil {
		return writeErr(err, what)
	}
	return nil
}

// read runs fn in one read transaction: every query it makes sees the
// same snapshot of the file.
func (f *fileConns) read(ctx context.Context, what string, fn func(q sqlitedb.Querier) error) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return sqlitedb.Wrap(err, "%s", what)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return writeErr(err, what)
	}
	return nil
}

// Close closes the file (close). Calling it again returns the first
// result.
func (f *fileConns) Close() error {
	f.closeOnce.Do(func() {
		f.closeErr = sessiondb.Wrap(sessiondb.EINTERNAL, f.close(), "close %s", f.path)
	})
	return f.closeErr
}

// close runs a PASSIVE checkpoint (never TRUNCATE: other processes may be
// reading) when writable and closes every connection.
func (f *fileConns) close() error {
	if f.w != nil {
		if _, err := f.db.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
			f.log.Warn("passive checkpoint at close", "path", f.path, "err", err)
		}
	}
	return closeConns(f.rp, f.w, f.wdb, f.db)
}

// closeConns closes a file's connections, the writer first; nil ones are
// skipped.
func closeConns(rp *readerPool, w *sqlitedb.Writer, wdb, db *sql.DB) error {
	var errs []error
	if rp != nil {
		rp.closeStmts()
	}
	if w != nil {
		errs = append(errs, w.Close())
	}
	if wdb != nil {
		errs = append(errs, wdb.Close())
	}
	if db != nil {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}
