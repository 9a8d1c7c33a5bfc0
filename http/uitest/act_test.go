package uitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The example sessions (examples/conversations.jsonl) before and after
// pruneCut, with their message counts: the four ended ones started
// before it go; the slack, cron and later telegram ones, and the open
// cli session, started after it.
var (
	pruneCut    = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	pruneBefore = map[string]int{"20260315_092437_c9a6ff": 11, "20260402_140511_4e81b2": 11, "20260402_141202_d07a13": 8, "20260509_081244_a3f9e0": 8}
	pruneAfter  = []string{"20260617_090003_5b2c7d", "20260701_020000_e1d442", "20260823_113005_6c0b95", "20261006_164519_f28a0c"}
)

// pruneDaysNow is the age in days that puts a prune's cutoff at pruneCut.
func pruneDaysNow() string {
	return fmt.Sprintf("%.4f", time.Since(pruneCut).Hours()/24)
}

// exists reports whether the session is in the store.
func (s *site) exists(id string) bool {
	s.t.Helper()
	_, err := s.st.GetSession(ctxb, id)
	if err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		s.t.Fatal(err)
	}
	return err == nil
}

// TestBrowserPrune prunes from the web UI: refused without the token and
// from another origin (nothing goes), then with the token the preview
// lists what would go (count, sessions, messages) and deletes nothing,
// a source narrows it, and the confirmation deletes exactly what the
// preview listed.
func TestBrowserPrune(t *testing.T) {
	s := newSite(t, siteOptions{examplesOnly: true})
	days := pruneDaysNow()
	all := func() {
		t.Helper()
		for id := range pruneBefore {
			if !s.exists(id) {
				t.Fatalf("%s is gone", id)
			}
		}
	}
	p := newPage(t)
	p.expectConsole("status of 401 (Unauthorized)")
	p.expectConsole("status of 403 (Forbidden)")
	p.open(s.url + "/prune?older_than=" + days)
	if msg := errorShown(p); msg != "writes need the server's token" {
		t.Errorf("the prune preview without the token shows %q", msg)
	}
	resp, err := http.PostForm(s.url+"/prune", url.Values{"older_than": {days}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a prune without the token answers %d", resp.StatusCode)
	}
	p.open(s.url + "/?token=" + testToken)
	p.open(hostilePoster(t, s.url+"/prune", map[string]string{"older_than": "1"}))
	if msg := errorShown(p); !strings.Contains(msg, "another origin") {
		t.Errorf("a prune from another origin shows %q", msg)
	}
	all()

	p.open(s.url + "/")
	p.click("#prune-link")
	p.waitLoaded(`document.body.dataset.page === "prune"`)
	p.setValue("#prune-days", days)
	p.click("#prune-preview")
	p.waitLoaded(`document.querySelector("#prune-count") !== null`)
	if got := p.text("#prune-count"); got != "4 sessions" {
		t.Errorf("the preview counts %q", got)
	}
	if got := p.text("#prune-messages"); got != "38 messages" {
		t.Errorf("the preview counts %q", got)
	}
	listed := eval[[]string](p, `[...document.querySelectorAll("#prune-sessions tr[data-session]")].map(r => r.dataset.session)`)
	slices.Sort(listed)
	var want []string
	for id := range pruneBefore {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the preview lists %v, want %v", listed, want)
	}
	p.shot("prune-preview")
	all()

	p.setValue("#prune-source", "telegram")
	p.click("#prune-preview")
	p.waitLoaded(`document.querySelector("#prune-count") !== null && document.querySelector("#prune-count").innerText === "1 session"`)
	if got := p.text("#prune-messages"); got != "8 messages" {
		t.Errorf("the telegram preview counts %q", got)
	}
	p.click("#prune")
	p.waitLoaded(`document.querySelector("#prune-done") !== null`)
	if got := p.text("#prune-done"); got != "Pruned 1 session(s)." {
		t.Errorf("after the prune the page says %q", got)
	}
	for id := range pruneBefore {
		if gone := !s.exists(id); gone != (id == "20260509_081244_a3f9e0") {
			t.Errorf("after the telegram prune %s gone: %v", id, gone)
		}
	}
	for _, id := range pruneAfter {
		if !s.exists(id) {
			t.Errorf("the prune took %s, which started after the cutoff or is open", id)
		}
	}

	p.expectConsole("status of 400 (Bad Request)")
	p.open(s.url + "/prune?older_than=-3")
	if msg := errorShown(p); !strings.Contains(msg, "older than") || !strings.Contains(msg, "-3") {
		t.Errorf("a negative age shows %q", msg)
	}
}

// daemonSays writes the host daemon's status file for the site's data
// root, fresh, with a container it started running for ref.
func (s *site) daemonSays(ref mailbox.SessionRef) {
	s.t.Helper()
	now := time.Now()
	st := hostd.Status{PID: os.Getpid(), StartedAt: now, UpdatedAt: now, FullSweep: time.Hour,
		Sessions: map[string]hostd.SessionHealth{ref.String(): {Running: true}}}
	b, err := json.Marshal(st)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.root, hostd.StatusFile), b, 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// TestBrowserMailboxForceRequeue: a session whose container the host
// daemon started is labelled running and its requeue refused, while one
// only seen by its fresh heartbeat is labelled so; the running one's
// forced requeue asks first on a page naming the failed rows and the
// container, is refused without the token and from another origin, and
// with the token requeues every failed row.
func TestBrowserMailboxForceRequeue(t *testing.T) {
	s := newSite(t, siteOptions{mailboxes: true, examplesOnly: true})
	s.daemonSays(failingRef)
	p := newPage(t)
	p.expectConsole("status of 401 (Unauthorized)")
	p.expectConsole("status of 403 (Forbidden)")
	p.expectConsole("status of 409 (Conflict)")
	p.open(s.url + "/mailboxes?token=" + testToken)
	labels := eval[map[string]string](p, `Object.fromEntries(Array.from(document.querySelectorAll("#mailboxes tbody tr"), r => [r.dataset.mailbox, (r.querySelector("[data-activity]") || {textContent: ""}).textContent]))`)
	if labels["ag-main/sess-failing"] != "· container running" || labels["ag-main/sess-healthy"] != "· recently seen" {
		t.Errorf("the agents are labelled %q", labels)
	}

	page := s.url + "/mailboxes/ag-main/sess-failing"
	p.open(page)
	if got := p.text("#mailbox-activity"); got != "container running" {
		t.Errorf("the mailbox page says the agent is %q", got)
	}
	requeue := `#outbound tr[data-row="out-report"] button.requeue`
	p.click(requeue)
	p.waitFor(`document.querySelector('#outbound tr[data-row="out-report"] [data-result]').textContent.startsWith("refused")`)
	if msg := p.text(`#outbound tr[data-row="out-report"] [data-result]`); !strings.Contains(msg, "a container the host daemon started runs") {
		t.Errorf("the requeue beside a running container shows %q", msg)
	}
	if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveredFailed {
		t.Fatalf("the refused requeue changed the row to %s", st)
	}

	p.click("#requeue-force-link")
	p.waitLoaded(`document.body.dataset.page === "requeue"`)
	if got := p.text("#requeue-rows"); got != "0 failed inbound rows and 2 failed outbound rows" {
		t.Errorf("the confirmation counts %q", got)
	}
	if got := p.text("#requeue-activity"); !strings.Contains(got, "still runs") {
		t.Errorf("the confirmation says %q", got)
	}
	p.shot("mailbox-requeue-force")
	if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveredFailed {
		t.Fatalf("the confirmation page requeued already: %s", st)
	}
	p.open(hostilePoster(t, page+"/requeue", map[string]string{"force": "1"}))
	if msg := errorShown(p); !strings.Contains(msg, "another origin") {
		t.Errorf("a forced requeue from another origin shows %q", msg)
	}
	resp, err := http.PostForm(page+"/requeue", url.Values{"force": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forced requeue without the token answers %d", resp.StatusCode)
	}
	if st := s.deliveryOf(failingRef, "out-report"); st != mailbox.DeliveredFailed {
		t.Fatalf("a refused forced requeue changed the row to %s", st)
	}

	p.open(page + "/requeue")
	p.click("#requeue-force")
	p.waitLoaded(`location.pathname === "/mailboxes/ag-main/sess-failing"`)
	for _, id := range []string{"out-report", "out-hostile"} {
		if st := s.deliveryOf(failingRef, id); st != mailbox.DeliveryUndelivered {
			t.Errorf("after the forced requeue %s is %s", id, st)
		}
	}
}
