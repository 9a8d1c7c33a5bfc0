//go:build sqlite_fts5

package sqlitedb

/*
#include <stdint.h>
#include <time.h>

// The SQLite library mattn/go-sqlite3 compiles into this binary; its header
// is not reachable from here, so the one function we call is declared.
typedef struct sqlite3 sqlite3;
extern int sqlite3_busy_handler(sqlite3*, int(*)(void*, int), void*);
extern int sqlite3_is_interrupted(sqlite3*);
extern void sqlite3_interrupt(sqlite3*);
extern void *sqlite3_get_clientdata(sqlite3*, const char*);
extern int sqlite3_set_clientdata(sqlite3*, const char*, void*, void(*)(void*));

extern long long sqlitedbBusyPause(uintptr_t arg, int n);

// The connection's wait in ms, kept on the connection itself.
static const char sqlitedb_busy_key[] = "sessiondb.busy";

// The pause is chosen in Go (busyPause) and slept here, without holding a
// Go thread in a callback. An interrupted connection (the driver calls
// sqlite3_interrupt when the call's context ends) stops waiting at once.
static int sqlitedb_busy(void *arg, int n) {
	sqlite3 *db = (sqlite3*)arg;
	if (sqlite3_is_interrupted(db)) return 0;
	long long ns = sqlitedbBusyPause((uintptr_t)sqlite3_get_clientdata(db, sqlitedb_busy_key), n);
	if (ns < 0) return 0;
	struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
	nanosleep(&ts, 0);
	return 1;
}

static void sqlitedb_interrupt(void *db) { sqlite3_interrupt((sqlite3*)db); }

static int sqlitedb_set_busy(void *db, uintptr_t arg) {
	if (arg == 0) return sqlite3_busy_handler((sqlite3*)db, 0, 0);
	int rc = sqlite3_set_clientdata((sqlite3*)db, sqlitedb_busy_key, (void*)arg, 0);
	if (rc != 0) return rc;
	return sqlite3_busy_handler((sqlite3*)db, sqlitedb_busy, db);
}
*/
import "C"

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

//export sqlitedbBusyPause
func sqlitedbBusyPause(arg C.uintptr_t, n C.int) C.longlong {
	d, ok := busyWaitOf(uintptr(arg)).pause(int(n))
	if !ok {
		return -1
	}
	return C.longlong(d)
}

// installBusyHandler makes our busy handler wait up to timeout on the
// driver connection dc (0: fail at once).
func installBusyHandler(dc any, w busyWait) error {
	db, err := handle(dc)
	if err != nil {
		return err
	}
	if rc := C.sqlitedb_set_busy(db, C.uintptr_t(w.arg())); rc != 0 {
		return fmt.Errorf("sqlite3_busy_handler: result code %d", int(rc))
	}
	return nil
}

// interruptConn calls sqlite3_interrupt on the driver connection dc.
func interruptConn(dc any) error {
	db, err := handle(dc)
	if err != nil {
		return err
	}
	C.sqlitedb_interrupt(db)
	return nil
}

// handle is the sqlite3 handle of mattn's driver connection dc, which
// keeps it in an unexported field; a driver upgrade that renames it fails
// here, loudly, and the tests with it.
func handle(dc any) (unsafe.Pointer, error) {
	c, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return nil, fmt.Errorf("driver connection %T is not mattn's", dc)
	}
	f := reflect.ValueOf(c).Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil, fmt.Errorf("mattn/go-sqlite3 connection has no sqlite3 handle where expected")
	}
	return unsafe.Pointer(f.Pointer()), nil
}
