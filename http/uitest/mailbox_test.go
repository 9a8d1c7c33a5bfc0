package uitest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/sessiondb/sessiondb/mailbox"
)

// The mailboxes of the site: a healthy session, and one whose deliveries
// failed (one for good, one to be retried) with a hostile message among
// them.
var (
	okRef      = mailbox.SessionRef{AgentGroupID: "ag-main", SessionID: "sess-healthy"}
	failingRef = mailbox.SessionRef{AgentGroupID: "ag-main", SessionID: "sess-failing"}
)

// hostileOutbound is the text of an outbound message crafted to break out
// of the mailbox page.
const hostileOutbound = `</summary></details><script>pwned=20</script><img src=x onerror=pwned=21>`

// addMailboxes builds the data root: sessions with rows in every state,
// sent by a real agent side and drained by the host with deliverers that
// succeed or fail.
func (s *site) addMailboxes() {
	s.t.Helper()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: s.root}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.host = h
	for _, ref := range []mailbox.SessionRef{okRef, failingRef} {
		if err := h.InitSession(ctxb, ref); err != nil {
			s.t.Fatal(err)
		}
	}
	deliver := func(ref mailbox.SessionRef, d mailbox.DelivererFunc, msgs ...mailbox.OutboundMessage) {
		dir, _ := h.Layout().SessionDir(ref)
		a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
		if err != nil {
			s.t.Fatal(err)
		}
		defer a.Close()
		if err := a.TouchHeartbeat(); err != nil {
			s.t.Fatal(err)
		}
		for _, m := range msgs {
			if _, err := a.Send(ctxb, m); err != nil {
				s.t.Fatal(err)
			}
		}
		if _, err := h.Drain(ctxb, ref, d); err != nil {
			s.t.Fatal(err)
		}
	}
	chat := func(id, text string) mailbox.OutboundMessage {
		c, _ := json.Marshal(map[string]string{"text": text})
		return mailbox.OutboundMessage{ID: id, Content: c, Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C042"}}
	}
	enqueue := func(ref mailbox.SessionRef, id, text string) {
		c, _ := json.Marshal(map[string]string{"text": text, "sender": "dana"})
		if _, _, err := h.Enqueue(ctxb, ref, mailbox.InboundMessage{ID: id, Kind: "chat", Content: c,
			Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C042"}}); err != nil {
			s.t.Fatal(err)
		}
	}
	enqueue(okRef, "in-hello", "Good morning! Anything on fire?")
	deliver(okRef, func(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		return "slack:C042:1.0001", nil
	}, chat("out-hello", "Morning, Dana. All quiet."))

	enqueue(failingRef, "in-report", "Post the weekly report to #ops.")
	deliver(failingRef, func(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		switch row.ID {
		case "out-report":
			return "", mailbox.Permanent(errors.New("channel_not_found: C042"))
		case "out-hostile":
			return "", mailbox.Permanent(errors.New("refused"))
		}
		return "", errors.New("adapter down (HTTP 502)")
	}, chat("out-report", "Weekly report: 14 deploys, 0 incidents."), chat("out-retry", "Report posted."), chat("out-hostile", hostileOutbound))
}

// deliveryOf reads an outbound row's delivery status from the store.
func (s *site) deliveryOf(ref mailbox.SessionRef, id string) string {
	s.t.Helper()
	_, outs, err := s.host.Inspect(ctxb, ref, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, o := range outs {
		if o.ID == id {
			return o.Delivery.Status
		}
	}
	s.t.Fatalf("no outbound row %s", id)
	return ""
}

// TestBrowserMailboxRequeue opens the mailboxes, sees the failing session
// marked, and requeues its failed delivery: refused without the token,
// done once the browser has it (the URL the server prints sets it).
func TestBrowserMailboxRequeue(t *testing.T) {
	s, p := visit(t, siteOptions{mailboxes: true}, "/mailboxes")
	p.shot("mailboxes")
	rows := eval[[]string](p, `Array.from(document.querySelectorAll("#mailboxes tbody tr"), r => r.dataset.mailbox + " " + r.className)`)
	if !slices.Equal(rows, []string{"ag-main/sess-failing bad", "ag-main/sess-healthy "}) {
		t.Errorf("mailbox rows %q", rows)
	}
	if got := p.text(`#mailboxes tr[data-mailbox="ag-main/sess-failing"] td[data-label="failed out"]`); got != "2" {
		t.Errorf("failed out %q", got)
	}

	p.click(`#mailboxes tr[data-mailbox="ag-main/sess-failing"] td.title a`)
	p.waitLoaded(`document.body.dataset.page === "mailbox"`)
	p.shot("mailbox")
	states := eval[map[string]string](p, `Object.fromEntries(Array.from(document.querySelectorAll("#outbound tbody tr"), r => [r.dataset.row, r.querySelector("td[data-label=delivery]").firstChild.textContent]))`)
	want := map[string]string{"out-report": "failed", "out-retry": "retrying", "out-hostile": "failed"}
	for id, st := range want {
		if states[id] != st {
			t.Errorf("row %s shows %q, want %q (all: %v)", id, states[id], st, states)
		}
	}
	if n := eval[int](p, `document.querySelectorAll("#outbound tr[data-row=out-retry] button.requeue").length`); n != 0 {
		t.Error("a retrying row offers requeue")
	}

	// Without the token the write is refused, and nothing changes.
	requeue := `#outbound tr[data-row="out-report"] button.requeue`
	p.expectConsole("status of 401 (Unauthorized)")
	p.click(requeue)
	p.waitFor(`document.querySelector('#outbound tr[data-row="out-report"] [data-result]').textContent.startsWith("refused")`)
	if msg := p.text(`#outbound tr[data-row="out-report"] [data-result]`); msg != "refused: writes need the server's token" {
		t.Errorf("refusal shows %q", msg)
	}
	if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveredFailed {
		t.Fatalf("refused requeue changed the row to %s", st)
	}

	// With it (the server's printed URL carries it once; a cookie keeps
	// it), the row goes back in line and the page shows it.
	p.open(s.url + "/mailboxes/ag-main/sess-failing?token=" + testToken)
	if loc := eval[string](p, `location.href`); loc != s.url+"/mailboxes/ag-main/sess-failing" {
		t.Errorf("after the token, the page is %s", loc)
	}
	p.click(requeue)
	p.waitFor(`(() => { const r = document.querySelector('#outbound tr[data-row="out-report"]'); return r && !r.querySelector("button.requeue") })()`)
	if st := p.text(`#outbound tr[data-row="out-report"] td[data-label=delivery]`); st != "undelivered" {
		t.Errorf("requeued row shows %q", st)
	}
	if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveryUndelivered {
		t.Errorf("requeued row is %s in the store", st)
	}
	// The other failed row was not touched.
	if st := s.deliveryOf(failingRef, "out-hostile"); st != mailbox.DeliveredFailed {
		t.Errorf("the other failed row is %s", st)
	}
	p.shot("mailbox-requeued")
}

// TestBrowserTwoServersKeepTheirLogins runs two servers on two ports of
// 127.0.0.1, each with a token of its own, as two `sessiondb serve` would.
// The browser logs into both (a browser keeps cookies by host, not port),
// then writes through each: each server's cookie is its own, so the
// second login does not undo the first.
func TestBrowserTwoServersKeepTheirLogins(t *testing.T) {
	one := newSite(t, siteOptions{mailboxes: true, token: "token-of-one"})
	two := newSite(t, siteOptions{mailboxes: true, token: "token-of-two"})
	p := newPage(t)
	page := "/mailboxes/ag-main/sess-failing"
	p.open(one.url + page + "?token=token-of-one")
	p.open(two.url + page + "?token=token-of-two")
	requeue := func(s *site) {
		t.Helper()
		p.open(s.url + page)
		p.click(`#outbound tr[data-row="out-report"] button.requeue`)
		p.waitFor(`(() => { const r = document.querySelector('#outbound tr[data-row="out-report"]'); return r && !r.querySelector("button.requeue") || !!document.querySelector('#outbound tr[data-row="out-report"] [data-result].error') })()`)
		if msg := eval[string](p, `(document.querySelector('#outbound tr[data-row="out-report"] [data-result].error') || {textContent: ""}).textContent`); msg != "" {
			t.Errorf("%s: the requeue was %s", s.url, msg)
		}
		if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveryUndelivered {
			t.Errorf("%s: the requeued row is %s in the store", s.url, st)
		}
	}
	requeue(one)
	requeue(two)
	p.shot("second-server-requeued")
}

// TestBrowserMailboxFollows keeps a mailbox page open while the agent
// sends: the new row appears without a reload, and the row the reader
// unfolded stays unfolded.
func TestBrowserMailboxFollows(t *testing.T) {
	s, p := visit(t, siteOptions{mailboxes: true}, "/mailboxes/ag-main/sess-healthy")
	eval[bool](p, `window.notReloaded = true`)
	p.click(`#outbound tr[data-row="out-hello"] details > summary`)
	p.waitFor(`document.querySelector('#outbound tr[data-row="out-hello"] details').open`)

	dir, _ := s.host.Layout().SessionDir(okRef)
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "out-later", Content: json.RawMessage(`{"text":"One more thing."}`),
		Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C042"}}); err != nil {
		t.Fatal(err)
	}
	p.waitFor(`!!document.querySelector('#outbound tr[data-row="out-later"]')`)
	if !eval[bool](p, `window.notReloaded === true`) {
		t.Error("the page reloaded")
	}
	if !eval[bool](p, `document.querySelector('#outbound tr[data-row="out-hello"] details').open`) {
		t.Error("the unfolded row folded again")
	}
	if st := p.text(`#outbound tr[data-row="out-later"] td[data-label=delivery]`); st != "undelivered" {
		t.Errorf("new row shows %q", st)
	}
}
