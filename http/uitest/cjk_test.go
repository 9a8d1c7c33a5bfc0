package uitest

import (
	"strings"
	"testing"
)

// TestBrowserSearchCJK searches CJK text (the substring fallback): the
// hits mark 大别山 as a word search marks a word, a hit from mid-text
// starts with "...", and the hit's link opens its transcript with the
// match marked in the hit's message.
func TestBrowserSearchCJK(t *testing.T) {
	_, p := visit(t, siteOptions{examplesOnly: true}, "/search?q=大别山")
	p.waitLoaded(`!!document.querySelector("#hits")`)
	marks := p.texts("#hits .snippet mark")
	if len(marks) < 2 {
		t.Fatalf("marked %q; want every hit's match", marks)
	}
	for _, m := range marks {
		if m != "大别山" {
			t.Errorf("marked %q", m)
		}
	}
	snippets := p.texts("#hits .snippet")
	mid := false
	for _, s := range snippets {
		mid = mid || strings.HasPrefix(s, "...")
	}
	if !mid {
		t.Errorf("no snippet from mid-text starts with ...: %q", snippets)
	}
	// The question's hit leads to its message, the match marked there.
	if !eval[bool](p, `(() => { const li = Array.from(document.querySelectorAll("#hits li.hit")).find(li => li.querySelector(".snippet").textContent.includes("下周末")); if (!li) return false; li.querySelector("a.hit-link").click(); return true })()`) {
		t.Fatal("no hit of the question 下周末想去大别山徒步")
	}
	p.waitLoaded(`document.body.dataset.page === "session" && !!document.querySelector("#transcript article.target")`)
	// Marks in the folded raw text are there too, unseen: textContent.
	got := eval[[]string](p, `Array.from(document.querySelectorAll("#transcript article.target mark"), e => e.textContent)`)
	if shown := p.texts("#transcript article.target .text.md mark"); len(shown) == 0 || shown[0] != "大别山" {
		t.Errorf("the hit's shown text marks %q", shown)
	}
	for _, m := range got {
		if m != "大别山" {
			t.Errorf("transcript marked %q", m)
		}
	}
	if n := eval[int](p, `document.querySelectorAll("#transcript article:not(.target) mark").length`); n != 0 {
		t.Errorf("%d marks outside the hit's message", n)
	}
}
