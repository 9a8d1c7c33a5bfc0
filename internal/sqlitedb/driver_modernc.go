//go:build !sqlite_fts5

package sqlitedb

import (
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// DriverName names the SQLite driver linked into this build: "modernc"
// (pure Go, the default) or "mattn" (cgo, built with -tags sqlite_fts5).
const DriverName = "modernc"

func newDriver() driver.Driver { return &sqlite.Driver{} }

// openBusyParam is empty: modernc's open reads nothing from the file unless
// the DSN asks for pragmas, and it sets no busy handler of its own.
const openBusyParam = ""

// errorCode returns SQLite's extended result code carried by err.
func errorCode(err error) (int, bool) {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code(), true
	}
	return 0, false
}

// rollbackHook is the type of the function the driver's connections take
// as their rollback hook.
type rollbackHook = sqlite.RollbackHookFn
