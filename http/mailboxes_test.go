package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/hostd"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// mailboxFixture is a fixture serving a data root with two sessions: s1
// has one due inbound row, s2 an outbound row whose delivery failed.
type mailboxFixture struct {
	*fixture
	root  string
	host  *mailbox.Host
	agent *mailbox.Agent
	s1    mailbox.SessionRef
	s2    mailbox.SessionRef
}

func newMailboxFixture(t *testing.T) *mailboxFixture {
	t.Helper()
	m := &mailboxFixture{root: filepath.Join(t.TempDir(), "data"),
		s1: mailbox.SessionRef{AgentGroupID: "g1", SessionID: "s1"}, s2: mailbox.SessionRef{AgentGroupID: "g1", SessionID: "s2"}}
	f := newFixture(t, sdbhttp.Config{})
	m.fixture = f
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: m.root}, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	m.host = h
	for _, ref := range []mailbox.SessionRef{m.s1, m.s2} {
		if err := h.InitSession(ctxb, ref); err != nil {
			t.Fatal(err)
		}
	}
	m.enqueue("in-1")
	dir, _ := h.Layout().SessionDir(m.s2)
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{Now: f.clock.Now})
	m.agent = testkit.Opened(t, a, err)
	m.send("out-1")
	res, err := h.Drain(ctxb, m.s2, mailbox.DelivererFunc(func(ctx2 context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		return "", mailbox.Permanent(errors.New("channel refused <script>"))
	}))
	if err != nil || res.Failed != 1 {
		t.Fatalf("drain: %+v, %v", res, err)
	}
	f.serve(sdbhttp.Config{Mailboxes: h, DataRoot: m.root, Token: testToken, Poll: time.Hour})
	return m
}

func (m *mailboxFixture) enqueue(id string) {
	m.t.Helper()
	if _, _, err := m.host.Enqueue(ctxb, m.s1, mailbox.InboundMessage{ID: id, Kind: "chat", Content: json.RawMessage(`{"text":"hi"}`)}); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mailboxFixture) send(id string) {
	m.t.Helper()
	if _, err := m.agent.Send(ctxb, mailbox.OutboundMessage{ID: id, Content: json.RawMessage(`{"text":"reply"}`)}); err != nil {
		m.t.Fatal(err)
	}
}

type mailboxesAnswer struct {
	Now         time.Time
	HostRunning bool `json:"host_running"`
	Sessions    []hostd.SessionReport
}

type mailboxAnswer struct {
	Session  hostd.SessionReport
	Inbound  []mailbox.InboundView
	Outbound []mailbox.OutboundView
}

func TestMailboxes(t *testing.T) {
	m := newMailboxFixture(t)
	var all mailboxesAnswer
	m.get("/api/v1/mailboxes").ok(t, &all)
	if len(all.Sessions) != 2 || all.Sessions[0].Ref != m.s1 || all.Sessions[0].Due != 1 || all.Sessions[1].OutFailed != 1 || all.HostRunning {
		t.Fatalf("report %+v", all)
	}
	var one mailboxAnswer
	m.get("/api/v1/mailboxes/g1/s2?state=failed").ok(t, &one)
	if len(one.Outbound) != 1 || one.Outbound[0].ID != "out-1" || one.Outbound[0].Delivery.Status != mailbox.DeliveredFailed ||
		one.Outbound[0].Delivery.LastError == "" || len(one.Inbound) != 0 {
		t.Fatalf("failed rows %+v", one)
	}
	m.get("/api/v1/mailboxes/g1/s1").ok(t, &one)
	if len(one.Inbound) != 1 || one.Inbound[0].State != mailbox.StatusPending || one.Session.Due != 1 {
		t.Fatalf("s1 %+v", one)
	}
	m.get("/api/v1/mailboxes/g1/nope").apiError(t, 404, "not_found")
	m.get("/api/v1/mailboxes/g1/%2E%2E").apiError(t, 400, "invalid")
	m.get("/api/v1/mailboxes/g1/s%01x").apiError(t, 400, "invalid")

	// Requeue is a write: the token is needed; then the row is undelivered
	// again.
	m.do("POST", "/api/v1/mailboxes/g1/s2/requeue", `{"ids":["out-1"]}`).apiError(t, 401, "unauthorized")
	var res mailbox.RequeueResult
	m.do("POST", "/api/v1/mailboxes/g1/s2/requeue", `{"ids":["out-1"]}`, auth...).ok(t, &res)
	if res.Outbound != 1 {
		t.Fatalf("requeue %+v", res)
	}
	m.get("/api/v1/mailboxes/g1/s2").ok(t, &one)
	if one.Outbound[0].Delivery.Status != mailbox.DeliveryUndelivered || one.Session.OutFailed != 0 {
		t.Fatalf("after requeue %+v", one.Outbound)
	}

	// The gauges read the mailboxes at each scrape.
	body := m.get("/metrics").body
	for _, want := range []string{"sessiondb_mailbox_due_messages 1", "sessiondb_mailbox_sessions 2", `sessiondb_mailbox_outbound_messages{state="undelivered"} 1`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "sessiondb_mailbox"))
		}
	}
}

func TestNoMailboxRoutesWithoutData(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.get("/api/v1/mailboxes").apiError(t, 404, "not_found")
}

func TestRequeueRefusedWhileContainerRuns(t *testing.T) {
	m := newMailboxFixture(t)
	st := hostd.Status{PID: 1, StartedAt: m.clock.Now(), UpdatedAt: m.clock.Now(), FullSweep: time.Minute,
		Sessions: map[string]hostd.SessionHealth{m.s2.String(): {Running: true}}}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(m.root, hostd.StatusFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	m.do("POST", "/api/v1/mailboxes/g1/s2/requeue", "", auth...).apiError(t, 409, "conflict")
	// Forced, as the CLI's --force, it goes ahead.
	var forced mailbox.RequeueResult
	m.do("POST", "/api/v1/mailboxes/g1/s2/requeue", `{"force":true}`, auth...).ok(t, &forced)
	if forced.Outbound != 1 {
		t.Errorf("the forced requeue %+v, want the failed delivery", forced)
	}
	var all mailboxesAnswer
	m.get("/api/v1/mailboxes").ok(t, &all)
	if !all.HostRunning || all.Sessions[1].Host == nil || !all.Sessions[1].Host.Running {
		t.Fatalf("the daemon's view is missing: %+v", all)
	}
}

func TestMailboxEventsLive(t *testing.T) {
	m := newMailboxFixture(t)
	live := m.openSSE("/api/v1/mailboxes/g1/s2/events")
	if ev := live.next(); ev.Name != "status" {
		t.Fatalf("first event %+v, want the status", ev)
	}
	m.send("out-2")
	ev := live.next()
	for ev.Name == "status" {
		ev = live.next()
	}
	var row mailbox.OutboundView
	json.Unmarshal([]byte(ev.Data), &row)
	if ev.Name != "outbound" || row.ID != "out-2" || row.Delivery.Status != mailbox.DeliveryUndelivered {
		t.Fatalf("event %+v", ev)
	}
	// Resuming after the first row's seq replays the second.
	again := m.openSSE("/api/v1/mailboxes/g1/s2/events", "Last-Event-ID", "1")
	// (The failed delivery's notice to the agent, seq 2, is traffic too.)
	for {
		ev := again.next()
		if ev.Name != "outbound" {
			continue
		}
		json.Unmarshal([]byte(ev.Data), &row)
		if row.ID != "out-2" {
			t.Fatalf("resumed: %+v", ev)
		}
		break
	}
}

func TestMailboxesEventsLive(t *testing.T) {
	m := newMailboxFixture(t)
	live := m.openSSE("/api/v1/mailboxes/events")
	// The client's view, kept as the events say: a report replaces it, a
	// session event updates one session.
	view := map[mailbox.SessionRef]hostd.SessionReport{}
	until := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			ev := live.next()
			switch ev.Name {
			case "report":
				var rep mailboxesAnswer
				json.Unmarshal([]byte(ev.Data), &rep)
				clear(view)
				for _, s := range rep.Sessions {
					view[s.Ref] = s
				}
			case "session":
				var s hostd.SessionReport
				json.Unmarshal([]byte(ev.Data), &s)
				view[s.Ref] = s
			default:
				t.Fatalf("waiting for %s: unexpected event %+v", what, ev)
			}
		}
	}
	until("the first report", func() bool { return len(view) == 2 && view[m.s1].Due == 1 })
	m.enqueue("in-2")
	until("s1's second due row", func() bool { return view[m.s1].Due == 2 })
	s3 := mailbox.SessionRef{AgentGroupID: "g2", SessionID: "s3"}
	if err := m.host.InitSession(ctxb, s3); err != nil {
		t.Fatal(err)
	}
	until("a new session", func() bool { _, ok := view[s3]; return ok })
}
