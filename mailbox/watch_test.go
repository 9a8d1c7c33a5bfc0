package mailbox

import (
	"context"
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

// A host commit that a poll read past does not wake WaitInbound: the poll
// saw it (the delivery record a poll met right after the agent's reply would
// otherwise start a poll that finds nothing). A commit after the poll does.
func TestWaitInboundSkipsWhatThePollSaw(t *testing.T) {
	f := newFixture(t)
	a := watchingAgent(t, f)
	if !a.watcher.Notifying() {
		t.Fatal("this test needs file-change notification")
	}
	f.enqueue(chat("m1", "one"))
	// The commit's wake is counted before the poll reads.
	for deadline := time.Now().Add(10 * time.Second); a.inboundSeen() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the enqueue's commit was never seen by the watcher")
		}
	}
	batch, err := a.Poll(ctxb, PollOptions{})
	if err != nil || len(batch) != 1 {
		t.Fatalf("poll: %v, %v", ids(batch), err)
	}
	ctx, cancel := context.WithTimeout(ctxb, 300*time.Millisecond)
	defer cancel()
	if err := a.WaitInbound(ctx); err == nil {
		t.Fatal("WaitInbound woke for a commit the poll had read")
	}
	done := make(chan error, 1)
	go func() { done <- a.WaitInbound(ctxb) }()
	f.enqueue(chat("m2", "two"))
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a commit after the poll did not wake WaitInbound")
	}
}

// TestAgentWatcherSleepsThroughWritesThatCommitNothing: the agent's inbound
// watcher is woken by the host's commits (the journal's removal), not by
// each write to inbound.db: a pwrite into the open file (the same bytes
// again, so the file stays whole) leaves it asleep. Each write of a
// transaction woke both sides' watchers before, some 80 a round trip.
func TestAgentWatcherSleepsThroughWritesThatCommitNothing(t *testing.T) {
	f := newFixture(t)
	a := watchingAgent(t, f)
	if !a.watcher.Notifying() {
		t.Fatal("this test needs file-change notification")
	}
	file, err := os.OpenFile(filepath.Join(f.dir, InboundFile), os.O_RDWR, 0)
	must(t, err)
	defer file.Close()
	page := make([]byte, 4096)
	_, err = file.ReadAt(page, 0)
	must(t, err)
	for range 5 {
		_, err = file.WriteAt(page, 0)
		must(t, err)
	}
	time.Sleep(300 * time.Millisecond) // give a wrong wake the time to come
	if n := a.inboundSeen(); n != 0 {
		t.Fatalf("the agent's watcher was woken %d times by writes that commit nothing", n)
	}
	f.enqueue(chat("m1", "one"))
	for deadline := time.Now().Add(10 * time.Second); a.inboundSeen() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the enqueue's commit did not wake the agent's watcher")
		}
	}
}

// watchingAgent opens f's agent with its inbound watcher started (and a
// poll too slow to matter), closed with the test.
func watchingAgent(t *testing.T, f *fixture) *Agent {
	t.Helper()
	a, err := OpenAgent(ctxb, f.dir, AgentOptions{Now: f.clk.Now, PollInterval: time.Hour})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	_, err = a.inboundWatcher()
	must(t, err)
	return a
}
