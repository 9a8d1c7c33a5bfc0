package hostd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentSession routes one message into a new session of ag-1 in chat
// "chat-1" (wired, public) and opens its agent side.
func (c *central) agentSession() (sessiondb.AgentSession, *mailbox.Agent) {
	c.t.Helper()
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	res := c.route(msg("m1", "hi"))
	s, err := c.reg.GetAgentSession(ctxb, res.Deliveries[0].SessionID)
	must(c.t, err)
	dir, _ := c.host.Layout().SessionDir(s.Ref())
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{Now: c.clk.Now, PollInterval: 10 * time.Millisecond})
	must(c.t, err)
	c.t.Cleanup(func() { a.Close() })
	return s, a
}

// deliverer is the daemon's deliverer over the router, in front of the
// recording channel.
func (c *central) deliverer() mailbox.Deliverer {
	return &centralDeliverer{r: c.router, host: &HostDeliverer{Host: c.host, Next: c.deliver}, next: c.deliver}
}

func (c *central) send(a *mailbox.Agent, id string, routing mailbox.Routing, content any) {
	c.t.Helper()
	raw, err := mailbox.MarshalContent(content)
	must(c.t, err)
	kind := mailbox.KindChat
	if m, ok := content.(map[string]any); ok && m["action"] != nil {
		kind = mailbox.KindSystem
	}
	_, err = a.Send(ctxb, mailbox.OutboundMessage{ID: id, Kind: kind, Content: raw, Routing: routing})
	must(c.t, err)
}

func (c *central) drain(ref mailbox.SessionRef) mailbox.DrainResult {
	c.t.Helper()
	res, err := c.host.Drain(ctxb, ref, c.deliverer())
	must(c.t, err)
	return res
}

// expireAfter moves the clock past ttl and runs the router's expiry sweep.
func (c *central) expireAfter(ttl time.Duration) ExpiryResult {
	c.t.Helper()
	c.clk.Advance(ttl + time.Second)
	ex, err := c.router.Expire(ctxb)
	must(c.t, err)
	return ex
}

// The delivery ACL is the registry's (spec A8): the session's own chat
// always; another chat only with a destination; another agent group only
// with an agent destination. A refused send fails at once and the agent
// is told why in its inbound (not silently marked failed); a destination
// removed from the registry refuses even though the projection still lists
// it.
func TestCentralDeliveryACL(t *testing.T) {
	c := newCentral(t)
	s, a := c.agentSession()
	other := c.chat("mg-2", "telegram", "other", "Other", true, sessiondb.PolicyStrict)
	c.chat("mg-3", "telegram", "allowed", "Allowed", true, sessiondb.PolicyStrict)
	_, err := c.reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag-1", LocalName: "allowed", TargetType: sessiondb.TargetChannel, TargetID: "mg-3"})
	must(t, err)
	c.group("ag-2", "Peer")

	c.send(a, "out-own", mailbox.Routing{ChannelType: "telegram", PlatformID: "chat-1"}, map[string]any{"text": "to my chat"})
	c.send(a, "out-other", mailbox.Routing{ChannelType: "telegram", PlatformID: other.PlatformID}, map[string]any{"text": "sneaky"})
	c.send(a, "out-allowed", mailbox.Routing{ChannelType: "telegram", PlatformID: "allowed"}, map[string]any{"text": "permitted"})
	c.send(a, "out-peer", mailbox.Routing{ChannelType: "agent", PlatformID: "ag-2"}, map[string]any{"text": "hi peer"})
	res := c.drain(s.Ref())
	if res.Delivered != 2 || res.Failed != 2 {
		t.Fatalf("drain %+v", res)
	}
	var ids []string
	for _, x := range c.deliver.sent() {
		ids = append(ids, x.Row.ID)
	}
	if strings.Join(ids, ",") != "out-own,out-allowed" {
		t.Fatalf("delivered %v", ids)
	}
	notes := notifications(c, s.Ref())
	if len(notes) != 2 || !strings.Contains(notes[0], "not allowed to send to telegram/other") || !strings.Contains(notes[1], "not allowed to send to agent group ag-2") {
		t.Fatalf("notifications %q", notes)
	}

	// Removed from the registry: refused although the projection still
	// has it (no re-projection ran).
	must(t, c.reg.RemoveDestination(ctxb, "ag-1", "allowed"))
	c.send(a, "out-late", mailbox.Routing{ChannelType: "telegram", PlatformID: "allowed"}, map[string]any{"text": "again"})
	if res := c.drain(s.Ref()); res.Failed != 1 {
		t.Fatalf("drain after removal %+v", res)
	}
	// With an agent destination the peer gets the message in a session of
	// its own group, made for it.
	_, err = c.reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag-1", LocalName: "peer", TargetType: sessiondb.TargetAgent, TargetID: "ag-2"})
	must(t, err)
	c.send(a, "out-peer-2", mailbox.Routing{ChannelType: "agent", PlatformID: "ag-2"}, map[string]any{"text": "hello peer"})
	if res := c.drain(s.Ref()); res.Delivered != 1 {
		t.Fatalf("drain to peer %+v", res)
	}
	peers := c.sessions("ag-2")
	if len(peers) != 1 {
		t.Fatalf("peer sessions %+v", peers)
	}
	rows := c.inbound(peers[0].Ref())
	if len(rows) != 1 || rows[0].SourceSessionID != s.ID || rows[0].Routing.ChannelType != "agent" || rows[0].Routing.PlatformID != "ag-1" {
		t.Fatalf("peer rows %+v", rows)
	}
}

// notifications returns the texts of the host's notifications in a
// session, oldest first.
func notifications(c *central, ref mailbox.SessionRef) []string {
	c.t.Helper()
	var out []string
	rows := c.inbound(ref)
	for i := len(rows) - 1; i >= 0; i-- {
		var n struct{ Text, Sender string }
		if json.Unmarshal(rows[i].Content, &n) == nil && n.Sender == "system" {
			out = append(out, n.Text)
		}
	}
	return out
}

// A question card round-trips (spec A7.1): delivering it records the
// pending question, the click's option index picks the option's value,
// the answer reaches the agent's waiter as a system row, and a second
// click finds nothing; a click after QuestionTTL writes nothing, and the
// expiry sweep removes what is left.
func TestCentralQuestionRoundTrip(t *testing.T) {
	c := newCentral(t)
	s, a := c.agentSession()
	c.send(a, "q-1", mailbox.Routing{ChannelType: "telegram", PlatformID: "chat-1"}, map[string]any{"type": "ask_question",
		"questionId": "q-1", "title": "Deploy?", "question": "Ship it now?", "options": []any{"Yes", map[string]string{"label": "Later", "value": "later"}}})
	if res := c.drain(s.Ref()); res.Delivered != 1 {
		t.Fatalf("drain %+v", res)
	}
	q, err := c.reg.GetQuestion(ctxb, "q-1")
	must(t, err)
	if q.SessionID != s.ID || q.MessageOutID != "q-1" || q.Title != "Deploy?" || len(q.Options) != 2 || q.Options[1].Value != "later" || q.PlatformID != "chat-1" {
		t.Fatalf("pending question %+v", q)
	}
	got := make(chan string, 1)
	go func() {
		resp, err := a.AwaitQuestionResponse(ctxb, "q-1", 10*time.Second)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(resp.Content)
	}()
	cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "42", Action: "ncq:q-1:1"})
	if cr.Outcome != ClickAnswered || cr.Value != "later" || cr.SessionID != s.ID {
		t.Fatalf("click %+v", cr)
	}
	if answer := <-got; answer != `{"type":"question_response","questionId":"q-1","selectedOption":"later","userId":"telegram:42"}` {
		t.Fatalf("the agent got %s", answer)
	}
	_, err = c.router.Click(ctxb, Click{Type: "click", ChannelType: "telegram", UserID: "42", Action: "ncq:q-1:0"})
	wantCode(t, err, sessiondb.ENOTFOUND)

	// Late: the click after the TTL writes nothing.
	c.send(a, "q-2", mailbox.Routing{ChannelType: "telegram", PlatformID: "chat-1"}, map[string]any{"type": "ask_question",
		"questionId": "q-2", "title": "Still there?", "question": "?", "options": []string{"Yes"}})
	c.drain(s.Ref())
	before := len(c.inbound(s.Ref()))
	c.clk.Advance(sessiondb.QuestionTTL + time.Second)
	if cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "42", CardID: "q-2", Option: intp(0)}); cr.Outcome != ClickExpired {
		t.Fatalf("late click %+v", cr)
	}
	if n := len(c.inbound(s.Ref())); n != before {
		t.Fatalf("a late click wrote %d rows", n-before)
	}
	// The sweep deletes expired questions.
	c.send(a, "q-3", mailbox.Routing{ChannelType: "telegram", PlatformID: "chat-1"}, map[string]any{"type": "ask_question",
		"questionId": "q-3", "title": "And now?", "question": "?", "options": []string{"Yes"}})
	c.drain(s.Ref())
	if ex := c.expireAfter(sessiondb.QuestionTTL); ex.Questions != 1 {
		t.Fatalf("expiry %+v", ex)
	}
	_, err = c.reg.GetQuestion(ctxb, "q-3")
	wantCode(t, err, sessiondb.ENOTFOUND)
}

// Action approvals (spec A7.2 with its [IMP]s): a system action that
// needs approval sends a card to an admin's DM and waits; only a user with
// admin privilege over the group decides; the agent is told the outcome;
// an unanswered request expires after ApprovalTTL, the agent is told and
// the card edited.
func TestCentralActionApproval(t *testing.T) {
	c := newCentral(t)
	s, a := c.agentSession()
	// Nobody to ask: the agent is told at once and no row is left.
	c.send(a, "sys-1", mailbox.Routing{}, map[string]any{"action": "install_packages", "apt": []string{"jq"}, "reason": "parse json"})
	c.drain(s.Ref())
	if notes := notifications(c, s.Ref()); len(notes) != 1 || notes[0] != "install_packages failed: no owner or admin configured to approve." {
		t.Fatalf("notes %q", notes)
	}

	c.user("telegram:boss", sessiondb.RoleAdmin)
	applied := 0
	c.router.cfg.Actions = map[string]ActionHandler{"add_mcp_server": func(_ context.Context, got sessiondb.AgentSession, payload json.RawMessage) (string, error) {
		if got.ID != s.ID || !strings.Contains(string(payload), `"name":"search"`) {
			return "", errors.New("wrong request")
		}
		applied++
		return "search is installed", nil
	}}
	c.send(a, "sys-2", mailbox.Routing{}, map[string]any{"action": "install_packages", "apt": []string{"jq"}, "reason": "parse json"})
	c.send(a, "sys-3", mailbox.Routing{}, map[string]any{"action": "add_mcp_server", "name": "search", "command": "srv"})
	c.drain(s.Ref())
	pending, err := c.reg.ListApprovals(ctxb, sessiondb.ApprovalFilter{Status: sessiondb.ApprovalPending})
	must(t, err)
	if len(pending) != 2 || pending[0].AgentGroupID != "ag-1" || pending[0].PlatformID != "boss" || pending[0].PlatformMessageID == "" {
		t.Fatalf("pending %+v", pending)
	}
	cards := c.deliver.cards(t)
	if len(cards) != 2 || cards[0].Title != "📦 Install packages" || !strings.Contains(cards[0].Question, "apt: jq") {
		t.Fatalf("cards %+v", cards)
	}
	if pending[0].Action != "install_packages" {
		pending[0], pending[1] = pending[1], pending[0]
	}
	// A member cannot decide; the admin can.
	c.member("telegram:42", "ag-1")
	if cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "42", CardID: pending[0].ApprovalID, Option: intp(0)}); cr.Outcome != ClickUnauthorized {
		t.Fatalf("member click %+v", cr)
	}
	if cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "boss", CardID: pending[0].ApprovalID, Option: intp(0)}); cr.Outcome != ClickApproved {
		t.Fatalf("approve %+v", cr)
	}
	if cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "boss", CardID: pending[1].ApprovalID, Value: "approve"}); cr.Outcome != ClickApproved {
		t.Fatalf("approve mcp %+v", cr)
	}
	notes := notifications(c, s.Ref())
	if applied != 1 || len(notes) != 3 || notes[1] != "Your install_packages was approved, but no handler is installed to apply it." || notes[2] != "search is installed" {
		t.Fatalf("applied %d, notes %q", applied, notes)
	}

	// Expiry.
	c.send(a, "sys-4", mailbox.Routing{}, map[string]any{"action": "install_packages", "npm": []string{"left-pad"}})
	c.drain(s.Ref())
	if ex := c.expireAfter(sessiondb.ApprovalTTL); ex.Approvals != 1 {
		t.Fatalf("expiry %+v", ex)
	}
	expired, err := c.reg.ListApprovals(ctxb, sessiondb.ApprovalFilter{Status: sessiondb.ApprovalExpired})
	must(t, err)
	if len(expired) != 1 {
		t.Fatalf("expired %+v", expired)
	}
	notes = notifications(c, s.Ref())
	if notes[len(notes)-1] != "Your install_packages request expired without an answer from an admin." {
		t.Fatalf("notes %q", notes)
	}
	last := c.deliver.sent()[len(c.deliver.sent())-1].Row
	if !strings.Contains(string(last.Content), `"operation":"edit"`) || !strings.Contains(string(last.Content), expired[0].PlatformMessageID) {
		t.Fatalf("card not edited: %s", last.Content)
	}
	// A click after the expiry changes nothing.
	if cr := c.click(Click{Type: "click", ChannelType: "telegram", UserID: "boss", CardID: expired[0].ApprovalID, Option: intp(0)}); cr.Outcome != ClickExpired {
		t.Fatalf("late click %+v", cr)
	}
}

// With a Router the daemon writes the projections at every wake (from the
// registry as it is then, not as it was), records the spawn, and keeps
// container_status in step with the Runtime.
func TestDaemonWakeProjectsAndTracksContainers(t *testing.T) {
	c := newCentral(t)
	rt := newFakeRuntime()
	d, err := New(c.host, Config{Router: c.router, Waker: rt, Runtime: rt, Deliverer: c.deliver})
	must(t, err)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	res := c.route(msg("m1", "hi"))
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: res.Deliveries[0].SessionID}
	if !res.Deliveries[0].Woken || !rt.Running(ref) {
		t.Fatalf("not woken through the daemon: %+v", res.Deliveries[0])
	}
	s, err := c.reg.GetAgentSession(ctxb, ref.SessionID)
	must(t, err)
	if s.ContainerStatus != sessiondb.ContainerRunning {
		t.Fatalf("container status %q", s.ContainerStatus)
	}
	// A destination added without re-projection reaches the folder at
	// the next spawn.
	c.chat("mg-2", "telegram", "side", "Side", true, sessiondb.PolicyStrict)
	_, err = c.reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag-1", LocalName: "side", TargetType: sessiondb.TargetChannel, TargetID: "mg-2"})
	must(t, err)
	// The agent answers and exits; with nothing due the sweep leaves the
	// session asleep and the registry sees the container stopped.
	dir, _ := c.host.Layout().SessionDir(ref)
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{Now: c.clk.Now})
	must(t, err)
	must(t, a.MarkCompleted(ctxb, "m1:mg-1:ag-1"))
	a.Close()
	rt.mu.Lock()
	delete(rt.running, ref)
	rt.mu.Unlock()
	d.tick(ctxb)
	s, _ = c.reg.GetAgentSession(ctxb, ref.SessionID)
	if s.ContainerStatus != sessiondb.ContainerStopped {
		t.Fatalf("after exit: container status %q", s.ContainerStatus)
	}
	c.clk.Advance(time.Minute)
	c.route(msg("m2", "again"))
	if !rt.Running(ref) {
		t.Fatal("not woken again")
	}
	dests, err := c.host.Destinations(ctxb, ref)
	must(t, err)
	if len(dests) != 2 {
		t.Fatalf("spawn did not project the registry's destinations: %+v", dests)
	}
	s, _ = c.reg.GetAgentSession(ctxb, ref.SessionID)
	if s.ContainerStatus != sessiondb.ContainerRunning || !s.LastActive.Equal(c.clk.Now()) {
		t.Fatalf("spawn not recorded: %+v", s)
	}
	if got := sqlitetest.QueryFile(t, dir+"/inbound.db", "SELECT platform_id FROM session_routing"); got[0][0] != "chat-1" {
		t.Fatalf("routing %v", got)
	}
}

// Re-projection rewrites the destinations of every active session of the
// group that has a folder, and leaves closed sessions alone.
func TestReproject(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	var refs []mailbox.SessionRef
	for _, p := range []string{"a", "b", "c"} {
		c.wiredChat("mg-"+p, p, "Chat "+p, sessiondb.PolicyPublic)
		res := c.route(Event{ChannelType: "telegram", PlatformID: p, MessageID: "m" + p, Text: "x", IsGroup: true})
		refs = append(refs, mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: res.Deliveries[0].SessionID})
	}
	must(t, c.reg.CloseSession(ctxb, refs[2].SessionID))
	c.group("ag-2", "Peer")
	_, err := c.reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag-1", LocalName: "peer", TargetType: sessiondb.TargetAgent, TargetID: "ag-2"})
	must(t, err)
	res, err := c.router.Reproject(ctxb, "ag-1")
	must(t, err)
	if res.Sessions != 2 {
		t.Fatalf("reproject %+v", res)
	}
	for i, ref := range refs {
		ds, err := c.host.Destinations(ctxb, ref)
		must(t, err)
		want := 4 // the three chats and the peer
		if i == 2 {
			want = 3 // closed: its projection stays as it was, without the peer
		}
		if len(ds) != want {
			t.Fatalf("session %d: %d destinations %+v, want %d", i, len(ds), ds, want)
		}
	}
	groups, err := c.router.GroupsTargeting(ctxb, sessiondb.TargetAgent, "ag-2")
	must(t, err)
	if len(groups) != 1 || groups[0] != "ag-1" {
		t.Fatalf("groups targeting ag-2: %v", groups)
	}
}

// An agent's reply to a peer that names no message (or names a chat
// message) goes to the peer's session that last talked to it (NanoClaw's
// peer affinity), not to the peer's newest session; when that session is
// closed, to the newest.
func TestAgentReplyPeerAffinity(t *testing.T) {
	c := newCentral(t)
	s, a := c.agentSession()
	c.group("ag-2", "Peer")
	for _, d := range []sessiondb.NewDestination{
		{AgentGroupID: "ag-1", LocalName: "peer", TargetType: sessiondb.TargetAgent, TargetID: "ag-2"},
		{AgentGroupID: "ag-2", LocalName: "helper", TargetType: sessiondb.TargetAgent, TargetID: "ag-1"},
	} {
		_, err := c.reg.AddDestination(ctxb, d)
		must(t, err)
	}
	// Two sessions of the peer, p2 the newer, each in a chat of its own.
	var peers []sessiondb.AgentSession
	var peerAgents []*mailbox.Agent
	for i, chat := range []string{"p-1", "p-2"} {
		mg := c.chat("mg-"+chat, "telegram", chat, chat, true, sessiondb.PolicyPublic)
		c.wire(sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: "ag-2", EngageMode: sessiondb.EngagePattern})
		c.clk.Advance(time.Second)
		res := c.route(Event{ChannelType: "telegram", PlatformID: chat, MessageID: fmt.Sprint("pm", i), Sender: Sender{ID: "42"}, Text: "hi", IsGroup: true})
		p, err := c.reg.GetAgentSession(ctxb, res.Deliveries[0].SessionID)
		must(t, err)
		dir, _ := c.host.Layout().SessionDir(p.Ref())
		pa, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{Now: c.clk.Now})
		must(t, err)
		t.Cleanup(func() { pa.Close() })
		peers, peerAgents = append(peers, p), append(peerAgents, pa)
	}
	p1, p2 := peers[0], peers[1]
	// lastFrom is the text of the newest row ag-1 sent session p.
	lastFrom := func(p sessiondb.AgentSession) string {
		t.Helper()
		var last string
		var seq int64
		for _, r := range c.inbound(p.Ref()) {
			if r.Routing.ChannelType == mailbox.ChannelAgent && r.Routing.PlatformID == "ag-1" && r.Seq > seq {
				var content struct{ Text string }
				must(t, json.Unmarshal(r.Content, &content))
				last, seq = content.Text, r.Seq
			}
		}
		return last
	}
	toPeer := mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: "ag-2"}

	// p1 asks ag-1; ag-1 answers without naming the message.
	c.send(peerAgents[0], "q1", mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: "ag-1"}, map[string]any{"text": "question from p1"})
	if res := c.drain(p1.Ref()); res.Delivered != 1 {
		t.Fatalf("p1's question: %+v", res)
	}
	c.send(a, "a1", toPeer, map[string]any{"text": "answer 1"})
	if res := c.drain(s.Ref()); res.Delivered != 1 {
		t.Fatalf("answer 1: %+v", res)
	}
	if lastFrom(p1) != "answer 1" || lastFrom(p2) != "" {
		t.Fatalf("answer 1 went to p1 %q, p2 %q; want p1, the peer's session that asked", lastFrom(p1), lastFrom(p2))
	}
	// A reply naming a chat message (no return path of its own) too.
	raw, _ := mailbox.MarshalContent(map[string]any{"text": "answer 2"})
	_, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "a2", Content: raw, Routing: toPeer, InReplyTo: InboundID("m1", "mg-1", "ag-1")})
	must(t, err)
	if res := c.drain(s.Ref()); res.Delivered != 1 {
		t.Fatalf("answer 2: %+v %q", res, notifications(c, s.Ref()))
	}
	if lastFrom(p1) != "answer 2" {
		t.Fatalf("answer 2 went to p1 %q, p2 %q", lastFrom(p1), lastFrom(p2))
	}
	// p2 talks to ag-1 now: the next reply is p2's.
	c.send(peerAgents[1], "q2", mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: "ag-1"}, map[string]any{"text": "question from p2"})
	c.drain(p2.Ref())
	c.send(a, "a3", toPeer, map[string]any{"text": "answer 3"})
	c.drain(s.Ref())
	if lastFrom(p2) != "answer 3" || lastFrom(p1) != "answer 2" {
		t.Fatalf("answer 3 went to p1 %q, p2 %q; want p2", lastFrom(p1), lastFrom(p2))
	}
	// p2 closed: the peer's newest active session, p1, takes the reply.
	must(t, c.reg.CloseSession(ctxb, p2.ID))
	c.send(a, "a4", toPeer, map[string]any{"text": "answer 4"})
	c.drain(s.Ref())
	if lastFrom(p1) != "answer 4" || lastFrom(p2) != "answer 3" {
		t.Fatalf("answer 4 went to p1 %q, p2 %q; want p1", lastFrom(p1), lastFrom(p2))
	}
}
