package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func testDestinations(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.group("helper", "Helper")
	own := e.chat("mg-own", "telegram", "100", "Own", true)
	other := e.chat("mg-other", "telegram", "200", "Other", true)
	at := e.at()
	d, err := e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "other", TargetType: sessiondb.TargetChannel, TargetID: other.ID})
	noErr(t, "add channel", err)
	if d.LocalName != "other" || d.TargetType != sessiondb.TargetChannel || d.TargetID != other.ID {
		t.Errorf("added %+v", d)
	}
	sameTime(t, "created_at", d.CreatedAt, at)
	e.tick()
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "parent", TargetType: sessiondb.TargetAgent, TargetID: "helper"})
	noErr(t, "add agent", err)
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "helper", LocalName: "parent", TargetType: sessiondb.TargetAgent, TargetID: "ag"})
	noErr(t, "the same name in another group", err)

	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "other", TargetType: sessiondb.TargetChannel, TargetID: own.ID})
	wantCode(t, "taken name", err, sessiondb.ECONFLICT)
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "x", TargetType: sessiondb.TargetChannel, TargetID: "mg-missing"})
	wantCode(t, "unknown chat", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "x", TargetType: sessiondb.TargetAgent, TargetID: "ag-missing"})
	wantCode(t, "unknown agent", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag-missing", LocalName: "x", TargetType: sessiondb.TargetAgent, TargetID: "ag"})
	wantCode(t, "unknown source", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag", LocalName: "x", TargetType: "user", TargetID: "ag"})
	wantCode(t, "bad type", err, sessiondb.EINVALID)

	list, err := e.r.ListDestinations(e.ctx, "ag")
	if err != nil || strings.Join(pluck(list, func(d sessiondb.Destination) string { return d.LocalName }), ",") != "other,parent" {
		t.Errorf("ListDestinations = %+v, %v", list, err)
	}
	resolved, err := e.r.ResolveDestinations(e.ctx, "ag")
	noErr(t, "resolve", err)
	if len(resolved) != 2 || resolved[0].Chat == nil || resolved[0].Chat.PlatformID != "200" || resolved[0].Agent != nil ||
		resolved[1].Agent == nil || resolved[1].Agent.Name != "Helper" || resolved[1].Chat != nil || resolved[0].Dangling() {
		t.Errorf("ResolveDestinations = %+v", resolved)
	}

	// The delivery check over the registry's rows (spec A8).
	check := func(ch, pid string) sessiondb.DeliveryDecision {
		return sessiondb.CheckDelivery(sessiondb.DeliveryRequest{AgentGroupID: "ag", SessionChat: &own, ChannelType: ch, PlatformID: pid, Destinations: resolved})
	}
	for _, c := range []struct {
		ch, pid string
		allow   bool
	}{{"telegram", "100", true}, {"telegram", "200", true}, {"agent", "helper", true}, {"agent", "ag", true}, {"telegram", "300", false}, {"agent", "stranger", false}} {
		if d := check(c.ch, c.pid); d.Allowed != c.allow {
			t.Errorf("send to %s/%s: %+v, want allowed=%v", c.ch, c.pid, d, c.allow)
		}
	}

	noErr(t, "remove", e.r.RemoveDestination(e.ctx, "ag", "other"))
	wantCode(t, "remove again", e.r.RemoveDestination(e.ctx, "ag", "other"), sessiondb.ENOTFOUND)
	resolved, _ = e.r.ResolveDestinations(e.ctx, "ag")
	if d := sessiondb.CheckDelivery(sessiondb.DeliveryRequest{AgentGroupID: "ag", SessionChat: &own, ChannelType: "telegram", PlatformID: "200", Destinations: resolved}); d.Allowed {
		t.Errorf("a removed destination still allows: %+v", d)
	}
}

func testQuestions(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	s, _ := e.resolve("ag", "", "", sessiondb.ModeShared)
	opts, err := sessiondb.NormalizeOptions(json.RawMessage(`["Yes",{"label":"No","value":"no"}]`))
	noErr(t, "options", err)
	q := sessiondb.NewQuestion{QuestionID: "msg-1", SessionID: s.ID, ChannelType: "telegram", PlatformID: "100", ThreadID: "7", Title: "Deploy?", Options: opts}
	at := e.at()
	added, err := e.r.AddQuestion(e.ctx, q)
	if err != nil || !added {
		t.Fatalf("AddQuestion = %v, %v", added, err)
	}
	e.tick()
	q2 := q
	q2.Title = "Changed"
	added, err = e.r.AddQuestion(e.ctx, q2)
	if err != nil || added {
		t.Errorf("redelivered question = %v, %v; want ignored", added, err)
	}
	got, err := e.r.GetQuestion(e.ctx, "msg-1")
	noErr(t, "get", err)
	if got.Title != "Deploy?" || got.MessageOutID != "msg-1" || got.ThreadID != "7" || len(got.Options) != 2 || got.Options[1].Value != "no" || got.Options[0].SelectedLabel != "Yes" {
		t.Errorf("stored question = %+v", got)
	}
	sameTime(t, "created_at", got.CreatedAt, at)
	_, err = e.r.AddQuestion(e.ctx, sessiondb.NewQuestion{QuestionID: "msg-2", SessionID: "sess-missing", Title: "t", Options: opts})
	wantCode(t, "unknown session", err, sessiondb.ENOTFOUND)
	_, err = e.r.GetQuestion(e.ctx, "msg-404")
	wantCode(t, "get missing", err, sessiondb.ENOTFOUND)

	e.clock.Advance(2 * time.Minute)
	_, err = e.r.AddQuestion(e.ctx, sessiondb.NewQuestion{QuestionID: "msg-2", SessionID: s.ID, Title: "Later", Options: opts})
	noErr(t, "second question", err)
	list, _ := e.r.ListQuestions(e.ctx, s.ID)
	if len(list) != 2 || list[0].QuestionID != "msg-1" {
		t.Errorf("ListQuestions = %+v", list)
	}
	// A TTL sweep at msg-1's age of 300 s takes msg-1 only.
	e.clock.Set(at.Add(sessiondb.QuestionTTL))
	gone, err := e.r.ExpireQuestions(e.ctx, e.clock.Now().Add(-sessiondb.QuestionTTL).Add(time.Millisecond))
	if err != nil || len(gone) != 1 || gone[0].QuestionID != "msg-1" {
		t.Errorf("ExpireQuestions = %+v, %v", gone, err)
	}
	deleted, err := e.r.DeleteQuestion(e.ctx, "msg-2")
	if err != nil || !deleted {
		t.Errorf("DeleteQuestion = %v, %v", deleted, err)
	}
	deleted, _ = e.r.DeleteQuestion(e.ctx, "msg-2")
	if deleted {
		t.Errorf("a question was claimed twice")
	}
	if list, _ := e.r.ListQuestions(e.ctx, ""); len(list) != 0 {
		t.Errorf("questions left: %+v", list)
	}
}

func testActionApprovals(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	s, _ := e.resolve("ag", "", "", sessiondb.ModeShared)
	at := e.at()
	a, err := e.r.AddApproval(e.ctx, sessiondb.NewApproval{SessionID: s.ID, Action: "install_packages", Payload: json.RawMessage(`{"apt":["jq"]}`), Title: "Install jq?"})
	noErr(t, "add", err)
	if !generatedID("appr").MatchString(a.ApprovalID) || a.RequestID != a.ApprovalID || a.AgentGroupID != "ag" || a.Status != sessiondb.ApprovalPending ||
		len(a.Options) != 2 || a.Options[0].Value != "approve" || a.Options[1].Value != "reject" || string(a.Payload) != `{"apt":["jq"]}` {
		t.Errorf("added %+v: want appr- id = request id, the session's agent group, pending, Approve/Reject", a)
	}
	sameTime(t, "created_at", a.CreatedAt, at)
	sameTime(t, "expires_at", a.ExpiresAt, at.Add(sessiondb.ApprovalTTL))
	e.tick()

	noErr(t, "card", e.r.SetApprovalCard(e.ctx, a.ApprovalID, "telegram", "42", "m-9"))
	got, _ := e.r.GetApproval(e.ctx, a.ApprovalID)
	if got.ChannelType != "telegram" || got.PlatformID != "42" || got.PlatformMessageID != "m-9" {
		t.Errorf("card not recorded: %+v", got)
	}
	wantCode(t, "card of missing", e.r.SetApprovalCard(e.ctx, "appr-missing", "t", "1", "2"), sessiondb.ENOTFOUND)

	r, err := e.r.ResolveApproval(e.ctx, a.ApprovalID, sessiondb.ApprovalApproved)
	if err != nil || r.Status != sessiondb.ApprovalApproved {
		t.Errorf("resolve = %+v, %v", r, err)
	}
	_, err = e.r.ResolveApproval(e.ctx, a.ApprovalID, sessiondb.ApprovalRejected)
	wantCode(t, "second click", err, sessiondb.ECONFLICT)
	_, err = e.r.ResolveApproval(e.ctx, "appr-missing", sessiondb.ApprovalRejected)
	wantCode(t, "resolve missing", err, sessiondb.ENOTFOUND)
	_, err = e.r.ResolveApproval(e.ctx, a.ApprovalID, sessiondb.ApprovalPending)
	wantCode(t, "resolve to pending", err, sessiondb.EINVALID)

	_, err = e.r.AddApproval(e.ctx, sessiondb.NewApproval{SessionID: "sess-missing", Action: "x", Payload: json.RawMessage(`{}`), Title: "t"})
	wantCode(t, "unknown session", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddApproval(e.ctx, sessiondb.NewApproval{ApprovalID: a.ApprovalID, SessionID: s.ID, Action: "x", Payload: json.RawMessage(`{}`), Title: "t"})
	wantCode(t, "taken id", err, sessiondb.ECONFLICT)
	cred, err := e.r.AddApproval(e.ctx, sessiondb.NewApproval{ApprovalID: "oa-abcdefgh", RequestID: "req-1", Action: sessiondb.ActionCredential,
		Payload: json.RawMessage(`{"host":"api"}`), Title: "Credentials", ExpiresAt: e.clock.Now().Add(time.Minute)})
	noErr(t, "credential approval without a session", err)
	if cred.SessionID != "" || cred.AgentGroupID != "" || cred.RequestID != "req-1" {
		t.Errorf("credential approval = %+v", cred)
	}
	e.tick()
	later, err := e.r.AddApproval(e.ctx, sessiondb.NewApproval{SessionID: s.ID, Action: "add_mcp_server", Payload: json.RawMessage(`{}`), Title: "MCP"})
	noErr(t, "add another", err)

	pending, _ := e.r.ListApprovals(e.ctx, sessiondb.ApprovalFilter{Status: sessiondb.ApprovalPending})
	if strings.Join(pluck(pending, func(a sessiondb.PendingApproval) string { return a.ApprovalID }), ",") != cred.ApprovalID+","+later.ApprovalID {
		t.Errorf("pending = %+v", pending)
	}
	byAction, _ := e.r.ListApprovals(e.ctx, sessiondb.ApprovalFilter{Action: "install_packages"})
	if len(byAction) != 1 || byAction[0].Status != sessiondb.ApprovalApproved {
		t.Errorf("by action = %+v", byAction)
	}

	// Expiry: the credential approval at its own expires_at, the other at
	// created_at + 7 days.
	e.clock.Advance(time.Minute)
	exp, err := e.r.ExpireApprovals(e.ctx, e.clock.Now(), sessiondb.ApprovalTTL)
	if err != nil || len(exp) != 1 || exp[0].ApprovalID != cred.ApprovalID || exp[0].Status != sessiondb.ApprovalExpired {
		t.Errorf("first sweep = %+v, %v", exp, err)
	}
	e.clock.Advance(sessiondb.ApprovalTTL)
	exp, err = e.r.ExpireApprovals(e.ctx, e.clock.Now(), sessiondb.ApprovalTTL)
	if err != nil || len(exp) != 1 || exp[0].ApprovalID != later.ApprovalID {
		t.Errorf("second sweep = %+v, %v", exp, err)
	}
	if exp, _ := e.r.ExpireApprovals(e.ctx, e.clock.Now(), sessiondb.ApprovalTTL); len(exp) != 0 {
		t.Errorf("an expired approval expired again: %+v", exp)
	}
	_, err = e.r.ResolveApproval(e.ctx, later.ApprovalID, sessiondb.ApprovalApproved)
	wantCode(t, "click after expiry", err, sessiondb.ECONFLICT)
	deleted, err := e.r.DeleteApproval(e.ctx, later.ApprovalID)
	if err != nil || !deleted {
		t.Errorf("delete = %v, %v", deleted, err)
	}
	_, err = e.r.GetApproval(e.ctx, later.ApprovalID)
	wantCode(t, "get deleted", err, sessiondb.ENOTFOUND)
}

func testSenderApprovals(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	chat := e.chat("mg", "telegram", "1", "", true)
	n := sessiondb.NewSenderApproval{MessagingGroupID: chat.ID, AgentGroupID: "ag", SenderIdentity: "telegram:9", SenderName: "Eve",
		OriginalMessage: json.RawMessage(`{"text":"hi"}`), ApproverUserID: "telegram:1", Title: "👤 New sender"}
	a, added, err := e.r.AddSenderApproval(e.ctx, n)
	if err != nil || !added || !generatedID("nsa").MatchString(a.ID) || len(a.Options) != 2 || a.Options[0].Label != "Allow" || string(a.OriginalMessage) != `{"text":"hi"}` {
		t.Fatalf("AddSenderApproval = %+v, %v, %v", a, added, err)
	}
	e.tick()
	n.OriginalMessage = json.RawMessage(`{"text":"again"}`)
	again, added, err := e.r.AddSenderApproval(e.ctx, n)
	if err != nil || added || again.ID != a.ID || string(again.OriginalMessage) != `{"text":"hi"}` {
		t.Errorf("second request for the same sender = %+v, %v, %v; want the pending one", again, added, err)
	}
	got, err := e.r.GetSenderApproval(e.ctx, a.ID)
	if err != nil || got.SenderName != "Eve" {
		t.Errorf("get = %+v, %v", got, err)
	}
	other := n
	other.SenderIdentity = "telegram:10"
	_, added, _ = e.r.AddSenderApproval(e.ctx, other)
	if !added {
		t.Errorf("another sender was not added")
	}
	if list, _ := e.r.ListSenderApprovals(e.ctx, chat.ID); len(list) != 2 || list[0].ID != a.ID {
		t.Errorf("list = %+v", list)
	}
	bad := n
	bad.MessagingGroupID = "mg-missing"
	_, _, err = e.r.AddSenderApproval(e.ctx, bad)
	wantCode(t, "unknown chat", err, sessiondb.ENOTFOUND)
	bad = n
	bad.SenderIdentity = "telegram:11"
	bad.OriginalMessage = json.RawMessage(`{oops`)
	_, _, err = e.r.AddSenderApproval(e.ctx, bad)
	wantCode(t, "broken event", err, sessiondb.EINVALID)
	deleted, err := e.r.DeleteSenderApproval(e.ctx, a.ID)
	if err != nil || !deleted {
		t.Errorf("delete = %v, %v", deleted, err)
	}
	_, added, _ = e.r.AddSenderApproval(e.ctx, n)
	if !added {
		t.Errorf("after a denial (delete) the sender cannot be asked about again")
	}
}

func testChannelApprovals(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	chat := e.chat("mg", "discord", "1", "", true)
	p := sessiondb.PendingChannelApproval{MessagingGroupID: chat.ID, AgentGroupID: "ag", OriginalMessage: json.RawMessage(`{"text":"@bot"}`),
		ApproverUserID: "discord:1", Title: "📣 Bot mentioned in new channel",
		Options: []sessiondb.QuestionOption{{Label: "Connect", SelectedLabel: "✅", Value: "connect:ag"}, {Label: "Reject", SelectedLabel: "🙅", Value: "reject"}}}
	a, added, err := e.r.AddChannelApproval(e.ctx, p)
	if err != nil || !added || a.Options[0].Value != "connect:ag" {
		t.Fatalf("AddChannelApproval = %+v, %v, %v", a, added, err)
	}
	p.Title = "second"
	again, added, err := e.r.AddChannelApproval(e.ctx, p)
	if err != nil || added || again.Title != a.Title {
		t.Errorf("second mention = %+v, %v, %v; want the pending card", again, added, err)
	}
	follow := []sessiondb.QuestionOption{{Label: "Agent", SelectedLabel: "✅ Agent", Value: "connect:ag"}, {Label: "Cancel", SelectedLabel: "🙅", Value: "reject"}}
	noErr(t, "follow-up card", e.r.UpdateChannelApprovalCard(e.ctx, chat.ID, "📋 Choose an agent", follow))
	got, _ := e.r.GetChannelApproval(e.ctx, chat.ID)
	if got.Title != "📋 Choose an agent" || got.Options[1].Label != "Cancel" {
		t.Errorf("updated card = %+v", got)
	}
	wantCode(t, "update missing", e.r.UpdateChannelApprovalCard(e.ctx, "mg-missing", "t", follow), sessiondb.ENOTFOUND)
	wantCode(t, "update without options", e.r.UpdateChannelApprovalCard(e.ctx, chat.ID, "t", nil), sessiondb.EINVALID)
	if list, _ := e.r.ListChannelApprovals(e.ctx); len(list) != 1 {
		t.Errorf("list = %+v", list)
	}
	deleted, _ := e.r.DeleteChannelApproval(e.ctx, chat.ID)
	if !deleted {
		t.Errorf("delete removed nothing")
	}
	_, err = e.r.GetChannelApproval(e.ctx, chat.ID)
	wantCode(t, "get deleted", err, sessiondb.ENOTFOUND)
}

// testFindCard: a click's id finds its row, kind by kind.
func testFindCard(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	chat := e.chat("mg-chat", "telegram", "1", "", true)
	s, _ := e.resolve("ag", chat.ID, "", sessiondb.ModeShared)
	sa, _, err := e.r.AddSenderApproval(e.ctx, sessiondb.NewSenderApproval{MessagingGroupID: chat.ID, AgentGroupID: "ag", SenderIdentity: "telegram:9",
		OriginalMessage: json.RawMessage(`{}`), ApproverUserID: "telegram:1", Title: "t"})
	noErr(t, "sender approval", err)
	_, _, err = e.r.AddChannelApproval(e.ctx, sessiondb.PendingChannelApproval{MessagingGroupID: chat.ID, AgentGroupID: "ag", OriginalMessage: json.RawMessage(`{}`),
		ApproverUserID: "telegram:1", Title: "t", Options: sessiondb.ApproveRejectOptions})
	noErr(t, "channel approval", err)
	aa, err := e.r.AddApproval(e.ctx, sessiondb.NewApproval{SessionID: s.ID, Action: "x", Payload: json.RawMessage(`{}`), Title: "t"})
	noErr(t, "action approval", err)
	_, err = e.r.AddQuestion(e.ctx, sessiondb.NewQuestion{QuestionID: "msg-q", SessionID: s.ID, Title: "t", Options: sessiondb.ApproveRejectOptions})
	noErr(t, "question", err)
	for id, kind := range map[string]sessiondb.CardKind{
		sa.ID: sessiondb.CardSenderApproval, chat.ID: sessiondb.CardChannelApproval, aa.ApprovalID: sessiondb.CardActionApproval, "msg-q": sessiondb.CardQuestion,
	} {
		c, err := e.r.FindCard(e.ctx, id)
		if err != nil || c.Kind != kind {
			t.Errorf("FindCard(%s) = %+v, %v; want %s", id, c, err, kind)
			continue
		}
		set := 0
		for _, p := range []bool{c.Sender != nil, c.Channel != nil, c.Action != nil, c.Question != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Errorf("FindCard(%s) sets %d rows", id, set)
		}
	}
	_, err = e.r.FindCard(e.ctx, "nobody")
	wantCode(t, "unknown card", err, sessiondb.ENOTFOUND)
}

// testDropped holds the audit to spec A9.
func testDropped(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	first := e.at()
	noErr(t, "record", e.r.RecordDroppedMessage(e.ctx, sessiondb.DroppedMessage{ChannelType: "telegram", PlatformID: "1", UserID: "telegram:9",
		SenderName: "Eve", Reason: sessiondb.DropUnknownSenderStrict, MessagingGroupID: "mg-1", AgentGroupID: "ag"}))
	e.tick()
	last := e.at()
	noErr(t, "record again", e.r.RecordDroppedMessage(e.ctx, sessiondb.DroppedMessage{ChannelType: "telegram", PlatformID: "1",
		Reason: sessiondb.DropNoAgentEngaged, MessagingGroupID: "mg-1"}))
	e.tick()
	noErr(t, "another chat", e.r.RecordDroppedMessage(e.ctx, sessiondb.DroppedMessage{ChannelType: "discord", PlatformID: "1", Reason: sessiondb.DropNoAgentWired}))
	list, err := e.r.ListDropped(e.ctx, 0)
	noErr(t, "list", err)
	if len(list) != 2 || list[0].ChannelType != "discord" || list[0].MessageCount != 1 {
		t.Fatalf("ListDropped = %+v; want the discord chat first (seen last)", list)
	}
	d := list[1]
	if d.MessageCount != 2 || d.Reason != sessiondb.DropNoAgentEngaged || d.UserID != "telegram:9" || d.SenderName != "Eve" || d.AgentGroupID != "" || d.MessagingGroupID != "mg-1" {
		t.Errorf("telegram row = %+v: want count 2, the new reason, user and name kept, the agent group of the latest drop (none)", d)
	}
	sameTime(t, "first_seen", d.FirstSeen, first)
	sameTime(t, "last_seen", d.LastSeen, last)
	if top, _ := e.r.ListDropped(e.ctx, 1); len(top) != 1 {
		t.Errorf("limit 1 gave %d rows", len(top))
	}
	_, err = e.r.ListDropped(e.ctx, -1)
	wantCode(t, "negative limit", err, sessiondb.EINVALID)
	wantCode(t, "bad reason", e.r.RecordDroppedMessage(e.ctx, sessiondb.DroppedMessage{ChannelType: "telegram", PlatformID: "1", Reason: "spam"}), sessiondb.EINVALID)
	n, err := e.r.PruneDropped(e.ctx, e.clock.Now())
	if err != nil || n != 1 {
		t.Errorf("PruneDropped = %d, %v; want the telegram row (last seen before now)", n, err)
	}
	if list, _ := e.r.ListDropped(e.ctx, 0); len(list) != 1 || list[0].ChannelType != "discord" {
		t.Errorf("after prune: %+v", list)
	}
}

// testExpireConcurrently: expiry sweeps on two handles at once (two hosts
// sharing the registry) report each expired question and approval exactly
// once, so exactly one host tells its agent.
func testExpireConcurrently(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	s, _ := e.resolve("ag", "", "", sessiondb.ModeShared)
	opts, err := sessiondb.NormalizeOptions(json.RawMessage(`["Yes","No"]`))
	noErr(t, "options", err)
	const n = 12
	for i := 0; i < n; i++ {
		_, err := e.r.AddQuestion(e.ctx, sessiondb.NewQuestion{QuestionID: fmt.Sprintf("q-%d", i), SessionID: s.ID, Title: "t", Options: opts})
		noErr(t, "AddQuestion", err)
		_, err = e.r.AddApproval(e.ctx, sessiondb.NewApproval{SessionID: s.ID, Action: "install_packages", Payload: json.RawMessage(`{}`), Title: "t"})
		noErr(t, "AddApproval", err)
	}
	e.clock.Advance(sessiondb.ApprovalTTL + time.Minute)
	handles := []sessiondb.Registry{e.r, e.reopen()}
	var mu sync.Mutex
	questions, approvals := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(r sessiondb.Registry) {
			defer wg.Done()
			<-start
			qs, err := r.ExpireQuestions(e.ctx, e.clock.Now())
			if err != nil {
				t.Errorf("ExpireQuestions: %v", err)
			}
			as, err := r.ExpireApprovals(e.ctx, e.clock.Now(), sessiondb.ApprovalTTL)
			if err != nil {
				t.Errorf("ExpireApprovals: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, q := range qs {
				questions[q.QuestionID]++
			}
			for _, a := range as {
				approvals[a.ApprovalID]++
			}
		}(handles[i%len(handles)])
	}
	close(start)
	wg.Wait()
	if len(questions) != n || len(approvals) != n {
		t.Errorf("%d questions and %d approvals expired, want %d of each", len(questions), len(approvals), n)
	}
	for id, c := range questions {
		if c != 1 {
			t.Errorf("question %s reported expired by %d sweeps", id, c)
		}
	}
	for id, c := range approvals {
		if c != 1 {
			t.Errorf("approval %s reported expired by %d sweeps", id, c)
		}
	}
}
