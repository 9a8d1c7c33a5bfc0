//go:build !sqlite_fts5

package sqlitedb

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// busyKey names the connection's wait (in ms) among its client data: the
// handler's argument is the connection, so that it can see an interrupt.
var busyKey = func() uintptr {
	p, err := libc.CString("sessiondb.busy")
	if err != nil {
		panic(err) // out of memory at start-up, before any input
	}
	return p
}()

// busyHandler is our handler in the form modernc's translated C calls. An
// interrupted connection (the driver calls sqlite3_interrupt when the
// call's context ends) stops waiting at once.
func busyHandler(tls *libc.TLS, db uintptr, n int32) int32 {
	if sqlite3.Xsqlite3_is_interrupted(tls, db) != 0 {
		return 0
	}
	d, ok := busyWaitOf(sqlite3.Xsqlite3_get_clientdata(tls, db, busyKey)).pause(int(n))
	if !ok {
		return 0
	}
	time.Sleep(d)
	return 1
}

// busyHandlerPtr is busyHandler as a C function pointer: modernc passes
// function values as the address of their func value, the same conversion
// the driver does for its own hooks.
var busyHandlerPtr = *(*uintptr)(unsafe.Pointer(&struct {
	f func(*libc.TLS, uintptr, int32) int32
}{busyHandler}))

// installBusyHandler makes our busy handler wait up to timeout on the
// driver connection dc (0: fail at once).
func installBusyHandler(dc any, w busyWait) error {
	db, t, err := handle(dc)
	if err != nil {
		return err
	}
	var rc int32
	if ms := w.arg(); ms == 0 {
		rc = sqlite3.Xsqlite3_busy_handler(t, db, 0, 0)
	} else if rc = sqlite3.Xsqlite3_set_clientdata(t, db, busyKey, ms, 0); rc == 0 {
		rc = sqlite3.Xsqlite3_busy_handler(t, db, busyHandlerPtr, db)
	}
	if rc != 0 {
		return fmt.Errorf("sqlite3_busy_handler: result code %d", rc)
	}
	return nil
}

// interruptConn calls sqlite3_interrupt on the driver connection dc.
func interruptConn(dc any) error {
	db, t, err := handle(dc)
	if err != nil {
		return err
	}
	sqlite3.Xsqlite3_interrupt(t, db)
	return nil
}

// handle is the sqlite3 handle and thread state of modernc's driver
// connection dc, which keeps them in unexported fields; a driver upgrade
// that renames them fails here, loudly, and the tests with it.
func handle(dc any) (uintptr, *libc.TLS, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != "modernc.org/sqlite" {
		return 0, nil, fmt.Errorf("driver connection %T is not modernc's", dc)
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
		return 0, nil, fmt.Errorf("modernc.org/sqlite connection has no sqlite3 handle where expected")
	}
	return uintptr(db.Uint()), (*libc.TLS)(tls.UnsafePointer()), nil
}
