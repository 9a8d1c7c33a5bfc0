package uitest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// writesID is the session the write tests change.
const writesID = "write_me_0001"

// addWritable adds a session of three messages for the write tests.
func (s *site) addWritable() {
	s.t.Helper()
	s.session(writesID, "cli", "anthropic/claude-sonnet-4.6", "Before the rename")
	for _, m := range []string{"one", "two", "three"} {
		s.msg(sessionMsg(writesID, "user", m))
	}
	// A delegate subagent of it, which its delete takes along.
	if _, err := s.st.CreateSession(ctxb, sessiondb.NewSession{ID: writesDelegate, Source: "cli", ParentSessionID: writesID,
		ModelConfig: map[string]any{"_delegate_from": writesID}}); err != nil {
		s.t.Fatal(err)
	}
}

// writesDelegate is the delegate subagent session of writesID.
const writesDelegate = "write_me_delegate"

// title is the session's title in the store.
func (s *site) title(id string) string {
	s.t.Helper()
	x, err := s.st.GetSession(ctxb, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return deref(x.Title)
}

// hostilePoster serves, on another origin, a page whose form posts the
// fields to target as soon as it loads: what another site could do with
// the user's browser.
func hostilePoster(t *testing.T, target string, fields map[string]string) string {
	t.Helper()
	var inputs strings.Builder
	for k, v := range fields {
		fmt.Fprintf(&inputs, `<input name="%s" value="%s">`, k, v)
	}
	page := `<!doctype html><form id="f" method="post" action="` + target + `">` + inputs.String() +
		`</form><script>document.getElementById("f").submit()</script>`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// errorShown waits for the error page and returns its message.
func errorShown(p *page) string {
	p.waitLoaded(`document.body.dataset.page === "error"`)
	return p.text("#error-message")
}

// TestBrowserSessionWrites uses the session page's forms: refused without
// the token and from another origin (nothing changes, the page says why
// in words), then with the token: rename, end, reopen, and delete after a
// confirmation that names the session and its message count.
func TestBrowserSessionWrites(t *testing.T) {
	s := newSite(t, siteOptions{examplesOnly: true})
	s.addWritable()
	p := newPage(t)
	page := s.url + "/s/" + sdbhttp.SessionPath(writesID)
	p.open(page)

	// Without the token: the form posts, the server refuses.
	p.expectConsole("status of 401 (Unauthorized)")
	p.expectConsole("status of 403 (Forbidden)")
	p.setValue("#rename-title", "Renamed without a token")
	p.click("#rename")
	if msg := errorShown(p); msg != "writes need the server's token" {
		t.Errorf("rename without the token shows %q", msg)
	}
	if got := s.title(writesID); got != "Before the rename" {
		t.Fatalf("a refused rename left the title %q", got)
	}

	// Logged in, but the post comes from another origin's page.
	p.open(page + "?token=" + testToken)
	for _, action := range []struct{ path, field, value string }{
		{"/title", "title", "Renamed by another site"},
		{"/end", "reason", "ended by another site"},
		{"/delete", "x", "y"},
	} {
		p.open(hostilePoster(t, s.url+"/s/"+sdbhttp.SessionPath(writesID)+action.path, map[string]string{action.field: action.value}))
		if msg := errorShown(p); !strings.Contains(msg, "another origin") {
			t.Errorf("%s from another origin shows %q", action.path, msg)
		}
	}
	x, err := s.st.GetSession(ctxb, writesID)
	if err != nil {
		t.Fatalf("after the cross-origin posts: %v", err)
	}
	if deref(x.Title) != "Before the rename" || x.EndedAt != nil {
		t.Fatalf("cross-origin posts changed the session: title %q, ended %v", deref(x.Title), x.EndedAt)
	}

	// With the token, from this server's own page.
	p.open(page)
	p.setValue("#rename-title", "After the rename")
	p.click("#rename")
	p.waitLoaded(`document.querySelector("#session-title") && document.querySelector("#session-title").innerText === "After the rename"`)
	if got := s.title(writesID); got != "After the rename" {
		t.Errorf("renamed title in the store %q", got)
	}
	p.shot("session-write-controls")

	p.setValue("#end-reason", "done for today")
	p.click("#end")
	p.waitLoaded(`document.querySelector("#reopen") !== null`)
	if x, _ := s.st.GetSession(ctxb, writesID); x.EndedAt == nil || deref(x.EndReason) != "done for today" {
		t.Errorf("ended session: ended %v, reason %q", x.EndedAt, deref(x.EndReason))
	}
	p.click("#reopen")
	p.waitLoaded(`document.querySelector("#end") !== null`)
	if x, _ := s.st.GetSession(ctxb, writesID); x.EndedAt != nil {
		t.Errorf("reopened session still ended at %v", *x.EndedAt)
	}

	p.click("#delete-link")
	p.waitLoaded(`document.body.dataset.page === "delete"`)
	if got := p.text("#delete-session"); got != "After the rename" {
		t.Errorf("the confirmation names %q", got)
	}
	if got := p.text("#delete-messages"); got != "3 messages" {
		t.Errorf("the confirmation counts %q", got)
	}
	if got := p.text("#delete-delegates"); got != writesDelegate {
		t.Errorf("the confirmation names the delegates %q", got)
	}
	p.shot("session-delete-confirm")
	if _, err := s.st.GetSession(ctxb, writesID); err != nil {
		t.Fatalf("the confirmation page deleted already: %v", err)
	}
	p.click("#delete")
	p.waitLoaded(`location.pathname === "/"`)
	if _, err := s.st.GetSession(ctxb, writesID); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("after delete the session reads %v", err)
	}
	if _, err := s.st.GetSession(ctxb, writesDelegate); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("after delete its delegate reads %v", err)
	}
}

// TestBrowserReadOnlyHasNoWriteControl serves read-only: no page holds a
// form that posts, a button that writes or a link to the delete
// confirmation, and the write routes do not exist.
func TestBrowserReadOnlyHasNoWriteControl(t *testing.T) {
	s := newSite(t, siteOptions{readOnly: true, mailboxes: true, examplesOnly: true})
	s.addWritable()
	p := newPage(t)
	p.open(s.url + "/?token=" + testToken)
	p.expectConsole("status of 404 (Not Found)") // /prune: no such page
	for _, path := range []string{"/", "/s/" + sdbhttp.SessionPath(writesID), "/search?q=one", "/analytics", "/mailboxes", "/mailboxes/ag-main/sess-failing", "/prune", "/mailboxes/ag-main/sess-failing/requeue"} {
		p.open(s.url + path)
		n := eval[int](p, `document.querySelectorAll('form[method=post], button.requeue, a[href$="/delete"], a[href^="/prune"], #session-controls, #archive, #requeue-force-link').length`)
		if n != 0 {
			t.Errorf("read-only %s shows %d write controls", path, n)
		}
	}
	p.shot("read-only-session")
	resp, err := http.Post(s.url+"/s/"+sdbhttp.SessionPath(writesID)+"/title", "application/x-www-form-urlencoded", strings.NewReader("title=x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("read-only rename answers %d", resp.StatusCode)
	}
}

// setValue types v into the input sel, replacing what it held.
func (p *page) setValue(sel, v string) {
	p.t.Helper()
	p.waitFor(`document.querySelector(` + jsString(sel) + `) !== null`)
	eval[bool](p, `(() => { document.querySelector(`+jsString(sel)+`).value = `+jsString(v)+`; return true })()`)
}

// TestBrowserArchive archives and unarchives from the session page of a
// file a newer Hermes wrote: refused without the token and from another
// origin, then with the token the lineage leaves the list and comes back.
// A schema-6 store, which cannot archive, shows no archive button.
func TestBrowserArchive(t *testing.T) {
	const id = "h21-lineage-mid"
	s := newSite(t, siteOptions{hermes21: true})
	v6 := newSite(t, siteOptions{examplesOnly: true})
	v6.addWritable()
	p := newPage(t)
	page := s.url + "/s/" + sdbhttp.SessionPath(id)
	archived := func() bool {
		t.Helper()
		x, err := s.st.GetSession(ctxb, id)
		if err != nil {
			t.Fatal(err)
		}
		return x.Archived != 0
	}
	p.open(page)
	p.expectConsole("status of 401 (Unauthorized)")
	p.expectConsole("status of 403 (Forbidden)")
	p.click("#archive")
	if msg := errorShown(p); msg != "writes need the server's token" {
		t.Errorf("archive without the token shows %q", msg)
	}
	p.open(page + "?token=" + testToken)
	p.open(hostilePoster(t, page+"/archive", map[string]string{"x": "y"}))
	if msg := errorShown(p); !strings.Contains(msg, "another origin") {
		t.Errorf("archive from another origin shows %q", msg)
	}
	if archived() {
		t.Fatal("a refused archive archived the session")
	}

	p.open(page)
	p.click("#archive")
	p.waitLoaded(`document.querySelector("#unarchive") !== null`)
	if !archived() {
		t.Fatal("the archive button did not archive")
	}
	if got := p.text("#archived-mark"); !strings.Contains(got, "hidden from listings") {
		t.Errorf("the archived session's page says %q", got)
	}
	p.open(s.url + "/")
	if n := eval[int](p, `document.querySelectorAll('tr[data-session^="h21-lineage"]').length`); n != 0 {
		t.Errorf("the list shows %d rows of the archived lineage", n)
	}
	p.open(page)
	p.click("#unarchive")
	p.waitLoaded(`document.querySelector("#archive") !== null`)
	if archived() {
		t.Fatal("the unarchive button left the session archived")
	}

	p = newPage(t)
	p.open(v6.url + "/s/" + sdbhttp.SessionPath(writesID) + "?token=" + testToken)
	if n := eval[int](p, `document.querySelectorAll('#archive, #unarchive').length`); n != 0 {
		t.Errorf("a schema-6 store's page shows %d archive buttons", n)
	}
	if n := eval[int](p, `document.querySelectorAll('#rename').length`); n != 1 {
		t.Errorf("the schema-6 page has %d rename buttons: the controls did not render", n)
	}
}
