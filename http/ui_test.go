package http_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/mailbox"
)

// These tests read the UI's HTML as a client without a browser would;
// http/uitest drives the same pages in Chromium.

// page fetches a UI page and checks its status and type.
func (f *fixture) page(path string, status int) string {
	f.t.Helper()
	r := f.get(path)
	if r.status != status {
		f.t.Fatalf("GET %s: status %d, want %d: %.300s", path, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		f.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if csp := r.header.Get("Content-Security-Policy"); csp != sdbhttp.ContentSecurityPolicy {
		f.t.Fatalf("GET %s: CSP %q", path, csp)
	}
	return string(r.body)
}

func TestUIPagesRender(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m1")
	f.msg("s1", "user", "find the needle please")
	f.toolCall("s1", "c1", "grep", "needle found in haystack.go")
	for _, path := range []string{"/", "/s/s1", "/s/s1/lineage", "/search", "/search?q=needle", "/analytics", "/analytics?days=7&source=cli"} {
		body := f.page(path, http.StatusOK)
		if !strings.Contains(body, `<script src="/static/app.js" defer></script>`) {
			t.Errorf("%s: no app.js", path)
		}
		// The CSP forbids inline scripts, styles and handlers: the pages
		// have none.
		for _, bad := range []string{"<script>", " style=", " onclick=", " onload=", " onerror=", "javascript:"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q", path, bad)
			}
		}
	}
	// Mailbox and registry pages exist only when served.
	f.page("/mailboxes", http.StatusNotFound)
	f.page("/registry", http.StatusNotFound)
}

// The static files are served; their folder is not listed.
func TestStaticListsNoFolder(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	for _, p := range []string{"/static/app.js", "/static/app.css", "/static/icon.svg"} {
		if r := f.get(p); r.status != http.StatusOK || len(r.body) == 0 {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
	for _, p := range []string{"/static/", "/static/.", "/static/./", "/static/index.html"} {
		r := f.get(p)
		if r.status != http.StatusNotFound || strings.Contains(string(r.body), "app.js") {
			t.Errorf("GET %s: %d %.200s, want 404 listing nothing", p, r.status, r.body)
		}
	}
}

// TestUIEscapesStoredText checks the HTML source: every stored text
// crafted to break out of its context comes out escaped.
func TestUIEscapesStoredText(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	id := `x"><script>alert(1)</script>`
	f.session(id, `src"onmouseover="alert(2)`, "m")
	if _, err := f.st.SetSessionTitle(ctxb, id, `</title><script>alert(3)</script>`); err != nil {
		t.Fatal(err)
	}
	f.msg(id, "user", "<img src=x onerror=alert(4)> needle \x1b[2J\u202e")
	f.toolCall(id, `c"1`, `<b>tool</b>`, `</pre><script>alert(5)</script>`)
	for _, path := range []string{"/", "/s/" + url.PathEscape(id), "/s/" + url.PathEscape(id) + "/lineage", "/search?q=needle"} {
		body := f.page(path, http.StatusOK)
		for _, raw := range []string{"<script>alert", "<img src=x", "<b>tool", `"onmouseover="`, "\x1b", "\u202e"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s holds %q unescaped", path, raw)
			}
		}
	}
	body := f.page("/s/"+url.PathEscape(id), http.StatusOK)
	for _, want := range []string{
		`&lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;`, // the title
		`&lt;img src=x onerror=alert(4)&gt; needle \x1b[2J\u202e`,
		`&lt;/pre&gt;&lt;script&gt;alert(5)&lt;/script&gt;`,
		`data-page="/s/` + url.PathEscape(id) + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("transcript lacks %s", want)
		}
	}
}

func TestUIErrorPages(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m1")
	body := f.page("/s/nosuch", http.StatusNotFound)
	if !strings.Contains(body, "Not found") || !strings.Contains(body, `no session`) {
		t.Errorf("404 page: %.400s", body)
	}
	body = f.page("/?sort=sideways", http.StatusBadRequest)
	if !strings.Contains(body, "sort") {
		t.Errorf("400 page does not name the parameter: %.400s", body)
	}
	f.page("/?cursor=garbage", http.StatusBadRequest)
	f.page("/s/s1?after=-3", http.StatusBadRequest)
	f.page("/search?offset=x&q=a", http.StatusBadRequest)
}

// TestUIListPagesByCursor follows the list's "next page" links: every
// session once, in order, with rows added at the top between pages.
func TestUIListPagesByCursor(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	for i := 0; i < 7; i++ {
		f.session("s"+strconv.Itoa(i), "cli", "m")
	}
	rowRe := regexp.MustCompile(`<tr data-session="([^"]+)">`)
	nextRe := regexp.MustCompile(`<a href="([^"]+)" rel="next" id="next-page">`)
	path := "/?limit=3"
	var seen []string
	for path != "" {
		body := f.page(path, http.StatusOK)
		for _, m := range rowRe.FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		f.session("new"+strconv.Itoa(len(seen)), "cli", "m") // newer than every listed row
		path = ""
		if m := nextRe.FindStringSubmatch(body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	want := []string{"s6", "s5", "s4", "s3", "s2", "s1", "s0"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("paged through %v, want %v", seen, want)
	}
}

// TestUITranscriptParts checks the transcript's pieces: a tool result in
// its call, the live fragment after a message, the whole text behind
// "show all", and the page around a search hit.
func TestUITranscriptParts(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m1")
	first := f.msg("s1", "user", "hello")
	long := strings.Repeat("0123456789\n", 500)
	call, res := f.toolCall("s1", "c1", "cat", long)
	last := f.msg("s1", "assistant", "done")

	body := f.page("/s/s1", http.StatusOK)
	if !strings.Contains(body, `<div class="call-result" data-slot="c1"><h4>Result</h4>`) {
		t.Error("the result is not inside its call")
	}
	if !strings.Contains(body, `data-live="true"`) || !strings.Contains(body, `data-last="`+strconv.FormatInt(last, 10)+`"`) {
		t.Error("the last page does not follow the session")
	}
	if !strings.Contains(body, "show all (5,500 characters)") || strings.Count(body, "0123456789") >= 500 {
		t.Error("the long result is not cut")
	}

	r := f.get("/s/s1/live?after=" + strconv.FormatInt(first, 10))
	if r.status != 200 || r.header.Get("X-Last-ID") != strconv.FormatInt(last, 10) || r.header.Get("X-Has-More") != "" {
		t.Fatalf("live fragment: %d %v", r.status, r.header)
	}
	frag := string(r.body)
	if strings.Contains(frag, "<html") || strings.Contains(frag, `id="m`+strconv.FormatInt(first, 10)+`"`) ||
		!strings.Contains(frag, `id="m`+strconv.FormatInt(call, 10)+`"`) || !strings.Contains(frag, `id="m`+strconv.FormatInt(last, 10)+`"`) {
		t.Errorf("live fragment: %.500s", frag)
	}

	r = f.get("/s/s1/m/" + strconv.FormatInt(res, 10) + "/text")
	if r.status != 200 || string(r.body) != long || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("whole text: %d, %d bytes", r.status, len(r.body))
	}
	r = f.get("/s/s1/m/" + strconv.FormatInt(call, 10) + "/text?part=call&call=0")
	if r.status != 200 || string(r.body) != "{}" {
		t.Errorf("call arguments: %d %q", r.status, r.body)
	}
	if r := f.get("/s/s1/m/" + strconv.FormatInt(call, 10) + "/text?part=call&call=1"); r.status != 404 {
		t.Errorf("a missing call: %d", r.status)
	}
	if r := f.get("/s/s1/m/999999/text"); r.status != 404 {
		t.Errorf("a missing message: %d", r.status)
	}

	// at= a tool result: its call is open and its message marked.
	body = f.page("/s/s1?at="+strconv.FormatInt(res, 10), http.StatusOK)
	if !strings.Contains(body, `class="msg role-assistant target" id="m`+strconv.FormatInt(call, 10)+`"`) ||
		!strings.Contains(body, `<details class="call" data-call="c1" open>`) {
		t.Errorf("page at the result: %.2000s", body)
	}
}

// TestUISearchMarks checks that matches are marked with <mark> around the
// escaped text, never by trusting the snippet as markup.
func TestUISearchMarks(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m1")
	id := f.msg("s1", "user", "the <b>needle</b> is here")
	body := f.page("/search?q=needle", http.StatusOK)
	if !strings.Contains(body, `&lt;b&gt;<mark>needle</mark>&lt;/b&gt;`) {
		t.Errorf("snippet: %.2000s", body)
	}
	if !strings.Contains(body, `href="/s/s1?at=`+strconv.FormatInt(id, 10)+`&amp;hl=needle#m`+strconv.FormatInt(id, 10)+`"`) {
		t.Error("the hit does not link to its message, naming its match")
	}
}

// A snippet and its context run on as text: a line break in the message
// reads as a space, not as a literal \n, while a control character that
// could act on a terminal still shows as its escape.
func TestUISearchSnippetLineBreaks(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m1")
	f.msg("s1", "user", "before")
	f.msg("s1", "assistant", "first line\n\n\tFROM needle AS build\r\nlast \x1b[2J line")
	f.msg("s1", "user", "after\nthat")
	body := f.page("/search?q=needle", http.StatusOK)
	snippet := regexp.MustCompile(`(?s)<p class="snippet">(.*?)</p>`).FindStringSubmatch(body)
	if snippet == nil {
		t.Fatalf("no snippet: %.2000s", body)
	}
	if want := `first line   FROM <mark>needle</mark> AS build last \x1b[2J line`; snippet[1] != want {
		t.Errorf("snippet %q, want %q", snippet[1], want)
	}
	if !strings.Contains(body, `<span class="role">user</span> after that</p>`) {
		t.Errorf("context line keeps a literal line break: %.3000s", body)
	}
}

// TestUIMailboxRequeueControls: the failed row offers a requeue, posting
// to the API; a read-only server shows no write control.
func TestUIMailboxRequeueControls(t *testing.T) {
	m := newMailboxFixture(t)
	for _, ro := range []bool{false, true} {
		m.serve(sdbhttp.Config{Mailboxes: m.host, DataRoot: m.root, Token: testToken, ReadOnly: ro, Poll: time.Hour})
		body := m.page("/mailboxes/g1/s2", http.StatusOK)
		has := strings.Contains(body, `data-post="/api/v1/mailboxes/g1/s2/requeue" data-body="{&#34;ids&#34;:[&#34;out-1&#34;]}"`)
		if has == ro {
			t.Errorf("read-only %v: requeue control shown %v", ro, has)
		}
		if !strings.Contains(body, `<tr data-row="out-1" class="bad">`) || !strings.Contains(body, `class="state-failed">failed`) {
			t.Errorf("read-only %v: the failed row is not shown failed", ro)
		}
		list := m.page("/mailboxes", http.StatusOK)
		if !strings.Contains(list, `<tr data-mailbox="g1/s2" class="bad">`) || !strings.Contains(list, `<tr data-mailbox="g1/s1">`) {
			t.Errorf("mailbox list does not mark the failing session: %.3000s", list)
		}
	}
}

// TestUIEndedSessionIsNotFollowed: the last page of an ended session says
// when and why it ended and does not follow the session; a live one does.
func TestUIEndedSessionIsNotFollowed(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("live", "cli", "m1")
	f.msg("live", "user", "still going")
	f.session("done", "cli", "m1")
	f.msg("done", "user", "all done")
	if err := f.st.EndSession(ctxb, "done", "user_exit"); err != nil {
		t.Fatal(err)
	}
	live := f.page("/s/live", http.StatusOK)
	if !strings.Contains(live, `data-live="true"`) || !strings.Contains(live, `id="live-status"`) || strings.Contains(live, `id="ended-status"`) {
		t.Error("the live session's page does not follow it")
	}
	done := f.page("/s/done", http.StatusOK)
	if strings.Contains(done, `data-live`) || strings.Contains(done, "following") {
		t.Error("the ended session's page still follows it")
	}
	if !strings.Contains(done, `id="ended-status"`) || !strings.Contains(done, "(user_exit)") {
		t.Errorf("the ended session's page does not say it ended and why")
	}
}

// TestUIMailboxShowsQuestions: NanoClaw's question card in a mailbox is
// shown as its question and options, every stored text escaped, and its
// answer as the option chosen; the JSON stays one click away.
func TestUIMailboxShowsQuestions(t *testing.T) {
	m := newMailboxFixture(t)
	q, err := mailbox.Question("q-1", "Deploy <b>", "Roll back v2?", []mailbox.QuestionOption{{Label: "Yes", Value: "yes"}, {Label: "Not <i>yet</i>", Value: "later"}},
		mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}, m.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.agent.Send(ctxb, q); err != nil {
		t.Fatal(err)
	}
	ans, err := mailbox.QuestionResponse(q.ID, "later", "U1", mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}, m.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.host.Enqueue(ctxb, m.s2, ans); err != nil {
		t.Fatal(err)
	}
	body := m.page("/mailboxes/g1/s2", http.StatusOK)
	for _, want := range []string{
		`<div class="question"><strong>Deploy &lt;b&gt;</strong> Roll back v2?<ul class="options"><li>Yes <span class="muted">→ yes</span></li><li>Not &lt;i&gt;yet&lt;/i&gt; <span class="muted">→ later</span></li></ul></div>`,
		"<summary>Question: Roll back v2?</summary>",
		"Answer to question " + q.ID + ": later (from U1)",
		`&#34;questionId&#34;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the mailbox page lacks %q", want)
		}
	}
}
