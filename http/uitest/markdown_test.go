package uitest

import (
	"net/url"
	"strings"
	"testing"
)

// markdownID is a session whose assistant answers in Markdown.
const markdownID = "markdown_session_0001"

// markdownText is its answer: a list, a table, a link and Go code.
const markdownText = "Zanzibar plan:\n\n" +
	"- **build** the binary\n- run the tests\n\n" +
	"| step | time |\n|---|---|\n| build | 2 s |\n| test | 9 s |\n\n" +
	"See [the docs](https://example.com/docs).\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"hello\") // greet\n}\n```\n"

// TestBrowserMarkdown opens a transcript whose answer is Markdown: the
// list, table, link and highlighted Go code show as elements, "raw text"
// shows the text as stored, and a search snippet of it stays plain text.
func TestBrowserMarkdown(t *testing.T) {
	s := newSite(t, siteOptions{examplesOnly: true})
	s.session(markdownID, "cli", "anthropic/claude-sonnet-4.6", "A Markdown answer")
	s.msg(sessionMsg(markdownID, "user", "How do I ship it?"))
	s.msg(sessionMsg(markdownID, "assistant", markdownText))
	p := newPage(t)
	p.open(s.url + "/s/" + url.PathEscape(markdownID))

	md := `#transcript article:last-child .text.md`
	for _, c := range []struct {
		sel  string
		want int
	}{
		{md + " ul > li", 2},
		{md + " li strong", 1},
		{md + " table tr", 3},
		{md + ` a[href="https://example.com/docs"]`, 1},
		{md + " pre.chroma", 1},
	} {
		if n := eval[int](p, `document.querySelectorAll(`+jsString(c.sel)+`).length`); n != c.want {
			t.Errorf("%s: %d elements, want %d", c.sel, n, c.want)
		}
	}
	// The code is highlighted: its keyword and string are spans of chroma's
	// classes, coloured by the stylesheet.
	if kw := eval[string](p, `(document.querySelector(`+jsString(md+" pre.chroma span.kd")+`) || {}).textContent`); kw != "func" {
		t.Errorf("keyword span reads %q, want func", kw)
	}
	if col := eval[string](p, `getComputedStyle(document.querySelector(`+jsString(md+" pre.chroma span.kd")+`)).color`); col == eval[string](p, `getComputedStyle(document.querySelector(`+jsString(md+" pre.chroma")+`)).color`) {
		t.Errorf("the keyword has the code's colour %s: not highlighted", col)
	}
	if s := eval[string](p, `document.querySelector(`+jsString(md+" pre.chroma span.s")+`).textContent`); s != `"hello"` {
		t.Errorf("string span reads %q", s)
	}

	// The raw text is folded; one click shows the text as stored.
	raw := `#transcript article:last-child details.raw`
	if eval[bool](p, `document.querySelector(`+jsString(raw)+`).open`) {
		t.Error("raw text shown before the click")
	}
	p.click(raw + " > summary")
	p.waitFor(`document.querySelector(` + jsString(raw) + `).open`)
	if got := p.text(raw + " pre.body"); got != markdownText {
		t.Errorf("raw text shows\n%q\nwant\n%q", got, markdownText)
	}
	p.shot("transcript-markdown")

	// A search snippet of the answer is plain text, its Markdown as typed.
	p.open(s.url + "/search?q=zanzibar")
	p.waitFor(`document.querySelector("#hits .snippet") !== null`)
	if n := eval[int](p, `document.querySelectorAll("#hits .snippet *:not(mark)").length`); n != 0 {
		t.Errorf("the snippet holds %d elements besides marks", n)
	}
	if got := p.text("#hits .snippet"); !containsAll(got, "Zanzibar", "**build**") {
		t.Errorf("snippet reads %q, want the plain Markdown", got)
	}
}

// containsAll reports whether s holds every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
