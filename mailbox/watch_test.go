package mailbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A DELETE-mode commit is the removal of the journal: events while the
// journal exists must not wake readers into the writer's lock.
func TestWatcherWaitsForTheJournalRemoval(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWatcher(dir, []string{"watched.db"}, WatchOptions{Interval: time.Hour})
	must(t, err)
	defer w.Close()
	if !w.Notifying() {
		t.Fatal("this test needs file-change notification")
	}
	db := filepath.Join(dir, "watched.db")
	journal := db + "-journal"
	must(t, os.WriteFile(journal, []byte("j"), 0o600))
	must(t, os.WriteFile(db, []byte("x"), 0o600))
	if changed, _ := w.Wait(ctxb, 200*time.Millisecond); changed {
		t.Fatal("woken while the journal still existed (transaction open)")
	}
	must(t, os.Remove(journal))
	if changed, err := w.Wait(ctxb, 10*time.Second); err != nil || !changed {
		t.Fatalf("journal removal did not wake: %v, %v", changed, err)
	}
	// Without a journal, a write to the file wakes at once.
	must(t, os.WriteFile(db, []byte("y"), 0o600))
	if changed, err := w.Wait(ctxb, 10*time.Second); err != nil || !changed {
		t.Fatalf("plain write did not wake: %v, %v", changed, err)
	}
}
