package mailbox

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// nanoclawSyncedAcks is the ack read of NanoClaw's host
// (src/db/session-db.ts:171), run on outbound.db as it stands there.
const nanoclawSyncedAcks = `SELECT message_id FROM processing_ack WHERE status IN ('completed', 'failed')`

// TestSendCompletes: a send with Complete writes its row and the batch's
// completed acks in one outbound commit, which both our host and NanoClaw's
// read as the reply and the completion; a send that fails, or is refused,
// acks nothing.
func TestSendCompletes(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("m1", "one"))
	f.enqueue(chat("m2", "two"))
	must(t, a.MarkProcessing(ctxb, "m1", "m2"))
	commits := 0
	a.w.OnCommit = func(int) { commits++ }

	seq, err := a.Send(ctxb, OutboundMessage{ID: "r1", InReplyTo: "m2", Content: json.RawMessage(`{"text":"both done"}`),
		Routing: Routing{ChannelType: "slack", PlatformID: "C1"}, Complete: []string{"m1", "m2"}})
	if err != nil || seq != 5 {
		t.Fatalf("Send = %d, %v; want seq 5", seq, err)
	}
	if commits != 1 {
		t.Fatalf("the send and its completion took %d commits, want 1", commits)
	}
	acks := f.query(OutboundFile, "SELECT message_id, status, status_changed FROM processing_ack ORDER BY message_id")
	want := [][]any{{"m1", "completed", "2026-03-01T12:00:00.000Z"}, {"m2", "completed", "2026-03-01T12:00:00.000Z"}}
	if len(acks) != 2 || !slices.Equal(acks[0], want[0]) || !slices.Equal(acks[1], want[1]) {
		t.Fatalf("acks %v, want %v", acks, want)
	}
	if got := column(f.query(OutboundFile, nanoclawSyncedAcks), 0); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("NanoClaw's host reads completed acks %v, want [m1 m2]", got)
	}

	// One drain delivers the reply and mirrors both completions.
	d := &scripted{fn: func(OutboundRow) (string, error) { return "P-1", nil }}
	res, err := f.host.Drain(ctxb, f.ref, d)
	if err != nil || res.Delivered != 1 || len(d.calls) != 1 || d.calls[0].ID != "r1" {
		t.Fatalf("Drain = %+v, %v, delivered %d rows; want r1 delivered", res, err, len(d.calls))
	}
	if st := f.one(InboundFile, "SELECT group_concat(id || '=' || status, ' ') FROM messages_in"); st != "m1=completed m2=completed" {
		t.Fatalf("inbound after one drain: %v", st)
	}

	// A send that fails (its id is taken) or is refused acks nothing.
	f.enqueue(chat("m3", "three"))
	must(t, a.MarkProcessing(ctxb, "m3"))
	_, err = a.Send(ctxb, OutboundMessage{ID: "r1", Content: json.RawMessage(`{"text":"again"}`), Complete: []string{"m3"}})
	wantCode(t, err, sessiondb.ECONFLICT)
	_, err = a.Send(ctxb, OutboundMessage{ID: "r3", Content: json.RawMessage(`{"text":"x"}`), Complete: []string{"m3", ""}})
	wantCode(t, err, sessiondb.EINVALID)
	if !strings.Contains(err.Error(), "complete") {
		t.Fatalf("error %v should name the complete list", err)
	}
	_, err = a.Send(ctxb, OutboundMessage{ID: "r3", Content: json.RawMessage(`{"text":"x"}`), Complete: []string{"m3\x00"}})
	wantCode(t, err, sessiondb.EINVALID)
	if st := f.one(OutboundFile, "SELECT status FROM processing_ack WHERE message_id = 'm3'"); st != "processing" {
		t.Fatalf("m3's ack is %v after failed sends, want processing", st)
	}
	if n := f.one(OutboundFile, "SELECT COUNT(*) FROM messages_out WHERE id = 'r3'"); n != int64(0) {
		t.Fatalf("a refused send wrote %v rows", n)
	}
}
