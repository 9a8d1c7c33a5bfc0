package hostd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The fixtures under testdata/nanoclaw were made by NanoClaw's own code
// (v2.0.64: its Chat SDK bridge, router and permissions module) through
// testdata/nanoclaw/run.sh: the rows its permissions module stored for an
// unknown sender (Eve in the Telegram group chat -100123) and an unknown
// chat (Bob's DM 7), and the cards it sent.

// nanoClawFixture reads one fixture: the row NanoClaw stored.
func nanoClawFixture(t *testing.T, name, table string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "nanoclaw", name))
	must(t, err)
	var f map[string]json.RawMessage
	must(t, json.Unmarshal(b, &f))
	var row map[string]any
	must(t, json.Unmarshal(f[table], &row))
	out := map[string]string{}
	for k, v := range row {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// nanoClawRegistry is the registry NanoClaw's harness made the fixtures
// in: agent group ag-1 (Helper), the Telegram group chat mg-team (-100123)
// wired pattern '.' to it and asking about unknown senders, the owner
// telegram:1, and Bob's DM chat, unwired, under the id NanoClaw gave it.
func nanoClawRegistry(t *testing.T, dmChat string) *central {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-team", "-100123", "Team chat", sessiondb.PolicyRequestApproval)
	c.chat(dmChat, "telegram", "7", "", false, sessiondb.PolicyRequestApproval)
	c.user("telegram:1", sessiondb.RoleOwner)
	return c
}

// compact is s compacted (a fixture's content, as our mailbox stores it).
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	must(t, json.Compact(&b, []byte(s)))
	return b.String()
}

// An unknown-sender request NanoClaw stored, clicked Allow through our
// router: Eve becomes a member, and the message she wrote is routed as
// NanoClaw's replay would route it: its row holds NanoClaw's content
// whole (the Chat SDK's message), its kind chat-sdk, its time and chat.
func TestNanoClawSenderApprovalReplayedByOurClick(t *testing.T) {
	row := nanoClawFixture(t, "sender-approval.json", "pending_sender_approvals")
	var ev nanoClawEvent
	must(t, json.Unmarshal([]byte(row["original_message"]), &ev))
	dm := nanoClawFixture(t, "channel-approval.json", "pending_channel_approvals")["messaging_group_id"]
	c := nanoClawRegistry(t, dm)
	opts, err := sessiondb.NormalizeOptions(json.RawMessage(row["options_json"]))
	must(t, err)
	_, added, err := c.reg.AddSenderApproval(ctxb, sessiondb.NewSenderApproval{ID: row["id"], MessagingGroupID: row["messaging_group_id"],
		AgentGroupID: row["agent_group_id"], SenderIdentity: row["sender_identity"], SenderName: row["sender_name"],
		OriginalMessage: json.RawMessage(row["original_message"]), ApproverUserID: row["approver_user_id"], Title: row["title"], Options: opts})
	must(t, err)
	if !added {
		t.Fatal("the fixture's request was not added")
	}

	res := c.click(Click{Type: InputClick, ChannelType: "telegram", UserID: "1", Action: "ncq:" + row["id"] + ":0"})
	if res.Outcome != ClickApproved || res.Replay == nil || res.Replay.Outcome != RouteRouted || len(res.Warnings) > 0 {
		t.Fatalf("click %+v, replay %+v", res, res.Replay)
	}
	members, err := c.reg.ListMembers(ctxb, "ag-1")
	must(t, err)
	if len(members) != 1 || members[0].UserID != "telegram:5" || members[0].AddedBy != "telegram:1" {
		t.Fatalf("members %+v", members)
	}
	u, err := c.reg.GetUser(ctxb, "telegram:5")
	must(t, err)
	if u.DisplayName != "Eve" {
		t.Errorf("user %+v", u)
	}
	ss := c.sessions("ag-1")
	if len(ss) != 1 || ss[0].MessagingGroupID != "mg-team" {
		t.Fatalf("sessions %+v", ss)
	}
	rows := c.inbound(ss[0].Ref())
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.ID != "41:mg-team:ag-1" || r.Kind != mailbox.KindChatSDK || !r.Trigger || string(r.Content) != compact(t, ev.Message.Content) ||
		r.Routing != (mailbox.Routing{ChannelType: "telegram", PlatformID: "-100123"}) || r.Timestamp != "2026-05-18T10:00:00.000Z" {
		t.Fatalf("row %+v\ncontent %s", r, r.Content)
	}
	if _, err := c.reg.GetSenderApproval(ctxb, row["id"]); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("the request is still there: %v", err)
	}
}

// An unknown-chat request NanoClaw stored for a DM, clicked Connect
// through our router: the chat is wired as a DM (pattern '.'), Bob
// becomes a member, and his DM is routed with NanoClaw's content whole.
func TestNanoClawChannelApprovalReplayedByOurClick(t *testing.T) {
	row := nanoClawFixture(t, "channel-approval.json", "pending_channel_approvals")
	var ev nanoClawEvent
	must(t, json.Unmarshal([]byte(row["original_message"]), &ev))
	c := nanoClawRegistry(t, row["messaging_group_id"])
	opts, err := sessiondb.NormalizeOptions(json.RawMessage(row["options_json"]))
	must(t, err)
	_, added, err := c.reg.AddChannelApproval(ctxb, sessiondb.PendingChannelApproval{MessagingGroupID: row["messaging_group_id"],
		AgentGroupID: row["agent_group_id"], OriginalMessage: json.RawMessage(row["original_message"]),
		ApproverUserID: row["approver_user_id"], Title: row["title"], Options: opts})
	must(t, err)
	if !added || opts[0].Value != "connect:ag-1" {
		t.Fatalf("the fixture's request: added %v, options %+v", added, opts)
	}

	res := c.click(Click{Type: InputClick, ChannelType: "telegram", UserID: "1", Action: "ncq:" + row["messaging_group_id"] + ":0"})
	if res.Outcome != ClickConnected || res.Replay == nil || res.Replay.Outcome != RouteRouted || len(res.Warnings) > 0 {
		t.Fatalf("click %+v, replay %+v", res, res.Replay)
	}
	ws, err := c.reg.ListWirings(ctxb, sessiondb.WiringFilter{MessagingGroupID: row["messaging_group_id"]})
	must(t, err)
	if len(ws) != 1 || ws[0].EngageMode != sessiondb.EngagePattern || ws[0].EngagePattern != "." {
		t.Fatalf("wirings %+v", ws)
	}
	members, err := c.reg.ListMembers(ctxb, "ag-1")
	must(t, err)
	if len(members) != 1 || members[0].UserID != "telegram:7" || members[0].AddedBy != "telegram:1" {
		t.Fatalf("members %+v: the DM's sender is not a member", members)
	}
	var rows []mailbox.InboundRow
	for _, s := range c.sessions("ag-1") {
		rows = append(rows, c.inbound(s.Ref())...)
	}
	want := InboundID("9", row["messaging_group_id"], "ag-1")
	if len(rows) != 1 || rows[0].ID != want || rows[0].Kind != mailbox.KindChatSDK || string(rows[0].Content) != compact(t, ev.Message.Content) ||
		rows[0].Routing != (mailbox.Routing{ChannelType: "telegram", PlatformID: "7"}) {
		t.Fatalf("rows %+v", rows)
	}
}

// keysOf lists a JSON object's keys, sorted.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var o map[string]json.RawMessage
	must(t, json.Unmarshal(raw, &o))
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// What our router stores for an unknown sender and an unknown chat is,
// field by field, what NanoClaw's replay reads (src/modules/permissions/
// index.ts parses original_message as an InboundEvent and hands it to
// routeInbound, src/router.ts): channelType, platformId, threadId (null
// without a thread: its channel approval wires a chat as a group when it
// is not null), and message with id, kind (chat or chat-sdk: its command
// gate), content (a string holding a JSON object: text for the engage
// test; senderId, sender for its sender resolver and cards), timestamp,
// isMention (=== true) and isGroup. It is exactly the shape NanoClaw
// stores (its fixture has the same keys), and the card we send is
// NanoClaw's card for the same message.
func TestStoredApprovalIsNanoClawsShape(t *testing.T) {
	c := nanoClawRegistry(t, "mg-bob")
	eve := Event{ChannelType: "telegram", PlatformID: "-100123", MessageID: "41", Sender: Sender{ID: "5", Name: "Eve"},
		Text: "can I join?", IsGroup: true, Timestamp: "2026-05-18T10:00:00.000Z"}
	res := c.route(eve)
	if res.Outcome != RouteDropped || res.ApprovalID == "" {
		t.Fatalf("route %+v", res)
	}
	p, err := c.reg.GetSenderApproval(ctxb, res.ApprovalID)
	must(t, err)
	bob := Event{ChannelType: "telegram", PlatformID: "8", MessageID: "9", Sender: Sender{ID: "8", Name: "Bob"}, Text: "hello bot", ThreadID: "t-1"}
	res = c.route(bob)
	ch, err := c.reg.GetChannelApproval(ctxb, res.MessagingGroupID)
	must(t, err)

	theirs := func(file, table string) json.RawMessage {
		return json.RawMessage(nanoClawFixture(t, file, table)["original_message"])
	}
	for _, tc := range []struct {
		name          string
		ours, theirs  json.RawMessage
		ev            Event
		thread        any
		mention, grp  bool
		wantText, who string
	}{
		{"sender", p.OriginalMessage, theirs("sender-approval.json", "pending_sender_approvals"), eve, nil, false, true, "can I join?", "telegram:5"},
		{"channel", ch.OriginalMessage, theirs("channel-approval.json", "pending_channel_approvals"), bob, "t-1", true, false, "hello bot", "telegram:8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := strings.Join(keysOf(t, tc.ours), ","), strings.Join(keysOf(t, tc.theirs), ","); got != want || got != "channelType,message,platformId,threadId" {
				t.Fatalf("keys %s, NanoClaw's %s", got, want)
			}
			var top map[string]json.RawMessage
			must(t, json.Unmarshal(tc.ours, &top))
			var theirTop map[string]json.RawMessage
			must(t, json.Unmarshal(tc.theirs, &theirTop))
			if got, want := strings.Join(keysOf(t, top["message"]), ","), strings.Join(keysOf(t, theirTop["message"]), ","); got != want ||
				got != "content,id,isGroup,isMention,kind,timestamp" {
				t.Fatalf("message keys %s, NanoClaw's %s", got, want)
			}
			var e struct {
				ChannelType *string `json:"channelType"`
				PlatformID  *string `json:"platformId"`
				ThreadID    any     `json:"threadId"`
				Message     struct {
					ID        *string `json:"id"`
					Kind      *string `json:"kind"`
					Content   *string `json:"content"`
					Timestamp *string `json:"timestamp"`
					IsMention *bool   `json:"isMention"`
					IsGroup   *bool   `json:"isGroup"`
				} `json:"message"`
			}
			must(t, json.Unmarshal(tc.ours, &e))
			m := e.Message
			if e.ChannelType == nil || *e.ChannelType != "telegram" || e.PlatformID == nil || *e.PlatformID != tc.ev.PlatformID || e.ThreadID != tc.thread {
				t.Errorf("chat: %s", tc.ours)
			}
			if m.ID == nil || *m.ID != tc.ev.MessageID || m.Kind == nil || *m.Kind != "chat" || m.IsMention == nil || *m.IsMention != tc.mention ||
				m.IsGroup == nil || *m.IsGroup != tc.grp || m.Timestamp == nil || m.Content == nil {
				t.Fatalf("message: %s", tc.ours)
			}
			if _, ok := sessiondb.ParseTimestamp(*m.Timestamp); !ok {
				t.Errorf("timestamp %q", *m.Timestamp)
			}
			var content struct {
				Text     *string `json:"text"`
				Sender   *string `json:"sender"`
				SenderID *string `json:"senderId"`
			}
			if err := json.Unmarshal([]byte(*m.Content), &content); err != nil {
				t.Fatalf("content %q is not a JSON object: %v", *m.Content, err)
			}
			if content.Text == nil || *content.Text != tc.wantText || content.SenderID == nil || *content.SenderID != tc.who ||
				content.Sender == nil || *content.Sender != tc.ev.Sender.Name {
				t.Errorf("content %s", *m.Content)
			}
			// And we read it back as the event it was.
			back, err := readStoredEvent(tc.ours, false, c.clk.Now())
			must(t, err)
			if back.MessageID != tc.ev.MessageID || back.UserID() != tc.who || back.Sender.Name != tc.ev.Sender.Name || back.Text != tc.wantText ||
				back.ThreadID != tc.ev.ThreadID || back.IsGroup != tc.grp || back.Mentioned() != tc.mention {
				t.Errorf("read back %+v", back)
			}
		})
	}

	// NanoClaw's card for Eve's message is ours, word for word.
	b, err := os.ReadFile(filepath.Join("testdata", "nanoclaw", "cards.json"))
	must(t, err)
	var f struct {
		Cards []struct {
			Content askQuestion `json:"content"`
		} `json:"cards"`
	}
	must(t, json.Unmarshal(b, &f))
	cards := c.deliver.cards(t)
	theirCard, ourCard := f.Cards[0].Content, cards[0]
	theirCard.QuestionID, ourCard.QuestionID = "", ""
	tb, _ := json.Marshal(theirCard)
	ob, _ := json.Marshal(ourCard)
	if string(tb) != string(ob) {
		t.Errorf("our card %s\nNanoClaw's %s", ob, tb)
	}
}

// A request an earlier sessiondb stored holds our own event JSON: it is
// still read and replayed.
func TestOurEarlierStoredApprovalReplayed(t *testing.T) {
	c := nanoClawRegistry(t, "mg-bob")
	old := `{"channel_type":"telegram","platform_id":"-100123","message_id":"m7","sender":{"id":"5","name":"Eve"},"text":"still there?","is_group":true,"is_mention":false}`
	p, _, err := c.reg.AddSenderApproval(ctxb, sessiondb.NewSenderApproval{MessagingGroupID: "mg-team", AgentGroupID: "ag-1",
		SenderIdentity: "telegram:5", OriginalMessage: json.RawMessage(old), ApproverUserID: "telegram:1", Title: "👤 New sender"})
	must(t, err)
	res := c.click(Click{Type: InputClick, ChannelType: "telegram", UserID: "1", CardID: p.ID, Option: intp(0)})
	if res.Outcome != ClickApproved || res.Replay == nil || res.Replay.Outcome != RouteRouted {
		t.Fatalf("click %+v", res)
	}
	rows := c.inbound(c.sessions("ag-1")[0].Ref())
	if len(rows) != 1 || rows[0].ID != "m7:mg-team:ag-1" || rows[0].Kind != mailbox.KindChat ||
		string(rows[0].Content) != `{"sender":"Eve","senderId":"telegram:5","text":"still there?","isMention":false,"isGroup":true}` {
		t.Fatalf("rows %+v", rows)
	}

	// One that cannot be read at all still lets the sender in, and says
	// the message was not routed.
	p, _, err = c.reg.AddSenderApproval(ctxb, sessiondb.NewSenderApproval{MessagingGroupID: "mg-team", AgentGroupID: "ag-1",
		SenderIdentity: "telegram:6", OriginalMessage: json.RawMessage(`{"channelType":"telegram","message":{"id":"a/b"}}`),
		ApproverUserID: "telegram:1", Title: "👤 New sender"})
	must(t, err)
	res = c.click(Click{Type: InputClick, ChannelType: "telegram", UserID: "1", CardID: p.ID, Option: intp(0)})
	if res.Outcome != ClickApproved || res.Replay != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not routed") {
		t.Fatalf("click on an unreadable request %+v", res)
	}
	if u, err := c.reg.UserAccess(ctxb, "telegram:6"); err != nil || !sessiondb.CanAccessAgentGroup(u, "ag-1").Allowed {
		t.Errorf("telegram:6 is not a member: %+v, %v", u, err)
	}
}

// NanoClaw's command-line adapter may store where the answers go
// (replyTo) and a content that is not JSON: the row is addressed there,
// and the text is the content itself, as NanoClaw's router takes it.
func TestReadStoredEventReplyToAndPlainContent(t *testing.T) {
	raw := `{"channelType":"telegram","platformId":"-100123","threadId":null,"message":{"id":"cli-1","kind":"chat","content":"hello there",` +
		`"timestamp":"2026-05-18T10:00:00.000Z"},"replyTo":{"channelType":"cli","platformId":"local","threadId":null}}`
	ev, err := readStoredEvent(json.RawMessage(raw), true, newClock().Now())
	must(t, err)
	if ev.routing() != (mailbox.Routing{ChannelType: "cli", PlatformID: "local"}) || ev.Text != "hello there" || ev.raw != nil || !ev.IsGroup || ev.Mentioned() {
		t.Fatalf("event %+v", ev)
	}
}
