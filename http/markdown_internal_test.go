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
	out := string(md.render(in))
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
	if got := md.render(strings.Repeat("x", markdownMax+1)); got != "" {
		t.Errorf("a text over markdownMax rendered (%d bytes); want plain", len(got))
	}
}

// BenchmarkMarkdownRender renders a Markdown text at the size bound, and a
// 1 MB one (which falls back to plain: the cost is the length check).
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
				md.render(text)
			}
		})
	}
}
