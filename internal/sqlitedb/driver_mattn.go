//go:build sqlite_fts5

package sqlitedb

import (
	"database/sql/driver"
	"errors"

	"github.com/mattn/go-sqlite3"
)

// DriverName names the SQLite driver linked into this build: "modernc"
// (pure Go, the default) or "mattn" (cgo, built with -tags sqlite_fts5).
const DriverName = "mattn"

func newDriver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// openBusyParam turns off the wait mattn sets up while it opens a
// connection: its open runs pragmas that read the schema, under SQLite's own
// busy handler (1 ms and longer steps). With it a contended open fails at
// once and the connector waits with our steps instead (Config.BusyTimeout).
const openBusyParam = "_busy_timeout=0"

// errorCode returns SQLite's extended result code carried by err. The
// driver returns sqlite3.Error by value, never a pointer.
func errorCode(err error) (int, bool) {
	var e sqlite3.Error
	if errors.As(err, &e) {
		return int(e.ExtendedCode), true
	}
	return 0, false
}

// rollbackHook is the type of the function the driver's connections take
// as their rollback hook.
type rollbackHook = func()
