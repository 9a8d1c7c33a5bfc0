package mailbox

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// TestAgentSendComplete: `agent send --complete ID` writes the reply and
// the batch's completion together; the host's one drain delivers the reply
// and mirrors the completions. An unknown id refuses the whole send.
func TestAgentSendComplete(t *testing.T) {
	data, s := mbSession(t)
	files := sessionFiles{t, filepath.Join(data, "g1", "s1")}
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: data}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &hostSide{t: t, h: h, ref: mailbox.SessionRef{AgentGroupID: "g1", SessionID: "s1"}}
	for _, id := range []string{"m1", "m2"} {
		mustMB(t, with(s, "mailbox", "send", "--id", id, "--text", "hi", "--channel-type", "slack", "--platform-id", "C1")...)
	}
	mustMB(t, with(s, "mailbox", "agent", "ack", "--status", "processing", "m1", "m2")...)

	r := mb(t, with(s, "mailbox", "agent", "send", "--id", "r0", "--reply-to", "m2", "--text", "x", "--complete", "m1", "--complete", "nope")...)
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "nope") {
		t.Fatalf("--complete with an unknown id: exit %d %q; want not found naming it", r.Code, r.Stderr)
	}
	if got := files.out("SELECT id FROM messages_out"); len(got) != 0 {
		t.Fatalf("the refused send wrote %v", got)
	}
	if got := files.acks(); got["m1"] != mailbox.AckProcessing || got["m2"] != mailbox.AckProcessing || len(got) != 2 {
		t.Fatalf("acks after the refused send: %v, want m1 and m2 still processing", got)
	}

	var sent struct {
		ID        string
		Seq       int64
		Completed []string
	}
	agentJSON(t, s, &sent, "send", "--id", "r1", "--reply-to", "m2", "--text", "both done", "--complete", "m1", "--complete", "m2")
	if sent.ID != "r1" || sent.Seq != 5 || !slices.Equal(sent.Completed, []string{"m1", "m2"}) {
		t.Fatalf("send --complete --json = %+v", sent)
	}
	if got := files.acks(); got["m1"] != mailbox.AckCompleted || got["m2"] != mailbox.AckCompleted {
		t.Fatalf("acks after send --complete: %v", got)
	}
	if got := files.outRow("r1"); got[1] != "m2" || got[5] != `{"text":"both done"}` {
		t.Fatalf("the reply row: %v", got)
	}
	if res := hs.drain(); res.Delivered != 1 || hs.last().ID != "r1" {
		t.Fatalf("drain = %+v, last %s; want r1 delivered", res, hs.last().ID)
	}
	if got := files.inStates(); got["m1"] != "completed" || got["m2"] != "completed" {
		t.Fatalf("messages_in after one drain: %v", got)
	}
	if out := mustMB(t, with(s, "mailbox", "agent", "send", "--id", "r2", "--reply-to", "m1", "--text", "again", "--complete", "m1")...); out != "sent r2 as seq 7\n" {
		t.Fatalf("send --complete prints %q", out)
	}
}
