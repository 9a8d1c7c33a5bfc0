package mailbox

import (
	"encoding/json"
	"testing"
	"time"
)

func TestClearSession(t *testing.T) {
	f, a := newAgentFixture(t)
	must(t, a.SetContinuation(ctxb, "claude", "resume-1"))
	cases := []struct {
		name string
		m    InboundMessage
		want bool
	}{
		{"clear", chat("c1", "/clear"), true},
		{"clear with spaces", chat("c2", "  /clear please"), true},
		{"other text", chat("c3", "clear it"), false},
		{"task", InboundMessage{ID: "t", Kind: KindTask, Content: json.RawMessage(`{"prompt":"/clear"}`)}, false},
	}
	for _, c := range cases {
		f.enqueue(c.m)
	}
	rows, err := a.Poll(ctxb, PollOptions{})
	must(t, err)
	for i, r := range rows {
		if got := IsClear(r); got != cases[i].want {
			t.Errorf("%s: IsClear = %v", cases[i].name, got)
		}
	}
	must(t, a.ClearSession(ctxb, rows[0], "Claude"))
	if v, _ := a.Continuation(ctxb, "claude"); v != "" {
		t.Errorf("continuation kept: %q", v)
	}
	got := f.query(OutboundFile, "SELECT content, in_reply_to, channel_type, platform_id FROM messages_out")
	if len(got) != 1 || got[0][0] != `{"text":"Session cleared."}` || got[0][1] != "c1" || got[0][2] != "slack" || got[0][3] != "C1" {
		t.Errorf("reply %v", got)
	}
	if st := f.one(OutboundFile, "SELECT status FROM processing_ack WHERE message_id = 'c1'"); st != "completed" {
		t.Errorf("ack %v", st)
	}
}

func TestKeepAlive(t *testing.T) {
	f, a := newAgentFixture(t)
	stop := a.KeepAlive(ctxb, time.Hour)
	// The first beat is immediate.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if hb, _ := f.host.Heartbeat(f.ref); !hb.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("KeepAlive never touched .heartbeat")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	f.clk.Advance(time.Minute)
	hb, _ := f.host.Heartbeat(f.ref)
	if !hb.Equal(f.clk.Now().Add(-time.Minute)) {
		t.Errorf("heartbeat %v after stop", hb)
	}
}
