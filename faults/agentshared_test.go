package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// echoAgent writes the shell agent the host tests wake: it answers each
// message of its session with "You said: <text>" in the message's own
// chat, acks it, and exits after 5 seconds of quiet.
func echoAgent(t *testing.T, dir string) string {
	t.Helper()
	agent := filepath.Join(dir, "agent.sh")
	script := `#!/bin/sh
tab=$(printf '\t')
while :; do
  batch=$(` + binary + ` mailbox agent poll --wait --timeout 5s) || exit 1
  [ -z "$batch" ] && exit 0
  printf '%s\n' "$batch" | while IFS="$tab" read -r id seq kind text; do
    ` + binary + ` mailbox agent send --reply-to "$id" --text "You said: $text"
    ` + binary + ` mailbox agent ack "$id"
  done
done
`
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return agent
}

// Two Telegram chats wired agent-shared to one agent group share its
// session, and Telegram numbers messages per chat: message 5 of chat-0 and
// message 5 of chat-1 reach the running host. Both are routed, both are
// stored, and the real agent the host wakes answers each in its own chat.
// The same event of chat-1 posted again is reported a duplicate (not
// routed) and is not answered twice.
func TestAgentSharedChatsSameMessageID(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	central := filepath.Join(dir, "v2.db")
	agent := echoAgent(t, dir)
	e.must(t, "admin", "groups", "create", "Helper", "--id", "ag-helper", "--central", central)
	for _, c := range []string{"chat-0", "chat-1"} {
		e.must(t, "admin", "channels", "create", "telegram", c, "--id", "mg-"+c, "--name", c, "--group-chat", "--policy", "public", "--central", central)
		e.must(t, "admin", "wire", "mg-"+c, "ag-helper", "--engage", "pattern", "--session-mode", "agent-shared", "--central", central)
	}
	h := startHost(t, e, central, dir, "host", agent)
	event := func(chat string) string {
		return fmt.Sprintf(`{"channel_type":"telegram","platform_id":%q,"message_id":"5","sender":{"id":"42","name":"Ann"},"text":"msg-%s","is_group":true}`, chat, chat)
	}
	route := func(lines ...string) []hostd.RouteResult {
		t.Helper()
		r := e.run(t, strings.Join(lines, "\n")+"\n", "--json", "route", "--host", filepath.Join(h.data, "host.sock"))
		if r.Code != 0 {
			t.Fatalf("route: %s", r)
		}
		var out []hostd.RouteResult
		for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			var lr hostd.LineResult
			if err := json.Unmarshal([]byte(l), &lr); err != nil || lr.Message == nil {
				t.Fatalf("route output %q: %v", l, err)
			}
			out = append(out, *lr.Message)
		}
		return out
	}

	got := route(event("chat-0"), event("chat-1"))
	if len(got) != 2 || got[0].Outcome != hostd.RouteRouted || got[1].Outcome != hostd.RouteRouted ||
		got[0].Deliveries[0].SessionID != got[1].Deliveries[0].SessionID || got[0].Deliveries[0].InboundID == got[1].Deliveries[0].InboundID {
		t.Fatalf("two chats' message 5 into one agent-shared session: %+v", got)
	}
	answered := func() bool {
		n := map[string]int{}
		h.replies(t, n)
		return n["msg-chat-0"] == 1 && n["msg-chat-1"] == 1
	}
	testkit.WaitFor(t, "both messages answered", answered)

	again := route(event("chat-1"))
	if again[0].Outcome != hostd.RouteDuplicate || !again[0].Deliveries[0].Duplicate {
		t.Fatalf("the redelivered event: %+v", again[0])
	}
	h.stop(t)

	n := map[string]int{}
	h.replies(t, n)
	if n["msg-chat-0"] != 1 || n["msg-chat-1"] != 1 {
		t.Errorf("answers %v: want each chat's message answered once", n)
	}
	// Each answer went to the chat its message came from.
	b, err := os.ReadFile(h.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var d struct {
			Routing struct {
				PlatformID string `json:"platform_id"`
			} `json:"routing"`
			Content struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("delivered line %q: %v", line, err)
		}
		if want := strings.TrimPrefix(d.Content.Text, "You said: msg-"); d.Routing.PlatformID != want {
			t.Errorf("%q delivered to %s", d.Content.Text, d.Routing.PlatformID)
		}
	}
	if t.Failed() {
		t.Logf("host:\n%s", h.logs)
	}
}
