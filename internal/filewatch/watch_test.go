package filewatch

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// Notify calls its function after a change of a watched file (found here
// by the polling fallback alone, so the test does not depend on the OS's
// notification), and Close does not wait for a call under way: the
// function may need a lock that Close's caller holds (the host daemon's
// and the web UI's watch sets close their watchers under the lock their
// callbacks take).
func TestNotifyCallsOnChangeAndCloseDoesNotWaitForTheCall(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var calls atomic.Int64
	entered := make(chan struct{})
	w, err := Notify(dir, []string{"watched.db"}, Options{Interval: time.Millisecond, NoNotify: true}, func() {
		if calls.Add(1) == 1 {
			entered <- struct{}{}
			mu.Lock()
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	testkit.WaitFor(t, "a call after a write", func() bool {
		n++ // a new size each time: the poll sees a change whenever it looks
		if err := os.WriteFile(filepath.Join(dir, "watched.db"), bytes.Repeat([]byte("x"), n), 0o600); err != nil {
			t.Fatal(err)
		}
		return calls.Load() > 0
	})
	mu.Lock()
	<-entered // the call now waits for mu
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Close waited for a call that waits for its caller's lock")
	}
	mu.Unlock()
}

// Changes counts every wake, also those that coalesce into one value of C:
// three writes with nobody reading C leave one value there and a count of
// at least three.
func TestChangesCountsWakesThatCoalesce(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWatcher(dir, []string{"watched.db"}, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.Notifying() {
		t.Fatal("this test needs file-change notification")
	}
	if n := w.Changes(); n != 0 {
		t.Fatalf("Changes = %d before any write, want 0", n)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, "watched.db"), bytes.Repeat([]byte("x"), i+1), 0o600); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the write's wake", func() bool { return w.Changes() > uint64(i) })
	}
	if len(w.C()) != 1 {
		t.Fatalf("%d values in C after three wakes nobody read, want 1 (coalesced)", len(w.C()))
	}
}
