//go:build !sqlite_fts5

package sqlitedb

import (
	"database/sql/driver"
	"errors"
	"fmt"

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

// onRollback makes SQLite call f whenever a transaction on the driver
// connection dc ends in a rollback, explicit or forced by an error (not for
// ROLLBACK TO a savepoint); nil removes the hook.
func onRollback(dc any, f func()) error {
	c, ok := dc.(sqlite.HookRegisterer)
	if !ok {
		return fmt.Errorf("driver connection %T has no rollback hook", dc)
	}
	c.RegisterRollbackHook(f)
	return nil
}
