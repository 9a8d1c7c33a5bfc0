// Package store is the command line's one way to a history store: Open
// hands the target (a state.db path or a postgres:// URL) to the library's
// opener, open.History, which picks the backend. It is the only package
// under cmd/sessiondb that reaches a backend, so a new backend changes
// this package and no command.
package store

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/open"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Options are how a store is opened: the library opener's (open.Options).
type Options = open.Options

// Open opens the history store at target: a state.db file (created when
// missing, unless ReadOnly or MustExist) or a postgres:// URL. A SQLite
// store is also a sessiondb.SQLiteMaintainer, which doctor and bench ask
// for with a type assertion, as they would of any backend.
func Open(ctx context.Context, target string, o Options) (sessiondb.Store, error) {
	return open.History(ctx, target, o)
}

// IsDamaged reports an error of Open that says the SQLite database is
// damaged (not a file that is no database at all): doctor then reads it
// with CheckFile.
func IsDamaged(err error) bool { return sqlitedb.IsCorrupt(err) && !sqlitedb.IsNotADB(err) }

// CheckFile runs SQLite's integrity_check on the file at target without
// opening it as a store (sqlite.CheckFile): what doctor reports on a file
// Open refuses as damaged.
func CheckFile(ctx context.Context, target string) ([]string, error) {
	return sqlite.CheckFile(ctx, target)
}

// SQLiteVersion returns the linked SQLite library's version, "" if it
// cannot be read.
func SQLiteVersion(ctx context.Context) string { return sqlite.LibraryVersion(ctx) }

// IsURL reports whether target names a PostgreSQL server, not a file.
func IsURL(target string) bool { return open.IsURL(target) }

// ImportJobs is how many import batches are written at once by default to
// the store at target: two on PostgreSQL, whose server inserts each
// batch's rows on a core of its own, one on a SQLite file, which takes one
// writer at a time. import and bench's import phase both use it.
func ImportJobs(target string) int {
	if IsURL(target) {
		return 2
	}
	return 1
}

// Backend names the backend Open picks for target: "sqlite" or "postgres".
func Backend(target string) string { return open.Backend(target) }

// Driver names the SQLite driver linked into this binary, for reports
// (doctor, bench).
const Driver = sqlitedb.DriverName

// Sub returns the location of a scratch store called name beside target:
// for a folder target, the file name.db in it; for a postgres:// URL, the
// same server with the schema name (bench makes one store per phase).
func Sub(target, name string) (string, error) {
	if IsURL(target) {
		return postgres.WithSchema(target, name)
	}
	return filepath.Join(target, name+".db"), nil
}

// Size returns the bytes a store takes: a SQLite file with its -wal, -shm
// and -journal companions (statted by path only, never opened, which could
// drop another connection's locks), or the tables of a PostgreSQL schema.
func Size(ctx context.Context, target string) (int64, error) {
	if IsURL(target) {
		return postgres.SchemaSize(ctx, target)
	}
	var n int64
	for _, suffix := range sqliteFiles {
		if fi, err := os.Stat(target + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n, nil
}

// Remove deletes a scratch store: a SQLite file and its companions, or
// the schema a postgres:// URL names (never a URL without one).
func Remove(ctx context.Context, target string) error {
	if IsURL(target) {
		return postgres.DropSchema(ctx, target)
	}
	for _, suffix := range sqliteFiles {
		os.Remove(target + suffix)
	}
	return nil
}

// sqliteFiles are the suffixes of a SQLite store's files.
var sqliteFiles = []string{"", "-wal", "-shm", "-journal"}
