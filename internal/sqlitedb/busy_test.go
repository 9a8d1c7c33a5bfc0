package sqlitedb

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestBusyPauseSchedule(t *testing.T) {
	const timeout = 50 * time.Millisecond
	var slept time.Duration
	var steps []time.Duration
	n := 0
	for ; ; n++ {
		d, ok := busyPause(n, timeout)
		if !ok {
			break
		}
		if d <= 0 || d > busyMaxStep {
			t.Fatalf("pause %d = %v, want within (0, %v]", n, d, busyMaxStep)
		}
		steps = append(steps, d)
		slept += d
		if n > 10000 {
			t.Fatal("the handler never gives up")
		}
	}
	// It starts at 20 µs and doubles every second try.
	want := []time.Duration{20, 20, 40, 40, 80, 80, 160, 160, 320, 320, 640, 640, 1000, 1000}
	for i, w := range want {
		if steps[i] != w*time.Microsecond {
			t.Fatalf("steps = %v, want %v µs first", steps[:len(want)], want)
		}
	}
	// Waits add up to the timeout exactly, then it gives up.
	if slept != timeout {
		t.Fatalf("slept %v in %d pauses, want %v", slept, n, timeout)
	}
	if busySlept(n) < timeout {
		t.Fatalf("busySlept(%d) = %v, want ≥ %v", n, busySlept(n), timeout)
	}
	if _, ok := busyPause(0, 0); ok {
		t.Fatal("a zero timeout must not wait")
	}
}

// The yielding schedule (Writer.Yield) waits 1, 2, 4, 8, 8 ... ms, each
// jittered by a quarter either way, and gives up once its steps add up to
// the timeout; it travels to the handler with the timeout in one integer.
func TestYieldingSchedule(t *testing.T) {
	const timeout = 50 * time.Millisecond
	w := newBusyWait(timeout, true)
	if got := busyWaitOf(w.arg()); got != w {
		t.Fatalf("busyWaitOf(arg) = %+v, want %+v", got, w)
	}
	if got := busyWaitOf(newBusyWait(timeout, false).arg()); got.yield || got.ms != 50 {
		t.Fatalf("a quick wait read back as %+v", got)
	}
	nominal := []time.Duration{1, 2, 4, 8, 8, 8, 8, 8, 3} // the last cut to end at 50 ms
	var slept time.Duration
	n := 0
	for ; ; n++ {
		d, ok := w.pause(n)
		if !ok {
			break
		}
		if n >= len(nominal) {
			t.Fatalf("pause %d (%v) after %v: the wait goes on past its timeout", n, d, slept)
		}
		want := nominal[n] * time.Millisecond
		lo, hi := want*3/4, want*5/4
		if n == len(nominal)-1 {
			lo = 0 // cut short, whatever the jitter drew
		}
		if d < lo || d > hi {
			t.Fatalf("pause %d = %v, want within [%v, %v]", n, d, lo, hi)
		}
		slept += d
	}
	if n != len(nominal) {
		t.Fatalf("gave up after %d pauses, want %d", n, len(nominal))
	}
	if _, ok := newBusyWait(0, true).pause(0); ok {
		t.Fatal("a zero timeout must not wait")
	}
	// The quick schedule is unchanged by the encoding.
	for n := 0; n < 20; n++ {
		a, aok := newBusyWait(timeout, false).pause(n)
		b, bok := busyPause(n, timeout)
		if a != b || aok != bok {
			t.Fatalf("quick pause %d = %v, %v; busyPause says %v, %v", n, a, aok, b, bok)
		}
	}
}

// lockFile makes path a rollback-journal database with one row in t, then
// holds its exclusive lock, with a second row written, until the returned
// release is called.
func lockFile(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := Open(Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA journal_mode=DELETE"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE IF NOT EXISTS t(x)", "BEGIN EXCLUSIVE", "INSERT INTO t VALUES (2)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Errorf("commit: %v", err)
		}
		conn.Close()
		db.Close()
	}
}

// count reads COUNT(*) of t through a fresh pool on path.
func count(path string, c Config) (int, error) {
	c.Path = path
	db, err := Open(c)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM t").Scan(&n)
	return n, err
}

// TestBusyHandlerWaitsOurWay checks, under the linked driver, that
// Config.BusyTimeout installs our handler: a read blocked by another
// connection's lock waits at least the timeout (SQLite's own handler is not
// in place: PRAGMA busy_timeout reads 0) and then fails busy, a negative
// timeout fails at once, and a read whose blocker lets go succeeds.
func TestBusyHandlerWaitsOurWay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.db")
	openDB(t, path, "CREATE TABLE t(x); INSERT INTO t VALUES (1)").Close()

	// Connected before the lock is taken: opening reads the file too.
	const wait = 40 * time.Millisecond
	db, err := Open(Config{Path: path, ReadOnly: true, MaxConns: 1, BusyTimeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var builtin int
	if err := db.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&builtin); err != nil {
		t.Fatal(err)
	}
	if builtin != 0 {
		t.Fatalf("PRAGMA busy_timeout = %d: SQLite's own handler is installed, want ours", builtin)
	}
	release := lockFile(t, path)
	start := time.Now()
	var n int
	err = db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM t").Scan(&n)
	if !IsBusy(err) || Code(err) != sessiondb.EBUSY {
		t.Fatalf("read under an exclusive lock: %v, want busy", err)
	}
	// The handler's pauses add up to the timeout before it gives up; the
	// sleeps can only make the wait longer.
	if waited := time.Since(start); waited < wait {
		t.Fatalf("gave up after %v, before the %v timeout", waited, wait)
	}

	if _, err := count(path, Config{ReadOnly: true, MaxConns: 1, BusyTimeout: -1}); !IsBusy(err) {
		t.Fatalf("read with a negative timeout: %v, want busy at once", err)
	}
	// A fresh connection waits the same way, also where the driver reads
	// the file while opening (mattn).
	start = time.Now()
	if _, err := count(path, Config{ReadOnly: true, MaxConns: 1, BusyTimeout: wait}); !IsBusy(err) {
		t.Fatalf("fresh read under an exclusive lock: %v, want busy", err)
	}
	if waited := time.Since(start); waited < wait {
		t.Fatalf("fresh read gave up after %v, before the %v timeout", waited, wait)
	}

	// A reader waiting with a long timeout gets the row once the lock goes.
	got := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		n, err := count(path, Config{ReadOnly: true, MaxConns: 1, BusyTimeout: 5 * time.Second})
		if err == nil && n != 2 {
			err = sql.ErrNoRows
		}
		got <- err
	}()
	<-started
	release()
	if err := <-got; err != nil {
		t.Fatalf("read after the lock went: %v, want 2 rows", err)
	}
}

// TestBusyHandlerOnWriter checks that the writer's busy wait is our
// handler too (it replaces what the pool installed at each BEGIN).
func TestBusyHandlerOnWriter(t *testing.T) {
	w, done := openWriter(t, filepath.Join(t.TempDir(), "w.db"))
	defer done()
	if err := w.Do(context.Background(), func(tx *Tx) error { return tx.ExecScript("CREATE TABLE t(x)") }); err != nil {
		t.Fatal(err)
	}
	var builtin int
	if err := w.conn.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&builtin); err != nil {
		t.Fatal(err)
	}
	if builtin != 0 {
		t.Fatalf("writer's PRAGMA busy_timeout = %d: SQLite's own handler is installed, want ours", builtin)
	}
}

// TestBusyWaitEndsWithItsContext checks that a statement waiting on our
// handler stops when its context ends, long before its timeout: the
// driver interrupts the connection and the handler gives up. Both a read
// on an open connection and a fresh connection's pragmas are checked; the
// timeout is far beyond the test's own bound, so a handler that ignored the
// interrupt would fail, not merely slow the test.
func TestBusyWaitEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.db")
	openDB(t, path, "CREATE TABLE t(x); INSERT INTO t VALUES (1)").Close()
	const budget = 10 * time.Minute
	db, err := Open(Config{Path: path, MaxConns: 1, BusyTimeout: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	release := lockFile(t, path)
	defer release()
	for _, c := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"read", func(ctx context.Context) error {
			var n int
			return db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n)
		}},
		{"fresh connection's pragma", func(ctx context.Context) error {
			fresh, err := Open(Config{Path: path, MaxConns: 1, BusyTimeout: budget, Pragmas: []string{"PRAGMA journal_mode=DELETE"}})
			if err != nil {
				return err
			}
			defer fresh.Close()
			_, err = fresh.ExecContext(ctx, "SELECT COUNT(*) FROM t")
			return err
		}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.run(ctx) }()
		// Let it reach the wait (a cancel before it starts proves nothing;
		// one after it began waiting is what is checked).
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s under an exclusive lock succeeded", c.name)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waiting 30 s after its context was cancelled (timeout %v)", c.name, budget)
		}
	}
}
