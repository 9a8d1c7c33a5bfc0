package hostd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// gateRegistry is the registry of testdata/nanoclaw/command-gate.json
// (harness.mts, gate): agent groups ag-1 and ag-2; the public Telegram
// group chat mg-team (-100123) wired pattern '.' to ag-1 (priority 1) and
// ag-2; the public group chat mg-side (-100200) wired to ag-1 on a
// mention, keeping the rest as context; the owner telegram:1, the global
// admin telegram:2, telegram:3 admin of ag-1, telegram:4 admin of ag-2,
// telegram:5 a member of ag-1. telegram:6 is nobody.
func gateRegistry(t *testing.T) *central {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.group("ag-2", "Other")
	team := c.chat("mg-team", "telegram", "-100123", "Team chat", true, sessiondb.PolicyPublic)
	side := c.chat("mg-side", "telegram", "-100200", "Side chat", true, sessiondb.PolicyPublic)
	c.wire(sessiondb.NewWiring{MessagingGroupID: team.ID, AgentGroupID: "ag-1", EngageMode: sessiondb.EngagePattern, Priority: 1})
	c.wire(sessiondb.NewWiring{MessagingGroupID: team.ID, AgentGroupID: "ag-2", EngageMode: sessiondb.EngagePattern})
	c.wire(sessiondb.NewWiring{MessagingGroupID: side.ID, AgentGroupID: "ag-1", EngageMode: sessiondb.EngageMention,
		IgnoredMessagePolicy: sessiondb.IgnoredAccumulate})
	c.user("telegram:1", sessiondb.RoleOwner)
	c.user("telegram:2", sessiondb.RoleAdmin)
	c.user("telegram:3", "")
	c.user("telegram:4", "")
	for id, group := range map[string]string{"telegram:3": "ag-1", "telegram:4": "ag-2"} {
		_, err := c.reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: id, Role: sessiondb.RoleAdmin, AgentGroupID: group})
		must(t, err)
	}
	c.member("telegram:5", "ag-1")
	return c
}

// allRows is every inbound row of every session, by session and row id,
// with its session.
func (c *central) allRows() map[string]gateRow {
	c.t.Helper()
	out := map[string]gateRow{}
	for _, g := range []string{"ag-1", "ag-2"} {
		for _, s := range c.sessions(g) {
			p, err := c.host.Layout().InboundPath(s.Ref())
			must(c.t, err)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			for _, r := range c.inbound(s.Ref()) {
				var content struct{ Text string }
				must(c.t, json.Unmarshal(r.Content, &content))
				trigger := 0
				if r.Trigger {
					trigger = 1
				}
				out[s.ID+" "+r.ID] = gateRow{AgentGroupID: g, MessagingGroupID: s.MessagingGroupID, Trigger: trigger, Text: content.Text}
			}
		}
	}
	return out
}

// gateRow is one row the gate let through, as both sides are compared.
type gateRow struct {
	AgentGroupID     string `json:"agent_group_id"`
	MessagingGroupID string `json:"messaging_group_id"`
	Trigger          int    `json:"trigger"`
	Text             string `json:"text"`
}

func (r gateRow) String() string {
	return fmt.Sprintf("%s/%s trigger %d %q", r.AgentGroupID, r.MessagingGroupID, r.Trigger, r.Text)
}

// nanoClawRowIn is a messages_in row NanoClaw wrote, with its session's
// groups.
type nanoClawRowIn struct {
	AgentGroupID     string `json:"agent_group_id"`
	MessagingGroupID string `json:"messaging_group_id"`
	Trigger          int    `json:"trigger"`
	Content          string `json:"content"`
}

// NanoClaw's own router (v2.0.64, run by run.sh gate) took each message of
// command-gate.json; ours takes the same messages in the same registry and
// must let through exactly what NanoClaw's did, make the sessions it
// made, and audit nothing either (a gated message counts as taken). Two
// exceptions, both on the fixture's own record: where NanoClaw's denial
// failed (its router opens the session's outbound.db read-only to write
// the answer, so the write throws and the event's remaining wirings are
// skipped), ours wrote the rows NanoClaw wrote before the throw, and
// answered the wiring it failed on; and a non-admin's text NanoClaw's
// gate passed but its agent runner clears its session on ("/clearly") is
// refused as /clear.
func TestCommandGateAsNanoClaw(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "nanoclaw", "command-gate.json"))
	must(t, err)
	var f struct {
		Cases []struct {
			Event    Event `json:"event"`
			Sessions []struct {
				AgentGroupID     string `json:"agent_group_id"`
				MessagingGroupID string `json:"messaging_group_id"`
			} `json:"sessions"`
			MessagesIn  []nanoClawRowIn   `json:"messages_in"`
			MessagesOut []json.RawMessage `json:"messages_out"`
			Dropped     int               `json:"dropped"`
			Error       *string           `json:"error"`
			AgentRunner struct {
				Clears bool `json:"clears"`
			} `json:"agent_runner"`
		} `json:"cases"`
	}
	must(t, json.Unmarshal(b, &f))
	if len(f.Cases) < 30 {
		t.Fatalf("the fixture holds %d cases", len(f.Cases))
	}
	c := gateRegistry(t)
	// The owner and the global admin have admin privilege over both groups.
	allGroupsAdmin := map[string]bool{"1": true, "2": true}
	denied, passed, filtered, clearly := 0, 0, 0, 0
	for _, tc := range f.Cases {
		ev := tc.Event
		name := fmt.Sprintf("%s from %s %q", ev.MessageID, ev.Sender.ID, ev.Text)
		before := c.allRows()
		sessionsBefore := map[string]bool{}
		for _, g := range []string{"ag-1", "ag-2"} {
			for _, s := range c.sessions(g) {
				sessionsBefore[s.ID] = true
			}
		}
		sentBefore := len(c.deliver.sent())
		res := c.route(ev)

		var ours, theirs []string
		for k, r := range c.allRows() {
			if _, ok := before[k]; !ok {
				ours = append(ours, r.String())
			}
		}
		for _, m := range tc.MessagesIn {
			var content struct{ Text string }
			must(t, json.Unmarshal([]byte(m.Content), &content))
			theirs = append(theirs, gateRow{m.AgentGroupID, m.MessagingGroupID, m.Trigger, content.Text}.String())
		}
		slices.Sort(ours)
		slices.Sort(theirs)
		var made, theirMade []string
		for _, g := range []string{"ag-1", "ag-2"} {
			for _, s := range c.sessions(g) {
				if !sessionsBefore[s.ID] {
					made = append(made, s.AgentGroupID+"/"+s.MessagingGroupID)
				}
			}
		}
		for _, s := range tc.Sessions {
			theirMade = append(theirMade, s.AgentGroupID+"/"+s.MessagingGroupID)
		}
		slices.Sort(made)
		slices.Sort(theirMade)
		if !slices.Equal(made, theirMade) {
			t.Errorf("%s: sessions made %v, NanoClaw's %v", name, made, theirMade)
		}
		if len(tc.MessagesOut) != 0 || tc.Dropped != 0 {
			t.Fatalf("%s: the fixture has answers or drops this test does not expect: %+v", name, tc)
		}
		if res.Outcome == RouteDropped {
			t.Errorf("%s: dropped (%s); NanoClaw audits nothing", name, res.Reason)
		}
		answers := c.deliver.sent()[sentBefore:]
		if tc.Error == nil && tc.AgentRunner.Clears && len(theirs) > 0 && !allGroupsAdmin[ev.Sender.ID] {
			// NanoClaw's gate let it through to an agent runner that
			// clears its session on it: ours refuses it as /clear.
			clearly++
			if res.Outcome != RouteDenied || res.Reason != "/clear" || len(ours) != 0 || len(answers) != 1 {
				t.Errorf("%s: outcome %s %s, rows %v, %d answers; NanoClaw's agent runner clears on it", name, res.Outcome, res.Reason, ours, len(answers))
			}
			continue
		}
		if tc.Error == nil {
			if !slices.Equal(ours, theirs) {
				t.Errorf("%s: rows %v, NanoClaw's %v", name, ours, theirs)
			}
			if len(answers) != 0 {
				t.Errorf("%s: answered %+v; NanoClaw answers nothing", name, answers)
			}
			if len(ours) == 0 {
				filtered++
				if res.Outcome != RouteFiltered || res.Reason != strings.ToLower(strings.Fields(ev.Text)[0]) {
					t.Errorf("%s: outcome %s %s", name, res.Outcome, res.Reason)
				}
			} else {
				passed++
			}
			continue
		}
		// NanoClaw's denial threw: what it wrote before is ours too, and
		// the wiring it failed on is answered.
		if *tc.Error != "attempt to write a readonly database" {
			t.Fatalf("%s: NanoClaw failed with %q", name, *tc.Error)
		}
		denied++
		for _, r := range theirs {
			if !slices.Contains(ours, r) {
				t.Errorf("%s: NanoClaw wrote %s, we did not (ours %v)", name, r, ours)
			}
		}
		// The wiring NanoClaw failed on is the first (by priority) it did
		// not write: we wrote nothing there either, and answered.
		ws, err := c.reg.ListWirings(ctxb, sessiondb.WiringFilter{MessagingGroupID: res.MessagingGroupID})
		must(t, err)
		threw := ""
		for _, w := range ws {
			if !slices.ContainsFunc(tc.MessagesIn, func(m nanoClawRowIn) bool {
				return m.AgentGroupID == w.AgentGroupID
			}) {
				threw = w.AgentGroupID
				break
			}
		}
		for _, r := range ours {
			if strings.HasPrefix(r, threw+"/") {
				t.Errorf("%s: we wrote %s, where NanoClaw denied", name, r)
			}
		}
		if len(answers) != 1 {
			t.Errorf("%s: %d answers (outcome %s, rows %v); want one", name, len(answers), res.Outcome, ours)
			continue
		}
		if a := answers[0]; a.Ref.AgentGroupID != threw || a.Row.Routing != (mailbox.Routing{ChannelType: "telegram", PlatformID: ev.PlatformID}) ||
			!strings.HasPrefix(string(a.Row.Content), `{"text":"Permission denied: /`) {
			t.Errorf("%s: answered %+v %s", name, a.Row.Routing, a.Row.Content)
		}
	}
	if denied < 10 || passed < 10 || filtered < 8 || clearly < 2 {
		t.Errorf("denied %d, passed %d, filtered %d, /clear… %d: the fixture lost its cases", denied, passed, filtered, clearly)
	}
}

// telegramEvent is a message to Telegram chat chat from user from.
func telegramEvent(id, chat, from, text string) Event {
	return Event{ChannelType: "telegram", PlatformID: chat, MessageID: id, Sender: Sender{ID: from}, Text: text, IsGroup: true}
}

// denials returns the texts of the answers sent since the n-th row, with
// where each went.
func (c *central) denials(n int) []string {
	c.t.Helper()
	var out []string
	for _, s := range c.deliver.sent()[n:] {
		var content map[string]string
		must(c.t, json.Unmarshal(s.Row.Content, &content))
		out = append(out, fmt.Sprintf("%s %s/%s/%s %s: %s", s.Ref.AgentGroupID, s.Row.Routing.ChannelType, s.Row.Routing.PlatformID,
			s.Row.Routing.ThreadID, s.Row.Kind, content["text"]))
	}
	return out
}

// The command gate, case by case: a member's /clear is refused and the
// chat told as NanoClaw words it, in the chat and thread it came from,
// without a row or a wake; the group's admin's /clear reaches the agent;
// /login and /remote-control reach nobody's agent, the owner's included,
// and nobody is told; text that starts with '/' but is no gated command
// goes through, unless NanoClaw's agent runner would clear on it; with
// two agent groups on the chat each decides for its own (and the chat is
// told once when both refuse); an answer that cannot be sent still
// refuses the command.
func TestCommandGate(t *testing.T) {
	c := gateRegistry(t)
	session := func(g string) sessiondb.AgentSession {
		t.Helper()
		ss := c.sessions(g)
		if len(ss) != 1 {
			t.Fatalf("%s has sessions %+v", g, ss)
		}
		return ss[0]
	}
	rowsOf := func(g string) []string {
		t.Helper()
		var out []string
		for _, s := range c.sessions(g) {
			p, err := c.host.Layout().InboundPath(s.Ref())
			must(t, err)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			for _, r := range c.inbound(s.Ref()) {
				out = append(out, r.ID)
			}
		}
		return out
	}
	// Only ag-1 on this chat: the member's /clear.
	solo := c.chat("mg-solo", "telegram", "-100300", "Solo", true, sessiondb.PolicyPublic)
	c.wire(sessiondb.NewWiring{MessagingGroupID: solo.ID, AgentGroupID: "ag-1", EngageMode: sessiondb.EngagePattern})
	ev := telegramEvent("m1", "-100300", "5", "/clear")
	ev.ThreadID = "77"
	res := c.route(ev)
	if res.Outcome != RouteDenied || res.Reason != "/clear" || len(res.Deliveries) != 1 || res.Deliveries[0].CommandGate != CommandDenied ||
		res.Deliveries[0].Written || res.Deliveries[0].Woken || len(res.Warnings) != 0 {
		t.Fatalf("member's /clear: %+v", res)
	}
	s := session("ag-1")
	if got := c.denials(0); !slices.Equal(got, []string{"ag-1 telegram/-100300/77 chat: Permission denied: /clear requires admin access."}) {
		t.Fatalf("answers %q", got)
	}
	if sent := c.deliver.sent(); sent[0].Ref != s.Ref() || !strings.HasPrefix(sent[0].Row.ID, "deny-") {
		t.Errorf("answer %+v for session %s", sent[0], s.ID)
	}
	if rows := rowsOf("ag-1"); len(rows) != 0 || c.waker.count(s.Ref()) != 0 {
		t.Fatalf("rows %v, wakes %d", rows, c.waker.count(s.Ref()))
	}
	if n := c.centralQuery("SELECT COUNT(*) FROM unregistered_senders")[0][0]; n != int64(0) {
		t.Errorf("audited %v", n)
	}

	// The admin of ag-1 clears it.
	res = c.route(telegramEvent("m2", "-100300", "3", "/clear"))
	if res.Outcome != RouteRouted || !res.Deliveries[0].Written || !res.Deliveries[0].Woken || res.Deliveries[0].CommandGate != "" {
		t.Fatalf("admin's /clear: %+v", res)
	}
	if rows := rowsOf("ag-1"); !slices.Equal(rows, []string{InboundID("m2", "mg-solo", "ag-1")}) {
		t.Fatalf("rows %v", rows)
	}

	// Filtered for everyone, the owner too; nobody is told.
	n := len(c.deliver.sent())
	for i, tc := range []struct{ from, text, command string }{
		{"1", "/login", "/login"}, {"1", "/remote-control", "/remote-control"}, {"5", "/LOGIN now", "/login"},
		{"6", "/remote-control start", "/remote-control"}, {"3", "/help", "/help"},
	} {
		res := c.route(telegramEvent(fmt.Sprint("f", i), "-100300", tc.from, tc.text))
		if res.Outcome != RouteFiltered || res.Reason != tc.command || res.Deliveries[0].CommandGate != CommandFiltered || res.Deliveries[0].Written {
			t.Errorf("%s from %s: %+v", tc.text, tc.from, res)
		}
	}
	if got := c.denials(n); len(got) != 0 {
		t.Errorf("filtered commands answered: %q", got)
	}
	if rows := rowsOf("ag-1"); len(rows) != 1 {
		t.Fatalf("filtered commands written: %v", rows)
	}

	// Not gated commands, from a member.
	for i, text := range []string{"/usr/bin is where it lives", "/compactly", "/start", "hello /clear"} {
		res := c.route(telegramEvent(fmt.Sprint("p", i), "-100300", "5", text))
		if res.Outcome != RouteRouted || !res.Deliveries[0].Written || res.Deliveries[0].CommandGate != "" {
			t.Errorf("%q: %+v", text, res)
		}
	}

	// NanoClaw's agent runner clears on any text that starts with /clear:
	// so is it refused as /clear from a member, and passed from the admin.
	n = len(c.deliver.sent())
	res = c.route(telegramEvent("cl1", "-100300", "5", "/Clearly not"))
	if res.Outcome != RouteDenied || res.Reason != "/clear" {
		t.Errorf("member's /Clearly: %+v", res)
	}
	if got := c.denials(n); !slices.Equal(got, []string{"ag-1 telegram/-100300/ chat: Permission denied: /clear requires admin access."}) {
		t.Errorf("answers %q", got)
	}
	if res = c.route(telegramEvent("cl2", "-100300", "3", "/clear-all")); res.Outcome != RouteRouted {
		t.Errorf("admin's /clear-all: %+v", res)
	}

	// Two agent groups: each gate decides for its own group.
	n = len(c.deliver.sent())
	res = c.route(telegramEvent("t1", "-100123", "4", "/compact now"))
	if res.Outcome != RouteRouted || len(res.Deliveries) != 2 || res.Deliveries[0].AgentGroupID != "ag-1" ||
		res.Deliveries[0].CommandGate != CommandDenied || !res.Deliveries[1].Written {
		t.Fatalf("ag-2's admin's /compact: %+v", res)
	}
	if got := c.denials(n); !slices.Equal(got, []string{"ag-1 telegram/-100123/ chat: Permission denied: /compact requires admin access."}) {
		t.Errorf("answers %q", got)
	}
	// Refused by both: the chat is told once.
	res = c.route(telegramEvent("t2", "-100123", "", "/files"))
	if res.Outcome != RouteDenied || res.Reason != "/files" || res.Deliveries[1].CommandGate != CommandDenied || len(c.denials(n)) != 2 {
		t.Errorf("an unidentified sender's /files: %+v, answers %q", res, c.denials(n))
	}

	// No deliverer: the answer cannot go out, the command is refused all
	// the same.
	c.router.cfg.Deliverer = nil
	res = c.route(telegramEvent("m3", "-100300", "5", "/cost"))
	if res.Outcome != RouteDenied || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "/cost denied, but the answer was not sent") {
		t.Fatalf("without a deliverer: %+v", res)
	}
	if rows := rowsOf("ag-1"); slices.Contains(rows, InboundID("m3", "mg-solo", "ag-1")) {
		t.Fatalf("written without a deliverer: %v", rows)
	}
}

// What counts as which command is NanoClaw's reading of the text (its
// trim and \s are JavaScript's; only ASCII is lower-cased): see
// slashCommand. TestCommandGateAsNanoClaw holds NanoClaw's own verdicts.
func TestSlashCommand(t *testing.T) {
	for text, want := range map[string]string{
		"/clear": "/clear", " \t/CLEAR it": "/clear", "\u00a0/Cost": "/cost", "\ufeff/files": "/files", "/files\u00a0x": "/files",
		"/context\u2028more": "/context", "\u0085/clear": "", "/f\u0130les": "/f\u0130les", "x /clear": "", "": "", "/": "/",
	} {
		if got := slashCommand(text); got != want {
			t.Errorf("slashCommand(%q) = %q, want %q", text, got, want)
		}
	}
}
