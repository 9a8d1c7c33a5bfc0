// Package sqlitedb is the SQLite machinery shared by the history store and
// the mailbox files: opening files with the right modes and pragmas through
// either driver, the one classification of errors into sessiondb codes
// (Code, Wrap), the one row iteration (Each), and write transactions that
// take SQLite's write lock with BEGIN IMMEDIATE inside a time budget and
// share commits (Writer).
package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Config says how to open one SQLite file.
type Config struct {
	// Path is the database file. It must not be empty or name a directory.
	Path string
	// ReadOnly opens with mode=ro: SQLite refuses every write.
	ReadOnly bool
	// Immutable (with ReadOnly) opens with immutable=1: SQLite reads the
	// file without locks and without its -wal and -shm files, creating
	// none. Only for a file nobody writes meanwhile; OpenReader decides.
	Immutable bool
	// Pragmas run, in order, on every new connection, e.g.
	// "PRAGMA foreign_keys=ON". They are how a pool's connections all get
	// the same settings whatever the driver.
	Pragmas []string
	// MaxConns caps the pool; 0 leaves it unlimited. A writer uses 1.
	MaxConns int
	// BusyTimeout, when positive, is how long a statement waits for a lock
	// another connection holds before it fails with SQLITE_BUSY, polled by
	// our busy handler in sub-millisecond steps (see busy.go) instead of
	// SQLite's 1-to-100 ms ones. It is installed before Pragmas run, so
	// they wait too; a "PRAGMA busy_timeout" among them would put SQLite's
	// own handler back. Negative means never wait: SQLITE_BUSY at once, for
	// reads that have a fallback. Zero leaves the driver's default (mattn
	// waits 5 s with SQLite's handler, modernc does not wait).
	BusyTimeout time.Duration
}

// URI returns the SQLite URI for path, percent-escaping every character that
// would otherwise be read as URI syntax ('?', '#', '%'), so a hostile file
// name can never smuggle in URI parameters.
func URI(path string, readOnly, immutable bool) string {
	u := url.URL{Scheme: "file", Path: path, OmitHost: true}
	if !filepath.IsAbs(path) {
		// Relative URIs keep the path relative: file:rel/path.
		u = url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath()}
	}
	s := u.String()
	if readOnly {
		s += "?mode=ro"
		if immutable {
			s += "&immutable=1"
		}
	}
	return s
}

// Open opens a connection pool on c.Path. It does not create the file (see
// CreateFile) unless SQLite does so itself for a read-write open.
func Open(c Config) (*sql.DB, error) {
	if err := CheckPath(c.Path); err != nil {
		return nil, err
	}
	dsn := URI(c.Path, c.ReadOnly, c.Immutable)
	if c.BusyTimeout != 0 && openBusyParam != "" {
		sep := "?"
		if c.ReadOnly {
			sep = "&"
		}
		dsn += sep + openBusyParam
	}
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: dsn, pragmas: c.Pragmas, busy: c.BusyTimeout})
	if c.MaxConns > 0 {
		db.SetMaxOpenConns(c.MaxConns)
		db.SetMaxIdleConns(c.MaxConns)
	}
	// Connections are cheap to keep and costly to reopen (schema parse,
	// pragmas); keep idle ones for the pool's life.
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// CheckPath rejects paths SQLite would misread: empty, NUL bytes, or an
// existing directory; and a database whose -wal, -shm or -journal is a
// link or not a regular file.
func CheckPath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("database path is empty")
	case strings.ContainsRune(path, 0):
		return fmt.Errorf("database path %q contains a NUL byte", path)
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return fmt.Errorf("database path %q must be a file path, not a SQLite URI", path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("database path %q is a directory", path)
	}
	return checkSidecars(path)
}

// sidecars are the files SQLite creates beside a database: the WAL, its
// shared-memory index and the rollback journal.
var sidecars = []string{"-wal", "-shm", "-journal"}

// checkSidecars refuses a database whose -wal, -shm or -journal name holds
// a link or anything but a regular file. SQLite opens them with O_NOFOLLOW
// and would fail with a bare "unable to open database file"; a link planted
// there (to make a write land in another file) is named instead.
func checkSidecars(path string) error {
	for _, suffix := range sidecars {
		fi, err := os.Lstat(path + suffix)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			return sessiondb.Errorf(sessiondb.EINVALID, "%s is a symbolic link, which SQLite will not follow: refused (remove it if nothing else holds the database open)", path+suffix)
		case !fi.Mode().IsRegular():
			return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file (%s): refused", path+suffix, fi.Mode().Type())
		}
	}
	return nil
}

// CreateFile makes sure path exists before SQLite opens it: missing parent
// folders are created with dirMode, a missing file is created empty with
// fileMode (SQLite copies the database file's mode to its -wal, -shm and
// -journal files). It reports whether it created the file. An existing
// path is left exactly as it is, whatever it is (a symbolic link is not
// followed, a file not opened): until SQLite has read it as a database,
// nothing says it is one, and Tighten is for after that. warn is always nil;
// it stays for callers that log it.
func CreateFile(path string, dirMode, fileMode fs.FileMode) (created bool, warn, err error) {
	if err := CheckPath(path); err != nil {
		return false, nil, err
	}
	dir := filepath.Dir(path)
	if _, statErr := os.Stat(dir); errors.Is(statErr, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return false, nil, err
		}
		// MkdirAll's mode is filtered by the umask; say exactly what we mean.
		_ = os.Chmod(dir, dirMode)
	}
	// O_EXCL never follows a link: a planted one makes this fail as an
	// existing path.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	switch {
	case err == nil:
		// The umask may have masked bits we asked for; modes here only ever
		// remove access, so set the exact mode, on the file just made.
		err := f.Chmod(fileMode)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return true, nil, err
	case errors.Is(err, fs.ErrExist):
		fi, statErr := os.Stat(path)
		if statErr == nil && fi.IsDir() {
			return false, nil, fmt.Errorf("database path %q is a directory", path)
		}
		if errors.Is(statErr, fs.ErrNotExist) {
			// A link to nothing: SQLite would create the file it points
			// to, with the umask's mode (0644), where a link someone
			// planted says.
			target, _ := os.Readlink(path)
			return false, nil, fmt.Errorf("database path %q is a symbolic link to %q, which does not exist: create the database there, or remove the link", path, target)
		}
		return false, nil, nil
	default:
		return false, nil, err
	}
}

// ErrWALUnreadable is the error of a read-only open that cannot read a file's
// write-ahead log: see OpenReader.
var ErrWALUnreadable = errors.New("its write-ahead log holds commits not yet in the database file, and reading them needs the -shm file SQLite shares between connections, which this process may not create or open here (a read-only folder, or another user's store); open the store once with a command that writes, as its owner where it is writable, to move those commits into the file")

// OpenReader opens the database at c.Path for reading only (c.ReadOnly is
// implied) without creating or changing any file, which SQLite's mode=ro
// alone does not promise: on a file in WAL mode it creates the -wal and
// -shm files, owned by whoever reads, and leaves them behind.
//
// When this process may create those files harmlessly (see
// mayCreateBeside), or both already exist, it opens with mode=ro and
// SQLite's normal locking. Otherwise, or if SQLite then cannot open them
// (a read-only file system, another user's -shm), a file whose WAL holds
// nothing is opened immutable=1, which reads the database file alone and
// creates nothing; one whose WAL holds commits fails with
// ErrWALUnreadable, since reading it without them would show an old state.
// probe runs once on the pool so that SQLite opens the file before
// OpenReader returns; its error, when not about the WAL's files, is
// returned as it is.
func OpenReader(c Config, probe func(*sql.DB) error) (*sql.DB, error) {
	fi, err := os.Stat(c.Path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("database path %q is a directory", c.Path)
	}
	c.ReadOnly = true
	walFi, walErr := os.Stat(c.Path + "-wal")
	_, shmErr := os.Stat(c.Path + "-shm")
	walHolds := walErr == nil && walFi.Size() > 0
	c.Immutable = !mayCreateBeside(c.Path, fi) && (walErr != nil || shmErr != nil)
	if c.Immutable && walHolds {
		return nil, ErrWALUnreadable
	}
	if !c.Immutable && walErr != nil && shmErr != nil {
		// No connection has the file open (it would hold -wal and -shm),
		// so reading it immutable first makes sure it is a database before
		// SQLite's mode=ro creates those two beside it: a damaged or
		// foreign file gets no companions. It is read again with locks,
		// since a writer may start at any time.
		ic := c
		ic.Immutable = true
		idb, err := Open(ic)
		if err != nil {
			return nil, err
		}
		err = probe(idb)
		idb.Close()
		if err != nil {
			return nil, err
		}
	}
	db, err := Open(c)
	if err != nil {
		return nil, err
	}
	err = probe(db)
	if err == nil || c.Immutable || !primaryIs(err, codeCantOpen, codeReadOnly, codeIOErr) {
		if err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}
	db.Close()
	if walFi, walErr := os.Stat(c.Path + "-wal"); walErr == nil && walFi.Size() > 0 {
		return nil, fmt.Errorf("%w (%v)", ErrWALUnreadable, err)
	}
	c.Immutable = true
	if db, err = Open(c); err != nil {
		return nil, err
	}
	if err := probe(db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// connector opens driver connections and runs the configured pragmas on
// each, so every connection of a pool has the same settings with either
// driver (their DSN pragma syntaxes differ; plain SQL does not).
type connector struct {
	drv     driver.Driver
	dsn     string
	pragmas []string
	busy    time.Duration
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	// A driver that reads the file while opening (mattn sets pragmas that
	// load the schema) fails at once when another connection is committing
	// (openBusyParam): wait as the busy handler would, then open again.
	for n := 0; err != nil && c.busy > 0 && IsBusy(err); n++ {
		pause, ok := busyPause(n, c.busy)
		if !ok {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		conn, err = c.drv.Open(c.dsn)
	}
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite driver connection cannot execute statements directly")
	}
	if c.busy > 0 {
		if err := installBusyHandler(conn, newBusyWait(c.busy, false)); err != nil {
			conn.Close()
			return nil, err
		}
	}
	stop := interruptWhenDone(ctx, conn)
	for _, p := range c.pragmas {
		if _, err := ex.ExecContext(ctx, p, nil); err != nil {
			stop()
			conn.Close()
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	stop()
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return c.drv }

// Version returns the linked SQLite library's version, e.g. "3.51.0".
func Version(ctx context.Context, db *sql.DB) (string, error) {
	var v string
	err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return v, err
}

// LibraryVersion returns the linked SQLite library's version, asked of an
// in-memory database, "" if it cannot be read.
func LibraryVersion(ctx context.Context) string {
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: ":memory:"})
	defer db.Close()
	v, _ := Version(ctx, db)
	return v
}

// HasFTS5 reports whether the linked SQLite was compiled with FTS5.
func HasFTS5(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&n)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}
