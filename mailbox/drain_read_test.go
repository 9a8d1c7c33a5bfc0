package mailbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestDrainWritesNothingForAClaim: a drain that finds no row to deliver and
// no ack to mirror (the agent only claimed its batch) runs no transaction
// on inbound.db; once the agent completes, the next drain mirrors it.
func TestDrainWritesNothingForAClaim(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("m1", "hi"))
	f.send("o1", `{"text":"earlier"}`)
	d := &scripted{fn: func(OutboundRow) (string, error) { return "P", nil }}
	if res, err := f.host.Drain(ctxb, f.ref, d); err != nil || res.Delivered != 1 {
		t.Fatalf("first drain %+v %v", res, err)
	}
	in := filepath.Join(f.dir, InboundFile)
	before := changeCounter(t, in)
	txs := 0
	f.host.session(f.ref).inbound.OnCommit = func(int) { txs++ }
	must(t, a.MarkProcessing(ctxb, "m1"))
	if res, err := f.host.Drain(ctxb, f.ref, d); err != nil || res != (DrainResult{}) {
		t.Fatalf("drain after a claim: %+v %v", res, err)
	}
	if n := changeCounter(t, in) - before; n != 0 || txs != 0 {
		t.Fatalf("a drain with nothing to do committed inbound.db %d times in %d transactions", n, txs)
	}
	must(t, a.MarkCompleted(ctxb, "m1"))
	if _, err := f.host.Drain(ctxb, f.ref, d); err != nil {
		t.Fatal(err)
	}
	if n := changeCounter(t, in) - before; n != 1 {
		t.Fatalf("the drain after the completion committed inbound.db %d times, want 1", n)
	}
	if st := f.one(InboundFile, "SELECT status FROM messages_in WHERE id = 'm1'"); st != StatusCompleted {
		t.Fatalf("m1 is %v, want completed", st)
	}
}

// TestDrainOverHotInboundJournal: a drain reads inbound.db read-only; when
// a host writer died mid-commit and left its journal hot, the drain rolls
// the journal back through a read-write open and delivers.
func TestDrainOverHotInboundJournal(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("m1", "hi"))
	f.send("o1", `{"text":"reply"}`)
	in := filepath.Join(f.dir, InboundFile)
	makeHotJournal(t, in)
	d := &scripted{fn: func(OutboundRow) (string, error) { return "P1", nil }}
	res, err := f.host.Drain(ctxb, f.ref, d)
	if err != nil || res.Delivered != 1 || len(d.calls) != 1 || d.calls[0].ID != "o1" {
		t.Fatalf("drain over a hot journal: %+v, %v", res, err)
	}
	if _, err := os.Stat(in + "-journal"); !os.IsNotExist(err) {
		t.Fatalf("the journal is still there: %v", err)
	}
	if got := f.one(InboundFile, "SELECT group_concat(id) FROM messages_in"); got != "m1" {
		t.Fatalf("inbound rows %v: the uncommitted ones were not rolled back", got)
	}
	if pid := f.one(InboundFile, "SELECT platform_message_id FROM delivered WHERE message_out_id = 'o1'"); pid != "P1" {
		t.Fatalf("o1 recorded as %v", pid)
	}
	if ok := f.one(InboundFile, "PRAGMA integrity_check"); ok != "ok" {
		t.Fatalf("integrity_check: %v", ok)
	}
}

// makeHotJournal leaves path as a writer killed mid-commit would: the file
// holding changes of an open transaction, beside the journal that undoes
// them, with no process holding a lock. The pair is copied while the
// transaction is open, and put in place once it has rolled back.
func makeHotJournal(t *testing.T, path string) {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA journal_mode=DELETE", "PRAGMA cache_size=8"}})
	must(t, err)
	defer db.Close()
	conn, err := db.Conn(ctxb)
	must(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctxb, "BEGIN IMMEDIATE")
	must(t, err)
	big := strings.Repeat("x", 4000)
	for i := 0; i < 200; i++ {
		_, err := conn.ExecContext(ctxb, `INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES (?, ?, 'chat', '2026-01-01T00:00:00.000Z', ?)`,
			fmt.Sprintf("u-%03d", i), 1000+2*i, `{"text":"`+big+`"}`)
		must(t, err)
	}
	file, err := os.ReadFile(path)
	must(t, err)
	journal, err := os.ReadFile(path + "-journal")
	must(t, err)
	_, err = conn.ExecContext(ctxb, "ROLLBACK")
	must(t, err)
	conn.Close()
	db.Close()
	must(t, os.WriteFile(path, file, 0o600))
	must(t, os.WriteFile(path+"-journal", journal, 0o600))
}

// TestDrainHoldsInboundOnlyToRead: the read-only attach of inbound.db a
// drain reads through is gone before it delivers: the host does not hold
// the file open across a delivery, nor across the record between two
// (contract section 3: closed after each write).
func TestDrainHoldsInboundOnlyToRead(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("m1", "hi"))
	f.send("o1", `{"text":"one"}`)
	f.send("o2", `{"text":"two"}`)
	in := filepath.Join(f.dir, InboundFile)
	var open []int
	d := &scripted{fn: func(OutboundRow) (string, error) {
		if runtime.GOOS == "linux" {
			open = append(open, openHandles(t, in))
		}
		return "P", nil
	}}
	if res, err := f.host.Drain(ctxb, f.ref, d); err != nil || res.Delivered != 2 {
		t.Fatalf("drain: %+v, %v", res, err)
	}
	if runtime.GOOS == "linux" && !slices.Equal(open, []int{0, 0}) {
		t.Fatalf("inbound.db was open %v times during the two deliveries, want 0 and 0", open)
	}
}

// TestDrainReportsAFailedJournalRollback: when the read-write open that
// would roll back a hot inbound journal fails (here it waits for the
// session, which the test holds, until the drain is cancelled), the drain
// reports that failure, not only the read-only read's refusal.
func TestDrainReportsAFailedJournalRollback(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("m1", "hi"))
	f.send("o1", `{"text":"reply"}`)
	makeHotJournal(t, filepath.Join(f.dir, InboundFile))
	unlock, err := f.host.lockSession(ctxb, f.ref)
	must(t, err)
	defer unlock()
	ctx, cancel := context.WithCancel(ctxb)
	defer cancel()
	d := &scripted{fn: func(OutboundRow) (string, error) { return "P1", nil }}
	done := make(chan error, 1)
	go func() {
		_, err := f.host.Drain(ctx, f.ref, d)
		done <- err
	}()
	testkit.WaitFor(t, "the rollback's open queued", func() bool { return f.host.session(f.ref).inbound.Queued() == 1 })
	cancel()
	err = <-done
	if !sqlitedb.IsReadOnlyRollback(err) || !strings.Contains(err.Error(), "roll back inbound.db's journal") ||
		!strings.Contains(err.Error(), "waiting for this process's other operation") {
		t.Fatalf("drain = %v; want the refused read and why its journal was not rolled back", err)
	}
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY || len(d.calls) != 0 {
		t.Fatalf("code %q, %d deliveries; want busy and none", sessiondb.ErrorCode(err), len(d.calls))
	}
}
