package http

import (
	"strings"
	"testing"
)

// TestMarkdownHostileIsInert: raw HTML shows as text, unsafe link targets
// are dropped, images become links, and Markdown still renders.
func TestMarkdownHostileIsInert(t *testing.T) {
	md := newMarkdownRenderer()
	in := "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n" +
		"[a](javascript:alert(3)) [b](JaVaScRiPt:alert(4)) [c](data:text/html,x) [d](vbscript:x) " +
		"<javascript:alert(5)> ![i](https://example.com/x.png) &lt;b&gt; [ok](https://example.com)\n\n" +
		"| x | y |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n```go\nfunc main() {}\n```\n"
	out := string(md.render(in, newMDBudget()))
	for _, bad := range []string{"<script", "<img", "javascript:alert(3)\"", "href=\"javascript", "href=\"JaVa", "href=\"data:", "href=\"vbscript", " src=\""} {
		if strings.Contains(out, bad) {
			t.Errorf("rendered HTML holds %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "<h1", "<table>", "<li>one</li>", "href=\"https://example.com\"", "href=\"https://example.com/x.png\"", "class=\"chroma\"", "&lt;b&gt; <a"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered HTML lacks %q:\n%s", want, out)
		}
	}
	if got := md.render(strings.Repeat("x", markdownMax+1), newMDBudget()); got != "" {
		t.Errorf("a text over markdownMax rendered (%d bytes); want plain", len(got))
	}
}

// goBlock is a fenced Go code block of about size bytes.
func goBlock(size int) string {
	line := "x := f(1) // a comment\n"
	return "```go\n" + strings.Repeat(line, max(1, size/len(line))) + "```\n"
}

// TestMarkdownHighlightBounded: a message highlights its first
// highlightBlocksPerMessage code blocks, none over highlightBlockMax; a
// page highlights highlightPageMax bytes of code and renders
// markdownPageMax bytes of text, the rest shown plain.
func TestMarkdownHighlightBounded(t *testing.T) {
	md := newMarkdownRenderer()
	highlighted := func(h string) int { return strings.Count(h, "class=\"chroma\"") }

	many := strings.Repeat("text\n\n"+goBlock(40)+"\n", highlightBlocksPerMessage+3)
	out := string(md.render(many, newMDBudget()))
	if n, plain := highlighted(out), strings.Count(out, "<code class=\"language-go\">"); n != highlightBlocksPerMessage || plain != 3 {
		t.Errorf("%d blocks highlighted and %d plain; want %d and 3", n, plain, highlightBlocksPerMessage)
	}
	big := string(md.render("a\n\n"+goBlock(highlightBlockMax+100), newMDBudget()))
	if highlighted(big) != 0 || !strings.Contains(big, "<code class=\"language-go\">x := f(1)") {
		t.Errorf("a block over highlightBlockMax:\n%.300s", big)
	}

	// One page: messages of 2 KiB blocks until the code budget is spent.
	budget := newMDBudget()
	msg := "step\n\n" + goBlock(2<<10)
	total := 0
	for range highlightPageMax / (2 << 10) * 2 {
		total += highlighted(string(md.render(msg, budget)))
	}
	if want := highlightPageMax / (2 << 10); total < want-1 || total > want {
		t.Errorf("a page highlighted %d blocks of 2 KiB; want about %d (highlightPageMax)", total, want)
	}
	// The page's Markdown budget: past it a message renders as "" (plain).
	text := strings.Repeat("- item\n", markdownMax/8)
	rendered := 0
	for md.render(text, budget) != "" {
		rendered += len(text)
	}
	if rendered == 0 || rendered > markdownPageMax {
		t.Errorf("a page rendered %d bytes of Markdown; want some, at most %d", rendered, markdownPageMax)
	}
}

// BenchmarkMarkdownRender renders a Markdown text at the size bound (with
// a page's budget of its own), a 1 MB one (which falls back to plain: the
// cost is the length check), and a page: transcriptPageSize such 32 KiB
// texts sharing one page's budget.
func BenchmarkMarkdownRender(b *testing.B) {
	md := newMarkdownRenderer()
	unit := "## Step\n\n- one `code` and **bold**\n- [link](https://example.com)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nfunc f() int { return 1 }\n```\n\n"
	for _, c := range []struct {
		name string
		size int
	}{{"32KiB", markdownMax}, {"1MB", 1 << 20}} {
		text := strings.Repeat(unit, c.size/len(unit))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				md.render(text, newMDBudget())
			}
		})
	}
	text := strings.Repeat(unit, markdownMax/len(unit))
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			budget := newMDBudget()
			for range transcriptPageSize {
				md.render(text, budget)
			}
		}
	})
}
