package mailbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// changeCounter reads a database file's change counter (header offset 24),
// which every commit in rollback-journal mode increments.
func changeCounter(t *testing.T, path string) uint32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 28 {
		t.Fatalf("read %s: %v", path, err)
	}
	return binary.BigEndian.Uint32(b[24:28])
}

// TestDrainOneCommitPerDelivery: the delivery record and the ack sync
// share one inbound commit.
func TestDrainOneCommitPerDelivery(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("m1", "hi"))
	a := f.openAgent()
	if err := a.MarkCompleted(ctxb, "m1"); err != nil {
		t.Fatal(err)
	}
	f.send("o1", `{"text":"hello"}`)
	in := filepath.Join(f.dir, InboundFile)
	before := changeCounter(t, in)
	res, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(OutboundRow) (string, error) { return "P1", nil }})
	if err != nil || res.Delivered != 1 {
		t.Fatalf("drain %+v %v", res, err)
	}
	if n := changeCounter(t, in) - before; n != 1 {
		t.Fatalf("drain committed inbound.db %d times, want 1", n)
	}
	if st := f.one(InboundFile, "SELECT status FROM messages_in WHERE id = 'm1'"); st != StatusCompleted {
		t.Fatalf("m1 is %v: the ack was not synced with the delivery", st)
	}
	if pid := f.one(InboundFile, "SELECT platform_message_id FROM delivered WHERE message_out_id = 'o1'"); pid != "P1" {
		t.Fatalf("delivered o1 as %v", pid)
	}
	// A drain with nothing to deliver still syncs acks (one commit).
	if err := a.MarkFailed(ctxb, "m1"); err != nil {
		t.Fatal(err)
	}
	f.enqueue(chat("m2", "more"))
	if err := a.MarkCompleted(ctxb, "m2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(OutboundRow) (string, error) { return "", nil }}); err != nil {
		t.Fatal(err)
	}
	if st := f.one(InboundFile, "SELECT status FROM messages_in WHERE id = 'm2'"); st != StatusCompleted {
		t.Fatalf("m2 is %v after an empty drain, want completed", st)
	}
}

// holdLock takes path's write lock (BEGIN EXCLUSIVE through a connection of
// its own, as the other side committing would) until the test ends or
// release is called.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctxb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctxb, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	}
	t.Cleanup(release)
	return release
}

// TestSeqWhileOtherSideCommits: numbering a row while the other side holds
// its file's lock does not wait for it and still comes after every row of
// that side this side has read.
func TestSeqWhileOtherSideCommits(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("m1", "one")) // 2
	if seq := f.send("o1", `{"text":"a"}`); seq != 3 {
		t.Fatalf("o1 seq %d, want 3", seq)
	}
	f.enqueue(chat("m2", "two"))   // 4
	f.enqueue(chat("m3", "three")) // 6
	batch, err := a.Poll(ctxb, PollOptions{})
	if err != nil || len(batch) != 3 {
		t.Fatalf("poll %v %v", ids(batch), err)
	}
	release := holdLock(t, filepath.Join(f.dir, InboundFile))
	seq, err := a.Send(ctxb, OutboundMessage{ID: "o2", InReplyTo: "m3", Content: json.RawMessage(`{"text":"b"}`),
		Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
	if err != nil || seq != 7 {
		t.Fatalf("send while inbound is locked: seq %d, %v; want 7 (after m3, which the agent polled)", seq, err)
	}
	release()

	// The host side: the drain saw o2 and o3 (7, 9); an enqueue while the
	// agent holds outbound's lock numbers after them.
	f.send("o3", `{"text":"c"}`) // 9
	if _, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(OutboundRow) (string, error) { return "P", nil }}); err != nil {
		t.Fatal(err)
	}
	f.send("o4", `{"text":"d"}`) // 11, unseen by the host
	holdLock(t, filepath.Join(f.dir, OutboundFile))
	if seq := f.enqueue(chat("m4", "four")); seq != 10 {
		t.Fatalf("enqueue while outbound is locked: seq %d, want 10 (after o3, the last agent row the host read)", seq)
	}
}
