package uitest

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sessiondb/sessiondb"
)

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// exampleTitles are the titles of the example conversations (see
// examples.Conversations), newest first.
var exampleTitles = []string{"Kubernetes rollout stuck", "大别山徒步计划", "Backup check 2026-07-01",
	"Standup digest: team-payments", "Lisbon weekend", "proj #2", "Fix Docker build"}

// rowTitles reads the session list's titles, top to bottom.
func rowTitles(p *page) []string {
	p.t.Helper()
	return p.texts("#sessions tbody td.title > a")
}

// TestBrowserFirstVisit is what a new user sees first: `sessiondb
// quickstart`, then `sessiondb serve`, then the URL it prints (which
// carries the token once and leads to the session list).
func TestBrowserFirstVisit(t *testing.T) {
	s, p := visit(t, siteOptions{examplesOnly: true}, "/?token="+testToken)
	if loc := eval[string](p, `location.href`); loc != s.url+"/" {
		t.Errorf("the printed URL leads to %s", loc)
	}
	if got := rowTitles(p); !slices.Equal(got, exampleTitles) {
		t.Errorf("first page lists %q", got)
	}
	if tabs := p.texts("nav.tabs a"); !slices.Equal(tabs, []string{"all", "cli", "cron", "slack", "telegram"}) {
		t.Errorf("source tabs %q", tabs)
	}
	p.shotScreen("first-visit")
}

// TestBrowserSessionList opens the list, filters it by text and by source,
// sorts it by cost, and pages through it with the keyset cursor.
func TestBrowserSessionList(t *testing.T) {
	s, p := visit(t, siteOptions{}, "/")
	p.shot("sessions")
	got := rowTitles(p)
	// The two added sessions started last, so they lead; the examples
	// follow newest first ("proj" is listed as its continuation's tip).
	if len(got) != 9 || got[0] != "A long debugging session" || got[1] != hostileTitle || !slices.Equal(got[2:], exampleTitles) {
		t.Fatalf("list shows %q", got)
	}

	// Filter by text: type into the form and submit it.
	p.do(chromedp.SetValue(chromedp.CSS(`#filters input[name=q]`), "docker"),
		chromedp.Submit(chromedp.CSS(`#filters`)))
	p.waitLoaded(`location.search.includes("q=docker")`)
	if got := rowTitles(p); !slices.Equal(got, []string{"Fix Docker build"}) {
		t.Errorf("filtered by docker: %q", got)
	}
	p.shot("sessions-filtered")
	// What was typed reads as text, not as a placeholder: the field's
	// text has the page's colour and is not smaller than the page's.
	if !eval[bool](p, `(() => {
		const f = getComputedStyle(document.querySelector("#filters input[name=q]")), b = getComputedStyle(document.body);
		return f.color === b.color && parseFloat(f.fontSize) >= parseFloat(b.fontSize);
	})()`) {
		t.Error("the filter's value is shown smaller or paler than the page's text")
	}

	// The source tabs.
	p.open(s.url + "/")
	p.do(chromedp.Click(chromedp.Search(`//nav[@class="tabs"]/a[text()="telegram"]`)))
	p.waitLoaded(`location.search === "?source=telegram"`)
	if got := rowTitles(p); !slices.Equal(got, []string{"大别山徒步计划", "Lisbon weekend"}) {
		t.Errorf("telegram tab: %q", got)
	}
	for _, src := range p.texts(`#sessions td[data-label=Source]`) {
		if src != "telegram" {
			t.Errorf("telegram tab lists a %q session", src)
		}
	}

	// Sort by cost: the header link, twice for the other way round.
	p.open(s.url + "/")
	p.do(chromedp.Click(chromedp.CSS(`th a[data-sort=cost]`)))
	p.waitLoaded(`location.search.includes("sort=cost")`)
	costs := costsShown(p)
	if len(costs) != 9 || !slices.IsSortedFunc(costs, func(a, b float64) int { return -cmpFloat(a, b) }) || costs[0] == 0 {
		t.Errorf("by cost, largest first: %v", costs)
	}
	p.do(chromedp.Click(chromedp.CSS(`th a[data-sort=cost]`)))
	p.waitLoaded(`location.search.includes("order=asc")`)
	if up := costsShown(p); !slices.IsSortedFunc(up, cmpFloat) || len(up) != 9 {
		t.Errorf("by cost, smallest first: %v", up)
	}

	// Pages of three, followed by their "next page" links: every session
	// once, in the order of the whole list.
	p.open(s.url + "/?limit=3")
	var paged []string
	for i := 0; ; i++ {
		paged = append(paged, rowTitles(p)...)
		if eval[bool](p, `!document.getElementById("next-page")`) {
			break
		}
		if i > 5 {
			t.Fatal("paging does not end")
		}
		before := eval[string](p, `location.href`)
		p.do(chromedp.Click(chromedp.ID("next-page")))
		p.waitLoaded(`location.href !== ` + jsString(before))
		if !strings.Contains(eval[string](p, `location.search`), "cursor=") {
			t.Fatal("next page link has no cursor")
		}
	}
	if !slices.Equal(paged, got) {
		t.Errorf("paged through %q, want %q", paged, got)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// costsShown reads the list's cost column as numbers ("–" is 0).
func costsShown(p *page) []float64 {
	p.t.Helper()
	var out []float64
	for _, c := range p.texts(`#sessions td[data-label=Cost]`) {
		c = strings.TrimPrefix(strings.TrimPrefix(c, "<"), "$")
		if c == "–" {
			out = append(out, 0)
			continue
		}
		f, err := strconv.ParseFloat(c, 64)
		if err != nil {
			p.t.Fatalf("cost %q", c)
		}
		out = append(out, f)
	}
	return out
}

// TestBrowserTranscript opens a session from the list, expands a tool
// call to read its arguments and result, unfolds the reasoning, and shows
// the whole of a long tool output.
func TestBrowserTranscript(t *testing.T) {
	s, p := visit(t, siteOptions{}, "/")
	p.do(chromedp.Click(chromedp.Search(`//td[@class="title"]/a[text()="Fix Docker build"]`)))
	p.waitLoaded(`document.body.dataset.page === "session"`)
	if h := p.text("#session-title"); h != "Fix Docker build" {
		t.Errorf("title %q", h)
	}
	p.shot("transcript")
	roles := p.texts("#transcript > article .msg-head .role")
	if len(roles) == 0 || roles[0] != "User" {
		t.Errorf("roles %q", roles)
	}
	// Tool calls start folded: their arguments are not shown.
	if eval[bool](p, `document.querySelector("details.call").open`) {
		t.Error("a tool call starts unfolded")
	}
	if eval[bool](p, `document.querySelector("details.call .call-body").checkVisibility()`) {
		t.Error("a folded tool call's arguments are visible")
	}
	p.do(chromedp.Click(chromedp.CSS(`details.call > summary`)))
	p.waitFor(`document.querySelector("details.call").open`)
	args := p.text(`details.call .call-body pre.body`)
	result := p.text(`details.call .call-result pre.body`)
	if !strings.Contains(args, "{") || result == "" {
		t.Errorf("expanded call: arguments %q, result %q", args, result)
	}
	// The result is inside its call, not a message of its own.
	if n := eval[int](p, `document.querySelectorAll("#transcript > article.role-tool").length`); n != 0 {
		t.Errorf("%d tool results outside their calls", n)
	}
	p.shot("transcript-call-open")

	// A long output is cut; "show all" brings the rest in place.
	p.open(s.url + "/s/" + longID)
	p.do(chromedp.Click(chromedp.CSS(`details.call > summary`)))
	res := `document.querySelector("details.call .call-result pre.body").textContent`
	if cut := eval[string](p, res); strings.Contains(cut, "END OF THE LONG OUTPUT") || !strings.HasPrefix(cut, "line 001") {
		t.Fatalf("long output not cut: %d characters", len(cut))
	}
	p.do(chromedp.Click(chromedp.CSS(`details.call .call-result a.show-all`)))
	p.waitFor(res + `.endsWith("END OF THE LONG OUTPUT")`)
	if whole := eval[string](p, res); whole != longOutput() {
		t.Errorf("show all gave %d characters, want %d", len(whole), len(longOutput()))
	}
	// The long session has more messages than a page: the next page
	// continues where this one ends.
	last := eval[int](p, `+document.getElementById("transcript").dataset.last`)
	p.do(chromedp.Click(chromedp.ID("newer")))
	p.waitLoaded(`location.search.includes("after=")`)
	first := eval[int](p, `+document.querySelector("#transcript > article").dataset.id`)
	if first <= last {
		t.Errorf("next page starts at %d, the previous ended at %d", first, last)
	}
	if n := len(p.texts("#transcript > article")); n == 0 {
		t.Error("next page is empty")
	}
}

// TestBrowserSearch searches from the box in the frame, sees the matches
// marked, and follows a hit into its transcript, onto its message.
func TestBrowserSearch(t *testing.T) {
	_, p := visit(t, siteOptions{}, "/")
	p.do(chromedp.SendKeys(chromedp.CSS(`header .top-search input`), "restic\r"))
	p.waitLoaded(`document.body.dataset.page === "search" && !!document.querySelector("#hits")`)
	p.shot("search")
	marks := p.texts("#hits .snippet mark")
	if len(marks) == 0 {
		t.Fatal("no marked match")
	}
	for _, m := range marks {
		if !strings.EqualFold(m, "restic") {
			t.Errorf("marked %q", m)
		}
	}
	if n := eval[int](p, `document.body.innerText.split(">>>").length - 1`); n != 0 {
		t.Errorf("%d raw >>> markers shown", n)
	}
	href := eval[string](p, `document.querySelector("#hits a.hit-link").getAttribute("href")`)
	u, err := url.Parse(href)
	if err != nil || u.Query().Get("at") == "" || u.Fragment != "m"+u.Query().Get("at") {
		t.Fatalf("hit links to %q", href)
	}
	p.do(chromedp.Click(chromedp.CSS(`#hits a.hit-link`)))
	p.waitLoaded(`document.body.dataset.page === "session"`)
	// The target message is on the page, marked, and scrolled into view.
	target := `document.querySelector("#transcript article.target")`
	p.waitFor(target + ` !== null`)
	if !eval[bool](p, `(() => { const r = `+target+`.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 })()`) {
		t.Error("the hit's message is not in view")
	}
	if txt := eval[string](p, target+`.innerText`); !strings.Contains(strings.ToLower(txt), "restic") {
		t.Errorf("target message %q has no match", txt)
	}
	p.shot("search-hit")
}

// TestBrowserLineageAndAnalytics opens the lineage tree of a continued
// session and the analytics page, and checks what they draw.
func TestBrowserLineageAndAnalytics(t *testing.T) {
	s, p := visit(t, siteOptions{}, "/")
	p.do(chromedp.Click(chromedp.Search(`//td[@class="title"]/a[text()="proj #2"]`)))
	p.waitLoaded(`document.body.dataset.page === "session"`)
	p.do(chromedp.Click(chromedp.Search(`//p[@class="actions"]/a[text()="lineage"]`)))
	p.waitLoaded(`document.body.dataset.page === "lineage"`)
	p.shot("lineage")
	tree := p.texts("#lineage a")
	if !slices.Equal(tree, []string{"proj", "proj #2"}) {
		t.Errorf("lineage %q", tree)
	}
	if sel := p.text("#lineage li.selected > a"); sel != "proj #2" {
		t.Errorf("selected %q", sel)
	}

	p.open(s.url + "/analytics?days=0")
	p.shot("analytics")
	if n := eval[int](p, `document.querySelectorAll("figure.chart svg rect.s0").length`); n == 0 {
		t.Error("no token bars")
	}
	if n := eval[int](p, `document.querySelectorAll("figure.chart svg rect.s4").length`); n == 0 {
		t.Error("no cost bars")
	}
	// The costliest session first: the one whose cost (actual when
	// billed, else estimated) is largest in the store.
	all, err := s.st.ListSessions(ctxb, sessiondb.SessionQuery{IncludeChildren: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var want string
	var most float64
	for _, x := range all.Sessions {
		c := x.EstimatedCostUSD
		if x.ActualCostUSD != nil {
			c = x.ActualCostUSD
		}
		if c != nil && *c > most {
			most, want = *c, deref(x.Title)
		}
	}
	top := p.texts("#top-sessions tbody td.title")
	if len(top) != 10 || top[0] != want {
		t.Errorf("costliest sessions %q, want %q first", top, want)
	}
}

// TestBrowserPhone shows the list and a transcript on a phone-sized
// screen: nothing wider than the screen.
func TestBrowserPhone(t *testing.T) {
	s := newSite(t, siteOptions{})
	p := newPage(t)
	p.phone()
	for _, pg := range []struct{ name, path string }{
		{"phone-sessions", "/"},
		{"phone-transcript", "/s/" + url.PathEscape(hostileID)},
		{"phone-search", "/search?q=docker"},
		{"phone-analytics", "/analytics?days=0"},
	} {
		p.open(s.url + pg.path)
		p.shotScreen(pg.name)
		if w := eval[int](p, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("%s is %d px wide on a 390 px screen", pg.path, w)
		}
		// Line breaks of stored text never show as a literal \n.
		if n := eval[int](p, `document.body.innerText.split("\\n").length - 1`); n != 0 {
			t.Errorf("%s shows %d literal \\n", pg.path, n)
		}
	}
}

// TestBrowserDotIDs opens sessions whose ids are path segments a browser
// folds ("." and ".."), and their neighbours in the escaped form ("~.",
// "~x") and "%2e", from the session list: each link leads to its own
// session, and its live transcript follows it (the page's script builds
// no address of its own from the id).
func TestBrowserDotIDs(t *testing.T) {
	s := newSite(t, siteOptions{examplesOnly: true})
	ids := map[string]string{".": "Alpha", "..": "Bravo", "~.": "Charlie", "~x": "Delta", "%2e": "Echo"}
	for id, title := range ids {
		s.session(id, "cli", "m", title)
		s.msg(sessionMsg(id, "user", "I am session "+id))
	}
	p := newPage(t)
	for id, title := range ids {
		p.open(s.url + "/?q=" + url.QueryEscape(title))
		p.click(`td.title a[href]`)
		p.waitLoaded(`document.body.dataset.page === "session"`)
		if h := p.text("#session-title"); h != title {
			t.Errorf("the link of session %q leads to %q (%s)", id, h, eval[string](p, `location.href`))
			continue
		}
		if body := p.text("#transcript > article .text.md"); body != "I am session "+id {
			t.Errorf("session %q shows %q", id, body)
		}
		p.waitFor(`!document.getElementById("live-status").hidden`)
		m := s.msg(sessionMsg(id, "assistant", "Live in "+id))
		p.waitFor(`!!document.getElementById("m` + strconv.FormatInt(m, 10) + `")`)
		p.click(`a[href$="/lineage"]`)
		p.waitLoaded(`document.body.dataset.page === "lineage"`)
		if got := p.text("li.selected > a"); got != title {
			t.Errorf("the lineage of %q marks %q", id, got)
		}
	}
}

// TestBrowserAnalyticsPhone opens Analytics on a phone-sized screen: the
// page is no wider than the screen, each chart shows its newest day
// without scrolling (it starts scrolled there), and the daily table and
// the cache-hit share show.
func TestBrowserAnalyticsPhone(t *testing.T) {
	s := newSite(t, siteOptions{})
	p := newPage(t)
	p.phone()
	p.open(s.url + "/analytics?days=0")
	if w := eval[int](p, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("analytics is %d px wide on a 390 px screen", w)
	}
	// The last day's hover area (rect.hit, one per day, in order) of each
	// chart lies within the screen.
	edges := eval[[][]float64](p, `Array.from(document.querySelectorAll("figure.chart svg"), svg => {
		const hits = svg.querySelectorAll("rect.hit"), r = hits[hits.length - 1].getBoundingClientRect();
		return [r.left, r.right];
	})`)
	if len(edges) != 2 {
		t.Fatalf("%d charts, want 2", len(edges))
	}
	for i, e := range edges {
		if e[0] < 0 || e[1] > 390 {
			t.Errorf("chart %d: the newest day spans %.0f..%.0f px, off the 390 px screen", i, e[0], e[1])
		}
	}
	days := p.texts("#daily tbody td.title")
	if len(days) == 0 || !slices.IsSortedFunc(days, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("daily table days %q, want newest first", days)
	}
	if hit := p.text("#cache-hit .figure"); !strings.HasSuffix(hit, "%") {
		t.Errorf("cache-hit share %q", hit)
	}
	p.shot("analytics-phone")
}
