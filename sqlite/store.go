// Package sqlite implements the sessiondb services on SQLite files that
// other programs share: the history store (Open) on a Hermes Agent state.db
// at schema version 6, the control plane's central registry (OpenCentral)
// on a NanoClaw data/v2.db, and janebot's subagent store (OpenSubagents) on
// its state.sqlite. Each program opens what we write, and we open what it
// wrote.
//
// One Store owns one writer connection, through which every mutation runs
// (BEGIN IMMEDIATE inside a time budget, group commit), and a pool of
// reader connections. Queries are built from the columns the file actually
// has, so older files opened read-only and files of a newer Hermes work.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Options tune Open. The zero value opens read-write with synchronous=NORMAL,
// the default write budget, the wall clock and no logging.
type Options struct {
	// ReadOnly opens the file with mode=ro: no pragmas that write, no schema
	// work. Reads and search work; writes fail with code invalid.
	ReadOnly bool
	// Synchronous is "NORMAL" (default) or "FULL".
	Synchronous string
	// WriteBudget bounds the wait for the write lock; 0 means
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings (tightened permissions, WAL fallback, bad
	// tool_calls JSON); nil discards them.
	Logger *slog.Logger
	// Trigram adds (opt-in, IMP-10) a trigram full-text index that finds
	// CJK text without scanning every message; old rows are indexed in the
	// background. Needs SQLite 3.34+, in every program that writes the
	// file. Ignored for read-only opens and files of a newer Hermes.
	Trigram bool
	// SearchWindow is how many of a query's newest matches a search ranks
	// by bm25 (see windowStart): 0 means DefaultSearchWindow; negative
	// ranks every match, Hermes v6's order at any size, in time that grows
	// with the store.
	SearchWindow int
	// SearchWindowMessages is the size of the store up to which a search
	// ranks every match, as Hermes does; above it a search ranks the
	// matches among the newest SearchRecentMessages messages first,
	// through the recent index (recent.go), and lists the older ones
	// after, newest first. Where the recent index cannot serve, a search
	// ranks every match among the newest SearchWindowMessages ids besides
	// the SearchWindow newest matches. 0 means
	// DefaultSearchWindowMessages; negative means no window.
	SearchWindowMessages int
	// SearchRecentMessages is how many of the newest messages the recent
	// index holds, at most SearchWindowMessages: 0 means
	// DefaultSearchRecentMessages; negative means no recent index.
	SearchRecentMessages int
	// KeepSearchIndex lets a ReadOnly store keep the two structures that
	// reads, not writes, bring up to date: the recent search index and
	// the last-activity table. When a search or a listing by last
	// activity finds one behind, the store brings it up to date through a
	// write connection of its own, opened for that alone, where this
	// process may write the file (its owner's -wal and -shm, a writable
	// folder; see sqlitedb.MayWrite). Nothing else is written: no
	// migration, no other index, no change of mode. A writable store
	// always keeps them; a ReadOnly one without this uses each only while
	// it is current.
	KeepSearchIndex bool
	// NoAdditions adds nothing of sessiondb's own to the file (README:
	// "What sessiondb adds to Hermes' file"): no read indexes, no
	// last-activity table, no recent search index, no state_meta key; a
	// file of schema 5 or older is still migrated to 6, as Hermes would.
	// Every read and write works; listing by last activity, a long
	// session's last page and a large store's search are slower. With
	// Trigram it is refused.
	NoAdditions bool
}

// checkpointEvery is how many committed writes pass between PASSIVE
// checkpoints. SQLite's own auto-checkpoint also runs, but on the
// committing connection; ours runs off the hot path on a reader.
const checkpointEvery = 50

// Store is the history store on one SQLite file. It is safe for concurrent
// use. Close it to release the file.
type Store struct {
	path     string
	readOnly bool
	now      func() time.Time
	log      *slog.Logger

	db  *sql.DB          // reader pool
	wdb *sql.DB          // the writer's one-connection pool; nil when read-only
	w   *sqlitedb.Writer // nil when read-only

	si *schemaInfo
	q  queries // SQL text built from the columns the file has

	rp *readerPool // s.db with its prepared statements

	writes    atomic.Int64 // committed writes, for checkpoint pacing
	ckptRuns  atomic.Int64 // background checkpoints that succeeded
	ckptBusy  atomic.Bool
	ckptWG    sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// imports remembers, for ImportSession, children whose parent had
	// not been imported yet. Exports list the newest sessions first, so a
	// child usually arrives before its parent.
	imports sessiondb.ImportLinks

	retentionMu      sync.Mutex
	lastRetentionRun time.Time

	changes *changes // wakes WaitForMessages

	searchWindow         int // Options.SearchWindow, the default filled in
	searchWindowMessages int // Options.SearchWindowMessages, the default filled in
	searchRecentMessages int // Options.SearchRecentMessages, the default filled in

	trigramReady atomic.Bool // the trigram index exists and is backfilled

	recentOK    bool       // the file and the linked SQLite can keep the recent index (recent.go)
	recentBatch int64      // messages a sync transaction adds or deletes: recentBatch
	recentMu    sync.Mutex // one sync of the recent index at a time in this process
	keepRecent  bool       // Options.KeepSearchIndex
	noAdditions bool       // Options.NoAdditions

	// The write budget and durability, for the recent index's own writer
	// of a read-only store (KeepSearchIndex).
	budget       time.Duration
	syncMode     string
	stopBackfill context.CancelFunc
	bgWG         sync.WaitGroup
}

var (
	_ sessiondb.Store            = (*Store)(nil)
	_ sessiondb.SQLiteMaintainer = (*Store)(nil)
)

// Open opens the state.db at path, creating it (folder 0700, file 0600) or
// migrating it to schema v6 as needed. Opening a file that needs no change
// takes no write lock. A file of a newer Hermes (version > 6) is used as it
// is, with no schema write at all. The linked SQLite must have FTS5.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	if err := sqlitedb.CheckPath(path); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open history store")
	}
	syncMode := strings.ToUpper(o.Synchronous)
	switch syncMode {
	case "":
		syncMode = "NORMAL"
	case "NORMAL", "FULL":
	default:
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open %s: synchronous must be NORMAL or FULL, not %q", path, o.Synchronous)
	}
	s := &Store{path: path, readOnly: o.ReadOnly, log: o.Logger, changes: newChanges(), recentBatch: recentBatch, keepRecent: o.KeepSearchIndex, noAdditions: o.NoAdditions, syncMode: syncMode}
	s.budget = o.WriteBudget
	if s.budget <= 0 {
		s.budget = sqlitedb.DefaultWriteBudget
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.searchWindow = o.SearchWindow
	if s.searchWindow == 0 {
		s.searchWindow = DefaultSearchWindow
	}
	s.searchWindowMessages = o.SearchWindowMessages
	if s.searchWindowMessages == 0 {
		s.searchWindowMessages = DefaultSearchWindowMessages
	}
	s.searchRecentMessages = o.SearchRecentMessages
	if s.searchRecentMessages == 0 {
		s.searchRecentMessages = DefaultSearchRecentMessages
	}
	s.now = time.Now
	if o.Now != nil {
		s.now = o.Now
	}

	fresh := false
	readerPragmas := append([]string{"PRAGMA busy_timeout=5000"}, commonPragmas()...)
	var db *sql.DB
	var err error
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, sessiondb.Wrap(sessiondb.ENOTFOUND, err, "open %s read-only", path)
		}
		// Reading creates and changes nothing: not the schema of an empty
		// file, not the -wal/-shm files SQLite's mode=ro would leave behind
		// owned by whoever reads.
		if db, err = openReader(ctx, path, readerPragmas); err != nil {
			return nil, err
		}
	} else {
		// CreateFile leaves an existing path alone; its mode is tightened
		// below, once SQLite has read it as a database.
		if _, _, err := sqlitedb.CreateFile(path, 0o700, 0o600); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "create %s", path)
		}
		// Not CreateFile's "created": an existing empty file is fresh too.
		if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
			fresh = true
		}
		readerPragmas = append(readerPragmas, "PRAGMA synchronous="+syncMode)
		if db, err = sqlitedb.Open(sqlitedb.Config{Path: path, Pragmas: readerPragmas}); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", path)
		}
	}
	s.db = db
	s.rp = newReaderPool(db)
	fail := func(err error) (*Store, error) {
		s.closeAll()
		return nil, err
	}
	ok, err := sqlitedb.HasFTS5(ctx, db)
	if err != nil {
		return fail(openErr(err, path, "probe SQLite"))
	}
	if !ok {
		return fail(sessiondb.Errorf(sessiondb.EINTERNAL, "open %s: the linked SQLite lacks FTS5, which the history store needs (driver %s)", path, sqlitedb.DriverName))
	}
	si, err := s.inspectUsable(ctx, o.ReadOnly)
	if err != nil {
		return fail(err)
	}
	if !o.ReadOnly && si.fresh() && len(si.tables) > 0 {
		// Some other program's database: adding the history tables to it
		// (a mistyped --db, a planted link) is not what anyone asked for.
		return fail(sessiondb.Errorf(sessiondb.EINVALID, "open %s: it is a SQLite database of something else (tables %s), not a history store; sessiondb will not add one to it",
			path, strings.Join(si.tableNames(5), ", ")))
	}

	if !o.ReadOnly {
		// SQLite has read the file as a database: only now may it lose the
		// access others had to it (never through a symbolic link).
		if changed, err := sqlitedb.Tighten(path, 0o600); err != nil {
			s.log.Warn("database file permissions", "path", path, "err", err)
		} else if changed {
			s.log.Info("database file made private (0600)", "path", path)
		}
		budget := s.budget
		wdb, err := s.openWriterDB()
		if err != nil {
			return fail(sessiondb.Wrap(sessiondb.EINTERNAL, err, "open writer on %s", path))
		}
		s.wdb = wdb
		conn, err := wdb.Conn(ctx)
		if err != nil {
			return fail(openErr(err, path, "open writer connection"))
		}
		if fresh {
			// Must precede the first table; lets a retention policy reclaim
			// space in small steps instead of a whole-file VACUUM (IMP-13).
			if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum=INCREMENTAL"); err != nil {
				conn.Close()
				return fail(openErr(err, path, "set auto_vacuum"))
			}
		}
		if err := enableWAL(ctx, conn, s.path, budget, s.now, s.log); err != nil {
			conn.Close()
			return fail(err)
		}
		s.w = sqlitedb.NewWriter(conn)
		s.w.Budget = budget
		s.w.Now = s.now
		s.w.OnCommit = s.onCommit
		// Several processes (Hermes' and ours) append to one state.db:
		// waiting for the write lock in 1 ms steps lets one of them commit
		// back to back instead of handing the lock over at every commit.
		s.w.Yield = true
		if si.needsMigration() {
			// Open-time migrations wait for the lock in the same budget as
			// any write (IMP-8).
			if err := s.w.Do(ctx, func(tx *sqlitedb.Tx) error { return migrate(tx, !o.NoAdditions) }); err != nil {
				return fail(sqlitedb.Wrap(err, "migrate %s to schema v6", path))
			}
			if si, err = s.inspectUsable(ctx, false); err != nil {
				return fail(err)
			}
		} else if si.needsReadIndexes() && !o.NoAdditions {
			// A v6 file Hermes (or an older sessiondb) wrote. The indexes
			// only speed reads up: a writer holding the lock longer than
			// the budget (or a full disk) leaves them for the next open.
			if err := s.w.Do(ctx, func(tx *sqlitedb.Tx) error { return addReadIndexes(tx) }); err != nil {
				s.log.Warn("could not add the read indexes; reads of long sessions and deep listings stay slower until a later open adds them", "path", path, "err", err)
			} else if si, err = s.inspectUsable(ctx, false); err != nil {
				return fail(err)
			}
		}
	}
	s.si = si
	s.q = buildQueries(si)
	if v, err := sqlitedb.Version(ctx, s.db); err == nil {
		s.recentOK = si.recentSupported(v) && !o.NoAdditions
	}
	if err := s.openTrigram(ctx, o); err != nil {
		return fail(err)
	}
	return s, nil
}

// commonPragmas are every connection's: foreign keys on (v6 has no ON
// DELETE CASCADE, so the foreign key is what catches an append to an
// unknown session) and a bounded WAL.
func commonPragmas() []string {
	return []string{"PRAGMA foreign_keys=ON", "PRAGMA journal_size_limit=67108864"}
}

// openWriterDB opens the one-connection pool a writer of the file runs
// on: the store's own, or the recent index's of a read-only store. The
// busy handler is in place before the connection's first statement: a
// process that opens a new file a moment after another meets that one's
// schema transaction (or its switch to WAL) at auto_vacuum and
// journal_mode, and must wait for it rather than fail with SQLITE_BUSY.
// The Writer sets its own wait per write.
func (s *Store) openWriterDB() (*sql.DB, error) {
	return sqlitedb.Open(sqlitedb.Config{Path: s.path, MaxConns: 1, BusyTimeout: s.budget,
		Pragmas: append(commonPragmas(), "PRAGMA synchronous="+s.syncMode)})
}

// openTrigram creates the opt-in trigram index when asked, and starts its
// backfill, or finds out whether an existing one can serve searches.
func (s *Store) openTrigram(ctx context.Context, o Options) error {
	if o.Trigram && o.NoAdditions {
		return sessiondb.Errorf(sessiondb.EINVALID, "open %s: the trigram index (Options.Trigram) is an addition of sessiondb's, and Options.NoAdditions asks for none: choose one", s.path)
	}
	if o.Trigram && !o.ReadOnly && !s.si.newer() && !s.si.tables[trigramTable] {
		v, err := sqlitedb.Version(ctx, s.db)
		if err != nil {
			return openErr(err, s.path, "read SQLite version")
		}
		if !versionAtLeast(v, 3, 34) {
			return sessiondb.Errorf(sessiondb.EINVALID, "open %s: the trigram index needs SQLite 3.34 or later, this is %s", s.path, v)
		}
		if err := s.changeSchema(ctx, createTrigram, "create the trigram index in %s"); err != nil {
			return err
		}
	}
	if !s.si.tables[trigramTable] {
		return nil
	}
	if !o.ReadOnly && !s.si.newer() && !strings.Contains(s.si.trigramView, trigramNULFree) {
		if err := s.changeSchema(ctx, upgradeTrigram, "rebuild the trigram index of %s without NUL bytes"); err != nil {
			return err
		}
	}
	done, hw, err := s.trigramProgress(ctx)
	if err != nil {
		s.log.Warn("trigram index unusable", "path", s.path, "err", err)
		return nil
	}
	if done >= hw {
		s.trigramReady.Store(true)
	} else if s.w != nil {
		s.backfillInBackground()
	}
	return nil
}

// changeSchema runs change in one write transaction, then inspects the
// schema again. what, with the path for its %s, names the change in its
// error.
func (s *Store) changeSchema(ctx context.Context, change func(*sqlitedb.Tx) error, what string) error {
	if err := s.w.Do(ctx, change); err != nil {
		return sqlitedb.Wrap(err, what, s.path)
	}
	si, err := inspect(ctx, s.db)
	if err != nil {
		return openErr(err, s.path, "inspect schema")
	}
	s.si = si
	return nil
}

// inspectUsable inspects the file through the reader pool and checks that
// it can be worked on as it is.
func (s *Store) inspectUsable(ctx context.Context, readOnly bool) (*schemaInfo, error) {
	si, err := inspect(ctx, s.db)
	if err != nil {
		return nil, openErr(err, s.path, "inspect schema")
	}
	if readOnly && si.fresh() {
		if fi, err := os.Stat(s.path); err == nil && fi.Size() == 0 {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "open %s: the file is empty (0 bytes), not a history store yet; reading it creates nothing (`sessiondb import` or `sessiondb quickstart` makes a store)", s.path)
		}
	}
	if err := si.checkUsable(readOnly); err != nil {
		return nil, sessiondb.Wrap("", err, "open %s", s.path)
	}
	return si, nil
}

// onCommit wakes the waiters for new messages, and paces PASSIVE
// checkpoints: every checkpointEvery writes one runs
// on a reader connection in its own goroutine, at most one at a time, so
// the writer never waits for it. Errors are only logged.
func (s *Store) onCommit(n int) {
	s.changes.signal()
	total := s.writes.Add(int64(n))
	if total/checkpointEvery == (total-int64(n))/checkpointEvery {
		return
	}
	if !s.ckptBusy.CompareAndSwap(false, true) {
		return
	}
	s.ckptWG.Add(1)
	go func() {
		defer s.ckptWG.Done()
		defer s.ckptBusy.Store(false)
		if err := s.checkpoint(context.Background()); err != nil {
			s.log.Warn("passive checkpoint", "path", s.path, "err", err)
			return
		}
		s.ckptRuns.Add(1)
	}()
}

func (s *Store) checkpoint(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	return err
}

// Close waits for a running checkpoint, runs one PASSIVE checkpoint (never
// TRUNCATE: other processes may be reading) and closes every connection.
// Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopBackfill != nil {
			s.stopBackfill()
		}
		s.bgWG.Wait()
		s.ckptWG.Wait()
		s.changes.close()
		if !s.readOnly && s.db != nil {
			if err := s.checkpoint(context.Background()); err != nil {
				s.log.Warn("passive checkpoint at close", "path", s.path, "err", err)
			}
		}
		s.closeErr = sessiondb.Wrap(sessiondb.EINTERNAL, s.closeAll(), "close %s", s.path)
	})
	return s.closeErr
}

func (s *Store) closeAll() error { return closeConns(s.rp, s.w, s.wdb, s.db) }

// Path returns the database file path given to Open.
func (s *Store) Path() string { return s.path }

// SQLiteVersion returns the version of the linked SQLite library.
func (s *Store) SQLiteVersion(ctx context.Context) (string, error) {
	v, err := sqlitedb.Version(ctx, s.db)
	if err != nil {
		return "", s.readErr(err, "read SQLite version")
	}
	return v, nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns its lines: a
// single "ok" when the file is sound (see integrityLines for a check that
// damage stops).
func (s *Store) IntegrityCheck(ctx context.Context) ([]string, error) {
	out, err := integrityLines(ctx, s.db)
	if err != nil {
		return nil, s.readErr(err, "integrity check")
	}
	return out, nil
}

// FTSIntegrityCheck asks FTS5 to verify messages_fts against the messages
// table, and the recent index (recent.go), when there is one, in itself; a
// mismatch is an internal error.
func (s *Store) FTSIntegrityCheck(ctx context.Context) error {
	if !s.si.hasFTS() {
		return s.noFTS()
	}
	check := func(ctx context.Context, exec func(q string) error) error {
		if err := exec("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')"); err != nil {
			return err
		}
		if recent, err := hasTable(ctx, readers{s}, recentTable); err != nil || !recent {
			return err
		}
		return exec("INSERT INTO " + recentTable + "(" + recentTable + ", rank) VALUES('integrity-check', 0)")
	}
	if s.readOnly {
		// FTS5 checks inside a write statement, which a read-only
		// connection refuses although it changes nothing. The file is a
		// store SQLite has read, so one writable connection for this one
		// statement does no harm where this process may make the -wal and
		// -shm files a writer needs (see sqlitedb.MayWrite).
		if err := s.CanCheckFTS(); err != nil {
			return err
		}
		db, err := sqlitedb.Open(sqlitedb.Config{Path: s.path, MaxConns: 1, Pragmas: []string{"PRAGMA busy_timeout=5000"}})
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "full-text integrity check")
		}
		defer db.Close()
		err = check(ctx, func(q string) error { _, err := db.ExecContext(ctx, q); return err })
		if err != nil {
			return s.readErr(err, "full-text integrity check")
		}
		return nil
	}
	return s.write(ctx, "full-text integrity check", func(tx *sqlitedb.Tx) error {
		return check(tx.Context(), func(q string) error { _, err := tx.Exec(q); return err })
	})
}

// CanCheckFTS reports whether FTSIntegrityCheck can run here (see
// sessiondb.SQLiteMaintainer).
func (s *Store) CanCheckFTS() error {
	if s.readOnly && s.si.hasFTS() && !sqlitedb.MayWrite(s.path) {
		return sessiondb.Errorf(sessiondb.EINVALID, "FTS5 runs its check as a write, and %s cannot be written here (a read-only folder, or another user's store)", s.path)
	}
	return nil
}

// RebuildFTS rebuilds the full-text index from the messages: messages_fts
// of a file of schema 6 or older (migrated to 6 by the writable open), and
// a newer Hermes' full-text tables as Hermes itself rebuilds them
// (rebuildHermesFTS), each kept as it is defined.
func (s *Store) RebuildFTS(ctx context.Context) error { return s.ftsCommand(ctx, "rebuild") }

// OptimizeFTS merges the full-text tables' segments into one each, making
// searches faster after many appends, as Hermes' optimize_fts does.
func (s *Store) OptimizeFTS(ctx context.Context) error { return s.ftsCommand(ctx, "optimize") }

// CanRebuildFTS reports whether RebuildFTS and OptimizeFTS would run: nil,
// or the invalid error they would return, which says what works instead.
func (s *Store) CanRebuildFTS() error {
	switch {
	case s.si.newer() && !s.si.hasFTS():
		// Hermes creates a missing messages_fts (and fills it) when it
		// opens the file; we must not create one in a layout it owns.
		return sessiondb.Errorf(sessiondb.EINVALID, "%s has no full-text index (messages_fts), and its schema version %d belongs to a newer Hermes, which owns its full-text tables and builds a missing index the next time it opens the file with FTS5 at hand: run Hermes once; until then search here scans the messages (slower)", s.path, s.si.version)
	case !s.si.hasFTS():
		// Only a read-only open leaves a v6 or older file without the
		// index: a writable one migrates the file and builds it.
		return sessiondb.Errorf(sessiondb.EINVALID, "%s has no full-text index (messages_fts) yet: open it writable (without --read-only) once and sessiondb builds it", s.path)
	case s.readOnly && !sqlitedb.MayWrite(s.path):
		// A read-only handle (every reading command has one) says whether
		// a writable open, such as doctor --rebuild-fts, could do it.
		return sessiondb.Errorf(sessiondb.EINVALID, "%s cannot be written here (a read-only folder, or another user's store): rebuilding the full-text index needs a writable open by its owner", s.path)
	}
	return nil
}

// noFTS is the error of a check on a file without messages_fts: what
// CanRebuildFTS says about it.
func (s *Store) noFTS() error {
	if err := s.CanRebuildFTS(); err != nil {
		return err
	}
	return sessiondb.Errorf(sessiondb.EINVALID, "%s has no full-text index (messages_fts)", s.path)
}

func (s *Store) ftsCommand(ctx context.Context, cmd string) error {
	if err := s.CanRebuildFTS(); err != nil {
		return sessiondb.Wrap("", err, "%s full-text index", cmd)
	}
	return s.write(ctx, cmd+" full-text index", func(tx *sqlitedb.Tx) error {
		si, err := inspect(tx.Context(), tx)
		if err != nil {
			return err
		}
		if si.newer() {
			if cmd == "rebuild" {
				return rebuildHermesFTS(tx)
			}
			for _, t := range hermesFTSTables {
				if si.tables[t] {
					if _, err := tx.Exec("INSERT INTO " + quoteIdent(t) + "(" + quoteIdent(t) + ") VALUES('optimize')"); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if _, err := tx.Exec(fmt.Sprintf("INSERT INTO messages_fts(messages_fts) VALUES('%s')", cmd)); err != nil {
			return err
		}
		if cmd != "rebuild" {
			return nil
		}
		// A rebuild answers a damaged index: the recent one is dropped
		// too, and the next search makes it again from the messages.
		return tx.ExecScript(dropRecentSchema)
	})
}

// write runs fn as one write transaction through the writer (group commit,
// time budget). A read-only store refuses with invalid. Driver errors fn
// returns unwrapped are classified here.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sqlitedb.Tx) error) error {
	if s.w == nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s: store opened read-only", what)
	}
	err := s.w.Do(ctx, fn)
	if err == nil {
		return nil
	}
	return s.writeErr(err, what)
}

// writeErr classifies a write failure (the package's writeErr).
func (s *Store) writeErr(err error, what string) error {
	if sqlitedb.IsCorrupt(err) && s.si != nil && s.si.newer() && s.si.hasTrigramOfHermes() {
		// Deletes make a newer Hermes' trigram index exact whichever
		// SQLite wrote it (keepHermesTrigram); what is left malformed is
		// damage, which a rebuild cures.
		return sqlitedb.Wrap(err, "%s: %s holds a newer Hermes' full-text indexes, and SQLite calls one malformed; `sessiondb doctor` tells damage from version skew, and `sessiondb doctor --rebuild-fts` (or Hermes' own repair) rebuilds them from the messages", what, s.path)
	}
	return writeErr(err, what)
}

// readErr classifies a read failure with sqlitedb.Code.
func (s *Store) readErr(err error, format string, args ...any) error {
	return sqlitedb.Wrap(err, format, args...)
}

// readers is the reader pool behind the prepared statement cache, as a
// sqlitedb.Querier.
type readers struct{ s *Store }

func (r readers) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return r.s.rp.QueryContext(ctx, query, args...)
}

func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.rp.QueryContext(ctx, query, args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.rp.QueryRowContext(ctx, query, args...)
}

func (s *Store) epochNow() float64 { return sessiondb.EpochSeconds(s.now()) }
