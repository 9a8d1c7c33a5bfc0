//go:build sqlite_fts5

package sqlitedb

import (
	"database/sql/driver"
	"errors"
	"fmt"

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

// onRollback makes SQLite call f whenever a transaction on the driver
// connection dc ends in a rollback, explicit or forced by an error (not for
// ROLLBACK TO a savepoint); nil removes the hook.
func onRollback(dc any, f func()) error {
	c, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return fmt.Errorf("driver connection %T has no rollback hook", dc)
	}
	c.RegisterRollbackHook(f)
	return nil
}
