package hostd

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

func TestHostDelivererSystemActions(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(f *fixture)
		content string
		// check runs on the fixture after the drain.
		wantStatus string // delivered row status
		check      func(t *testing.T, f *fixture)
	}{
		{
			name:       "schedule_task",
			content:    `{"action":"schedule_task","taskId":"task-1","prompt":"standup","script":null,"processAfter":"2026-03-02T09:00:00.000Z","recurrence":"0 9 * * 1-5","platformId":"C1","channelType":"slack","threadId":null}`,
			wantStatus: mailbox.DeliveredOK,
			check: func(t *testing.T, f *fixture) {
				r := f.query(mailbox.InboundFile, "SELECT kind, status, process_after, recurrence, platform_id, json_extract(content, '$.prompt') FROM messages_in WHERE id = 'task-1'")
				if len(r) != 1 || r[0][0] != "task" || r[0][1] != "pending" || r[0][2] != "2026-03-02T09:00:00.000Z" || r[0][3] != "0 9 * * 1-5" || r[0][4] != "C1" || r[0][5] != "standup" {
					t.Fatalf("task row %v", r)
				}
			},
		},
		{
			name:       "schedule_task with a bad cron fails for good and tells the agent",
			content:    `{"action":"schedule_task","taskId":"task-2","prompt":"x","recurrence":"99 * * * *"}`,
			wantStatus: mailbox.DeliveredFailed,
			check: func(t *testing.T, f *fixture) {
				if n := len(f.query(mailbox.InboundFile, "SELECT 1 FROM messages_in WHERE id = 'task-2'")); n != 0 {
					t.Fatal("task with a bad cron was scheduled")
				}
				r := f.query(mailbox.InboundFile, "SELECT json_extract(content, '$.text') FROM messages_in WHERE channel_type = 'agent'")
				if len(r) != 1 || !strings.HasPrefix(r[0][0].(string), "Delivery failed (seq") {
					t.Fatalf("notification %v", r)
				}
			},
		},
		{
			name: "cancel_task",
			setup: func(f *fixture) {
				if _, _, err := f.host.EnqueueTask(ctxb, f.ref, mailbox.Task{ID: "task-3", Prompt: "p", Recurrence: "0 * * * *"}); err != nil {
					f.t.Fatal(err)
				}
			},
			content:    `{"action":"cancel_task","taskId":"task-3"}`,
			wantStatus: mailbox.DeliveredOK,
			check: func(t *testing.T, f *fixture) {
				r := f.query(mailbox.InboundFile, "SELECT status, recurrence FROM messages_in WHERE id = 'task-3'")
				if r[0][0] != "completed" || r[0][1] != nil {
					t.Fatalf("cancelled task %v", r)
				}
			},
		},
		{
			name: "update_task clears the recurrence, keeps the prompt",
			setup: func(f *fixture) {
				if _, _, err := f.host.EnqueueTask(ctxb, f.ref, mailbox.Task{ID: "task-4", Prompt: "keep", Recurrence: "0 * * * *"}); err != nil {
					f.t.Fatal(err)
				}
			},
			content:    `{"action":"update_task","taskId":"task-4","recurrence":null,"script":"echo hi"}`,
			wantStatus: mailbox.DeliveredOK,
			check: func(t *testing.T, f *fixture) {
				r := f.query(mailbox.InboundFile, "SELECT recurrence, json_extract(content, '$.prompt'), json_extract(content, '$.script') FROM messages_in WHERE id = 'task-4'")
				if r[0][0] != nil || r[0][1] != "keep" || r[0][2] != "echo hi" {
					t.Fatalf("updated task %v", r)
				}
			},
		},
		{
			name:       "unknown action is marked delivered",
			content:    `{"action":"install_packages","apt":["jq"],"npm":[],"reason":"x"}`,
			wantStatus: mailbox.DeliveredOK,
		},
		{
			name:       "malformed action fails for good",
			content:    `{"action":"pause_task"}`,
			wantStatus: mailbox.DeliveredFailed,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			a := f.openAgent()
			if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "sys-1", Kind: mailbox.KindSystem, Content: json.RawMessage(tc.content)}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.host.Drain(ctxb, f.ref, &HostDeliverer{Host: f.host}); err != nil {
				t.Fatal(err)
			}
			if st := f.one(mailbox.InboundFile, "SELECT status FROM delivered WHERE message_out_id = 'sys-1'"); st != tc.wantStatus {
				t.Fatalf("delivered status %v, want %s", st, tc.wantStatus)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestHostDelivererAgentToAgent(t *testing.T) {
	cases := []struct {
		name       string
		allow      bool
		target     string
		wantStatus string
	}{
		{name: "allowed by a destination", allow: true, target: "ag-2", wantStatus: mailbox.DeliveredOK},
		{name: "own group needs no destination", target: "ag-1", wantStatus: mailbox.DeliveredOK},
		{name: "denied without a destination", target: "ag-2", wantStatus: mailbox.DeliveredFailed},
		{name: "unsafe target group", allow: true, target: "../x", wantStatus: mailbox.DeliveredFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			peer := mailbox.SessionRef{AgentGroupID: tc.target, SessionID: "peer-1"}
			if mailbox.ValidateName("g", tc.target) == nil {
				if err := f.host.InitSession(ctxb, peer); err != nil {
					t.Fatal(err)
				}
			}
			if tc.allow {
				if err := f.host.WriteDestinations(ctxb, f.ref, []mailbox.Destination{{Name: "helper", Type: mailbox.DestinationAgent, AgentGroupID: tc.target}}); err != nil {
					t.Fatal(err)
				}
			}
			a := f.openAgent()
			if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "a2a-1", Content: json.RawMessage(`{"text":"please help"}`),
				Routing: mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: tc.target}}); err != nil {
				t.Fatal(err)
			}
			var next int
			del := &HostDeliverer{Host: f.host, Next: mailbox.DelivererFunc(func(_ context.Context, r mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
				next++
				return "", nil
			})}
			if _, err := f.host.Drain(ctxb, f.ref, del); err != nil {
				t.Fatal(err)
			}
			if next != 0 {
				t.Fatal("agent row went to the channel deliverer")
			}
			if st := f.one(mailbox.InboundFile, "SELECT status FROM delivered WHERE message_out_id = 'a2a-1'"); st != tc.wantStatus {
				t.Fatalf("delivered status %v, want %s", st, tc.wantStatus)
			}
			if tc.wantStatus != mailbox.DeliveredOK {
				return
			}
			rows, err := f.host.InboundRows(ctxb, peer, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Routing.ChannelType != mailbox.ChannelAgent || rows[0].Routing.PlatformID != "ag-1" ||
				rows[0].SourceSessionID != "sess-1" || !strings.Contains(string(rows[0].Content), "please help") {
				t.Fatalf("peer rows %+v", rows)
			}
		})
	}
}

// Without a registry as well, a reply to a peer that names no message goes
// to the peer's session that last wrote to this one, though another of the
// peer's sessions was written more recently.
func TestHostDelivererPeerAffinity(t *testing.T) {
	f := newFixture(t)
	p1 := mailbox.SessionRef{AgentGroupID: "ag-2", SessionID: "p-1"}
	p2 := mailbox.SessionRef{AgentGroupID: "ag-2", SessionID: "p-2"}
	for _, p := range []mailbox.SessionRef{p1, p2} {
		if err := f.host.InitSession(ctxb, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.host.Forward(ctxb, p1, mailbox.OutboundRow{ID: "q1", Content: json.RawMessage(`{"text":"question from p-1"}`)}, f.ref); err != nil {
		t.Fatal(err)
	}
	// p-2 is the peer's most recently written session.
	if _, _, err := f.host.Enqueue(ctxb, p2, mailbox.InboundMessage{ID: "chat-1", Kind: mailbox.KindChat, Content: json.RawMessage(`{"text":"busy"}`)}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	p2In, _ := f.host.Layout().InboundPath(p2)
	if err := os.Chtimes(p2In, later, later); err != nil {
		t.Fatal(err)
	}
	if err := f.host.WriteDestinations(ctxb, f.ref, []mailbox.Destination{{Name: "peer", Type: mailbox.DestinationAgent, AgentGroupID: "ag-2"}}); err != nil {
		t.Fatal(err)
	}
	a := f.openAgent()
	if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "a1", Content: json.RawMessage(`{"text":"answer"}`),
		Routing: mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: "ag-2"}}); err != nil {
		t.Fatal(err)
	}
	if res, err := f.host.Drain(ctxb, f.ref, &HostDeliverer{Host: f.host}); err != nil || res.Delivered != 1 {
		t.Fatalf("drain %+v: %v", res, err)
	}
	for p, want := range map[mailbox.SessionRef]int{p1: 1, p2: 0} {
		rows, err := f.host.InboundRows(ctxb, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			if r.Routing.PlatformID == "ag-1" && strings.Contains(string(r.Content), "answer") {
				n++
			}
		}
		if n != want {
			t.Errorf("%s got %d answers, want %d", p, n, want)
		}
	}
}

func TestHostDelivererWithoutChannelLeavesRowsPending(t *testing.T) {
	f := newFixture(t)
	a := f.openAgent()
	if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "o-1", Content: json.RawMessage(`{"text":"x"}`), Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.host.Drain(ctxb, f.ref, &HostDeliverer{Host: f.host})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deferred != 1 || res.Delivered != 0 {
		t.Fatalf("drain %+v, want the row deferred", res)
	}
	if n := len(f.query(mailbox.InboundFile, "SELECT 1 FROM delivered UNION ALL SELECT 1 FROM delivery_attempts")); n != 0 {
		t.Fatalf("%d delivery records for a row no channel could take", n)
	}
}
