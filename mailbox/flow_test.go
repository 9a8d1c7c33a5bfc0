package mailbox

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

func TestRoundTripBasics(t *testing.T) {
	f := newFixture(t)
	s1 := f.enqueue(chat("m1", "hello"))
	s2 := f.enqueue(chat("m2", "again"))
	if s1 != 2 || s2 != 4 {
		t.Fatalf("seqs %d %d, want 2 4", s1, s2)
	}
	a := f.openAgent()
	batch, err := a.Poll(ctxb, PollOptions{FirstPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(batch); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("poll = %v", got)
	}
	if err := a.MarkProcessing(ctxb, "m1", "m2"); err != nil {
		t.Fatal(err)
	}
	seq, err := a.Send(ctxb, OutboundMessage{Content: json.RawMessage(`{"text":"hi"}`), InReplyTo: "m1", Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
	if err != nil {
		t.Fatal(err)
	}
	if seq != 5 {
		t.Fatalf("agent seq %d, want 5", seq)
	}
	if err := a.MarkCompleted(ctxb, "m1", "m2"); err != nil {
		t.Fatal(err)
	}
	var got []OutboundRow
	res, err := f.host.Drain(ctxb, f.ref, DelivererFunc(func(ctx context.Context, ref SessionRef, row OutboundRow) (string, error) {
		got = append(got, row)
		return "P-1", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered != 1 || len(got) != 1 || string(got[0].Content) != `{"text":"hi"}` {
		t.Fatalf("drain %+v %v", res, got)
	}
	if st := f.one(InboundFile, "SELECT group_concat(status) FROM messages_in"); st != "completed,completed" {
		t.Fatalf("statuses %v", st)
	}
	id, err := a.MessageIDBySeq(ctxb, 5)
	if err != nil || id != "P-1" {
		t.Fatalf("MessageIDBySeq(5) = %q, %v", id, err)
	}
	if s3 := f.enqueue(chat("m3", "more")); s3 != 6 {
		t.Fatalf("host seq after agent 5 = %d, want 6", s3)
	}
}
