package http_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

// tokens sets a session's counters and costs.
func (f *fixture) tokens(id string, u sessiondb.TokenUpdate) {
	f.t.Helper()
	if err := f.st.UpdateTokenCounts(ctxb, id, u); err != nil {
		f.t.Fatal(err)
	}
}

// cellsOf returns the text of each cell of the table with the given id,
// row by row, tags stripped.
func cellsOf(t *testing.T, body, id string) [][]string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no table #%s", id)
	}
	tbl := body[i:]
	tbl = tbl[:strings.Index(tbl, "</table>")]
	tbl = tbl[strings.Index(tbl, "<tbody>"):]
	tags := regexp.MustCompile(`<[^>]*>`)
	var rows [][]string
	for _, tr := range strings.Split(tbl, "<tr")[1:] {
		var cells []string
		for _, td := range regexp.MustCompile(`<t[dh][^>]*>`).Split(tr, -1)[1:] {
			cells = append(cells, strings.TrimSpace(strings.Join(strings.Fields(tags.ReplaceAllString(td, " ")), " ")))
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestUIAnalyticsOneCostRule: a model whose sessions mix billed and
// estimated costs shows by model the sum of its sessions' costs as the
// costliest-sessions table shows them (actual where billed, else
// estimated), and the page says the rule; tokens are input + output, by
// that name, cache reads apart with their share of the prompt.
func TestUIAnalyticsOneCostRule(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("billed", "telegram", "openai/gpt-4.1-mini")
	f.tokens("billed", sessiondb.TokenUpdate{Input: 2000, Output: 100, CacheRead: 6000, EstimatedCostUSD: ptr(0.001018), ActualCostUSD: ptr(0.001069)})
	f.session("estimated", "cron", "openai/gpt-4.1-mini")
	f.tokens("estimated", sessiondb.TokenUpdate{Input: 1000, Output: 50, CacheWrite: 500, EstimatedCostUSD: ptr(0.000558)})
	body := f.page("/analytics?days=0", http.StatusOK)

	var byModel []string
	for _, r := range cellsOf(t, body, "by-model") {
		if strings.HasPrefix(r[0], "openai/gpt-4.1-mini") {
			byModel = r
		}
	}
	// $0.001069 billed + $0.000558 estimated; the estimate of the billed
	// session ($0.001018) counts nowhere.
	if len(byModel) != 3 || byModel[1] != "3,150" || byModel[2] != "$0.0016 (incl. $0.0006 est.)" {
		t.Errorf("by model: %q, want tokens 3,150 (in+out) and cost $0.0016 with $0.0006 estimated", byModel)
	}
	top := cellsOf(t, body, "top-sessions")
	if len(top) != 2 || top[0][2] != "$0.0011" || top[1][2] != "$0.0006 est." || top[0][1] != "2,100" {
		t.Errorf("costliest sessions: %q", top)
	}
	for _, want := range []string{
		"Cost: actual where billed, else estimated, per session, summed.",
		`<div id="total-tokens"><span class="figure">3,150</span> tokens (in+out)</div>`,
		// 6,000 of 9,000 prompt tokens came from the cache.
		`<div id="cache-hit"><span class="figure">66.7%</span> cache hits`,
		`<th>Tokens (in+out)</th>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("analytics lacks %q", want)
		}
	}
	if strings.Contains(body, "9,150") || strings.Contains(body, "15,650") {
		t.Error("analytics folds cache tokens into Tokens")
	}
}

// TestUIAnalyticsDailyTable: one row per day with usage, newest first,
// with sessions, messages, tokens, cache hits and cost.
func TestUIAnalyticsDailyTable(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("d1", "cli", "m")
	f.msg("d1", "user", "first day")
	f.tokens("d1", sessiondb.TokenUpdate{Input: 100, Output: 20, CacheRead: 300, EstimatedCostUSD: ptr(0.25)})
	f.clock.Advance(48 * time.Hour)
	f.session("d3a", "cli", "m")
	f.tokens("d3a", sessiondb.TokenUpdate{Input: 10, Output: 5, ActualCostUSD: ptr(1.5)})
	f.session("d3b", "cli", "m")
	f.msg("d3b", "user", "one")
	f.msg("d3b", "assistant", "two")
	rows := cellsOf(t, f.page("/analytics?days=0", http.StatusOK), "daily")
	want := [][]string{
		{"2026-03-03", "2", "2", "15", "0%", "$1.50"},
		{"2026-03-01", "1", "1", "120", "75%", "$0.2500 est."},
	}
	if len(rows) != len(want) {
		t.Fatalf("daily rows %q, want %q", rows, want)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("day %d: %q, want %q", i, rows[i], want[i])
		}
	}
}

// TestUISessionListChainRow: a compression chain's row shows the chain's
// totals for every figure and says so; the API row keeps Hermes'
// projection and carries the totals as "chain".
func TestUISessionListChainRow(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("root", "cli", "m")
	f.msg("root", "user", "one")
	f.msg("root", "assistant", "two")
	f.tokens("root", sessiondb.TokenUpdate{Input: 1000, Output: 200, CacheRead: 5000, EstimatedCostUSD: ptr(0.5)})
	if err := f.st.EndSession(ctxb, "root", "compression"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.st.CreateSession(ctxb, sessiondb.NewSession{ID: "tip", Source: "cli", Model: "m", ParentSessionID: "root"}); err != nil {
		t.Fatal(err)
	}
	f.msg("tip", "user", "three")
	f.tokens("tip", sessiondb.TokenUpdate{Input: 30, Output: 4, ActualCostUSD: ptr(0.25)})
	body := f.page("/", http.StatusOK)
	i := strings.Index(body, `<tr data-session="tip">`)
	if i < 0 {
		t.Fatalf("no row for the tip:\n%s", body)
	}
	row := body[i : i+strings.Index(body[i:], "</tr>")]
	for _, want := range []string{"chain of 2 sessions: totals", `data-label="Tokens (in+out)" class="num wide-only">1,234<`, `data-label="Cost" class="num">$0.7500<`, `data-label="Messages" class="num">3<`} {
		if !strings.Contains(row, want) {
			t.Errorf("chain row lacks %q:\n%s", want, row)
		}
	}
	rows, _ := f.listing("/api/v1/sessions", "sessions")
	if len(rows) != 1 {
		t.Fatalf("API rows %v", rows)
	}
	chain, _ := rows[0]["chain"].(map[string]any)
	if rows[0]["id"] != "tip" || chain == nil || chain["sessions"] != 2.0 || chain["messages"] != 3.0 || chain["cost_usd"] != 0.75 || chain["key"] != "root" {
		t.Errorf("API row %v", rows[0])
	}
	// MCP's list_sessions: the same totals, and how many sessions.
	var list sdbhttp.ListOutput
	mcpCall(t, f.mcpSession(), "list_sessions", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ChainSessions != 2 || list.Sessions[0].MessageCount != 3 ||
		list.Sessions[0].CostUSD == nil || *list.Sessions[0].CostUSD != 0.75 {
		t.Errorf("MCP rows %+v", list.Sessions)
	}
}
