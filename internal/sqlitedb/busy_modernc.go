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

// busyHandler is our handler in the form modernc's translated C calls.
func busyHandler(_ *libc.TLS, timeoutMS uintptr, n int32) int32 {
	d, ok := busyPause(int(n), time.Duration(timeoutMS)*time.Millisecond)
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
// driver connection dc (0: fail at once). modernc keeps the sqlite3 handle
// and its thread state in unexported fields; a driver upgrade that renames
// them fails here, loudly, and the tests with it.
func installBusyHandler(dc any, timeout time.Duration) error {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != "modernc.org/sqlite" {
		return fmt.Errorf("driver connection %T is not modernc's", dc)
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
		return fmt.Errorf("modernc.org/sqlite connection has no sqlite3 handle where expected")
	}
	t := (*libc.TLS)(tls.UnsafePointer())
	var rc int32
	if ms := busyMS(timeout); ms == 0 {
		rc = sqlite3.Xsqlite3_busy_handler(t, uintptr(db.Uint()), 0, 0)
	} else {
		rc = sqlite3.Xsqlite3_busy_handler(t, uintptr(db.Uint()), busyHandlerPtr, ms)
	}
	if rc != 0 {
		return fmt.Errorf("sqlite3_busy_handler: result code %d", rc)
	}
	return nil
}
