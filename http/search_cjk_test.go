package http_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// cjkFixture holds two CJK messages the word index cannot split, so a
// search for 大别山 goes to the substring fallback: a short one and one
// whose match is far into the text.
func cjkFixture(t *testing.T) *fixture {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "telegram", "m1")
	f.msg("s1", "user", "下周末想去大别山徒步，帮我规划两天的路线。")
	f.msg("s1", "tool", strings.Repeat("天堂寨景区：主峰海拔1729米。", 5)+"白马尖：大别山主峰，海拔1777米。")
	return f
}

// TestUISearchMarksCJK: the search page marks a CJK match as it marks a
// word, and a snippet from the middle of a text starts with "...".
func TestUISearchMarksCJK(t *testing.T) {
	f := cjkFixture(t)
	body := f.page("/search?q=大别山", http.StatusOK)
	snippets := regexp.MustCompile(`(?s)<p class="snippet">(.*?)</p>`).FindAllStringSubmatch(body, -1)
	if len(snippets) != 2 {
		t.Fatalf("%d snippets, want 2: %.3000s", len(snippets), body)
	}
	// Newest first: the tool output, then the question.
	if got := snippets[0][1]; !strings.HasPrefix(got, "...") || !strings.Contains(got, "白马尖：<mark>大别山</mark>主峰") {
		t.Errorf("mid-text snippet %q: want a leading ... and the match marked", got)
	}
	if got, want := snippets[1][1], "下周末想去<mark>大别山</mark>徒步，帮我规划两天的路线。"; got != want {
		t.Errorf("snippet %q, want %q", got, want)
	}
}

// TestMCPSearchMarksCJK: search_sessions gives a CJK match between >>>
// and <<<, and "..." where the snippet cuts the text.
func TestMCPSearchMarksCJK(t *testing.T) {
	f := cjkFixture(t)
	var out sdbhttp.SearchOutput
	mcpCall(t, f.mcpSession(), "search_sessions", map[string]any{"query": "大别山"}, &out)
	if len(out.Hits) != 2 {
		t.Fatalf("hits %+v", out.Hits)
	}
	if s := out.Hits[0].Snippet; !strings.HasPrefix(s, "...") || !strings.Contains(s, "白马尖：>>>大别山<<<主峰") {
		t.Errorf("mid-text snippet %q", s)
	}
	if s, want := out.Hits[1].Snippet, "下周末想去>>>大别山<<<徒步，帮我规划两天的路线。"; s != want {
		t.Errorf("snippet %q, want %q", s, want)
	}
}
