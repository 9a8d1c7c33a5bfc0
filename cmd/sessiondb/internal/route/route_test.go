package route_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// setup makes a registry with one wired public chat.
func setup(t *testing.T) *clitest.ControlPlane {
	t.Helper()
	p := clitest.NewControlPlane(t, groups...)
	p.WireHelper([]string{"--group-chat", "--policy", "public"}, "--engage", "mention")
	return p
}

// Routing in this process (no host running): one result per non-blank
// line, in order, printed as JSON lines; a malformed line names its field
// and fails the command with its code after the others were routed.
func TestRouteDirect(t *testing.T) {
	p := setup(t)
	lines := `{"channel_type":"telegram","platform_id":"chat-1","message_id":"a","text":"@bot hi","is_group":true,"is_mention":true}
{"channel_type":"telegram","platform_id":"chat-1","message_id":"b","text":"chatter","is_group":true}

{"channel_type":"telegram","platform_id":"chat-1","message_id":"c/../x","text":"x"}
{"channel_type":"telegram","platform_id":"nowhere","message_id":"d","text":"x","is_group":true}
`
	in := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(in, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(context.Background(), clitest.Options{}, p.Args("route", in, "--json"), groups...)
	if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "1 of 4 line(s) failed; the first, line 4: event: message_id") {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	var got []hostd.LineResult
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var res hostd.LineResult
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, res)
	}
	if len(got) != 4 || got[0].Line != 1 || got[1].Line != 2 || got[2].Line != 4 || got[3].Line != 5 {
		t.Fatalf("results %+v", got)
	}
	if got[0].Message.Outcome != hostd.RouteRouted || got[0].Message.Deliveries[0].Woken {
		t.Fatalf("line 1 (no host to wake it): %+v", got[0].Message)
	}
	if got[1].Message.Outcome != hostd.RouteDropped || got[1].Message.Reason != "no_agent_engaged" {
		t.Fatalf("line 2: %+v", got[1].Message)
	}
	if got[2].Code != "invalid" || !strings.Contains(got[2].Error, "message_id") {
		t.Fatalf("line 4: %+v", got[2])
	}
	if got[3].Message.Outcome != hostd.RouteIgnored || got[3].Message.Reason != "not_mentioned" {
		t.Fatalf("line 5: %+v", got[3].Message)
	}
	// The human form, from standard input, says the same in words.
	r = clitest.Run(context.Background(), clitest.Options{Stdin: strings.NewReader(`{"channel_type":"telegram","platform_id":"chat-1","message_id":"e","text":"@bot \u001b[2J","is_group":true,"is_mention":true}` + "\n")},
		p.Args("route", "-"), groups...)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "line 1: e routed to ag-helper/sess-") || !strings.Contains(r.Stdout, "(engage)") {
		t.Fatalf("human: exit %d %q %s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(p.Data, "ag-helper")); err != nil {
		t.Fatal(err)
	}
}

func TestRouteRefusals(t *testing.T) {
	p := setup(t)
	missing := []string{"--central", filepath.Join(t.TempDir(), "none.db"), "--data", t.TempDir()}
	clitest.Fails(t, []clitest.Failure{
		{Name: "no registry", Args: append([]string{"route", "--direct", "/dev/null"}, missing...), Code: cli.ExitNotFound, Want: "no central registry"},
		{Name: "no file", Args: p.Args("route", "/nonexistent/events.jsonl"), Code: cli.ExitNotFound, Want: "events.jsonl"},
		{Name: "host and direct", Args: p.Args("route", "--host", "/tmp/x.sock", "--direct"), Code: cli.ExitInvalid, Want: "exclude"},
		{Name: "no host there", Args: p.Args("route", "--host", filepath.Join(t.TempDir(), "host.sock"), "/dev/null"), Code: cli.ExitNotFound, Want: "no host is serving"},
		{Name: "non-loopback host", Args: p.Args("route", "--host", "192.0.2.1:80", "/dev/null"), Code: cli.ExitInvalid, Want: "loopback"},
		{Name: "bad deliverer", Args: p.Args("route", "--direct", "--deliver", "smtp:x", "/dev/null"), Code: cli.ExitInvalid, Want: "exec:CMD or webhook:URL"},
		{Name: "bad DM opener", Args: p.Args("route", "--direct", "--dm-opener", "smtp:x", "/dev/null"), Code: cli.ExitInvalid, Want: "--dm-opener"},
		{Name: "DM opener with a host", Args: p.Args("route", "--host", "/tmp/x.sock", "--dm-opener", "exec:true", "/dev/null"), Code: cli.ExitInvalid, Want: "--dm-opener are for --direct"},
	}, groups...)
}

// route --direct with --dm-opener: an admin on Slack gets the approval
// card in the DM chat the opener opened (which is then cached); without
// it the line warns that the card cannot be delivered and nothing is
// cached.
func TestRouteDirectDMOpener(t *testing.T) {
	p := clitest.NewControlPlane(t, groups...)
	p.Run("admin", "groups", "create", "Helper", "--id", "ag-helper")
	p.Run("admin", "channels", "create", "slack", "C1", "--id", "mg-s", "--group-chat", "--policy", "request_approval")
	p.Run("admin", "wire", "mg-s", "ag-helper", "--engage", "pattern")
	p.Run("admin", "roles", "grant", "slack:U1", "owner")
	dir := t.TempDir()
	out := filepath.Join(dir, "cards.jsonl")
	opener := filepath.Join(dir, "open-dm.sh")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\necho \"D-$SESSIONDB_DM_HANDLE\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	event := func(id string) string {
		return `{"channel_type":"slack","platform_id":"C1","message_id":"` + id + `","sender":{"id":"U9","name":"Eve"},"text":"hi","is_group":true}`
	}

	res := p.Route(event("m1"), "--direct", "--deliver", "exec:cat >> "+out)
	if m := res.Message; m.ApprovalID != "" || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "no DM opener is configured") {
		t.Fatalf("without an opener: %+v", m)
	}
	if n := sqlitetest.QueryFile(t, p.Central, "SELECT COUNT(*) FROM user_dms"); n[0][0] != int64(0) {
		t.Fatalf("%v DMs cached without an opener", n[0][0])
	}

	res = p.Route(event("m2"), "--direct", "--deliver", "exec:cat >> "+out, "--dm-opener", "exec:"+opener)
	if res.Message.ApprovalID == "" || len(res.Message.Warnings) != 0 {
		t.Fatalf("with an opener: %+v", res.Message)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var card hostd.DeliveryEnvelope
	if err := json.Unmarshal(b, &card); err != nil || card.Routing.ChannelType != "slack" || card.Routing.PlatformID != "D-U1" {
		t.Fatalf("card %s: %v", b, err)
	}
}

// A stranger in a public chat addresses the agent with its runtime's
// commands: /clear is refused and answered through --deliver, /login is
// dropped unanswered, and neither reaches a mailbox; without a deliverer
// the refusal stands and the line says the answer was not sent.
func TestRouteDirectCommandGate(t *testing.T) {
	p := setup(t)
	out := filepath.Join(t.TempDir(), "sent.jsonl")
	event := func(id, text string) string {
		return `{"channel_type":"telegram","platform_id":"chat-1","message_id":"` + id + `","sender":{"id":"666","name":"Mallory"},"text":"` +
			text + `","is_group":true,"is_mention":true}`
	}
	res := p.Route(event("c1", "/clear"), "--direct", "--deliver", "exec:cat >> "+out)
	if m := res.Message; m.Outcome != hostd.RouteDenied || m.Reason != "/clear" || len(m.Warnings) != 0 || m.Deliveries[0].Written {
		t.Fatalf("/clear: %+v", m)
	}
	sent := delivered(t, out)
	if len(sent) != 1 || sent[0].Routing.PlatformID != "chat-1" || string(sent[0].Content) != `{"text":"Permission denied: /clear requires admin access."}` {
		t.Fatalf("sent %+v", sent)
	}
	res = p.Route(event("c2", "/login"), "--direct", "--deliver", "exec:cat >> "+out)
	if m := res.Message; m.Outcome != hostd.RouteFiltered || m.Reason != "/login" || len(delivered(t, out)) != 1 {
		t.Fatalf("/login: %+v", m)
	}
	r := clitest.Run(context.Background(), clitest.Options{Stdin: strings.NewReader(event("c3", "/compact") + "\n")}, p.Args("route", "--direct", "-"), groups...)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "line 1: c3 denied: /compact; warning: wiring ") ||
		!strings.Contains(r.Stdout, "/compact denied, but the answer was not sent: no channel deliverer is configured") {
		t.Fatalf("without a deliverer: exit %d %q %s", r.Code, r.Stdout, r.Stderr)
	}
	if n := sqlitetest.QueryFile(t, p.Central, "SELECT COUNT(*) FROM unregistered_senders"); n[0][0] != int64(0) {
		t.Errorf("%v gated messages audited", n[0][0])
	}
	matches, _ := filepath.Glob(filepath.Join(p.Data, "ag-helper", "*", "inbound.db"))
	for _, m := range matches {
		if rows := sqlitetest.QueryFile(t, m, "SELECT COUNT(*) FROM messages_in"); rows[0][0] != int64(0) {
			t.Errorf("%s holds %v rows", m, rows[0][0])
		}
	}
}
