package sessiondb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// usageLog is a UsageReader that records the queries it was given and
// answers each with one row naming its arguments; by "fail" it fails.
type usageLog struct {
	d     UsageSQL
	asked []string
	fail  bool
}

func (u *usageLog) UsageSQL() UsageSQL { return u.d }

func (u *usageLog) UsageRows(_ context.Context, q string, args []any) ([]UsageRow, error) {
	u.asked = append(u.asked, q)
	if u.fail {
		return nil, Errorf(EINTERNAL, "usage: broken")
	}
	return []UsageRow{{Key: fmt.Sprintln(args...)}}, nil
}

func TestReadUsage(t *testing.T) {
	ctx := context.Background()
	dollar := UsageSQL{Mark: func(n int) string { return fmt.Sprintf("$%d", n) }, Day: "day(s.started_at)"}
	u := &usageLog{d: dollar}
	rep, err := ReadUsage(ctx, u, UsageFilter{Source: "cli", Since: 1700000000, Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Total, by model, by source, by day, top: each under the filter,
	// the top's limit its last argument.
	if len(u.asked) != 5 {
		t.Fatalf("asked %d queries, want 5: %q", len(u.asked), u.asked)
	}
	for i, q := range u.asked {
		if !strings.Contains(q, " WHERE s.source = $1 AND s.started_at >= $2") {
			t.Errorf("query %d lacks the filter: %s", i, q)
		}
	}
	if !strings.HasSuffix(u.asked[4], "LIMIT $3") || rep.Top[0].Key != "cli 1.7e+09 3\n" {
		t.Errorf("top: %s with %q", u.asked[4], rep.Top[0].Key)
	}
	if rep.Total.Key != "cli 1.7e+09\n" || rep.ByModel[0].Key != "cli 1.7e+09\n" || rep.ByDay[0].Key != "cli 1.7e+09\n" {
		t.Errorf("rows in the wrong places: %+v", rep)
	}
	if !rep.ModelUsageRows || !strings.Contains(u.asked[1], "session_model_usage") {
		t.Errorf("a store with every column splits by its model usage rows: %v, %s", rep.ModelUsageRows, u.asked[1])
	}

	// Without the usage table (or without a filter), no split and no
	// WHERE; a negative Top lists none.
	u = &usageLog{d: UsageSQL{Mark: dollar.Mark, Day: dollar.Day, Has: func(table, _ string) bool { return table == "sessions" }}}
	rep, err = ReadUsage(ctx, u, UsageFilter{Top: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.asked) != 4 || rep.Top == nil || len(rep.Top) != 0 || rep.ModelUsageRows {
		t.Errorf("no top: asked %d queries, Top %#v, split %v", len(u.asked), rep.Top, rep.ModelUsageRows)
	}
	for _, q := range u.asked {
		if strings.Contains(q, "WHERE") || strings.Contains(q, "session_model_usage") {
			t.Errorf("unfiltered, no usage table: %s", q)
		}
	}

	if _, err := ReadUsage(ctx, &usageLog{d: dollar, fail: true}, UsageFilter{}); ErrorCode(err) != EINTERNAL {
		t.Fatalf("failing reader: got %v, want its internal error", err)
	}
}

func TestUsageRowAdd(t *testing.T) {
	total := UsageRow{Key: "total", Sessions: 1, Messages: 2, ToolCalls: 1, APICalls: 2, InputTokens: 3, OutputTokens: 4, CacheReadTokens: 5, CacheWriteTokens: 6, ReasoningTokens: 7, EstimatedCostUSD: 0.5, ActualCostUSD: 0.25, CostUSD: 0.75, CostEstimatedUSD: 0.5}
	total.Add(UsageRow{Key: "m", Sessions: 10, Messages: 20, ToolCalls: 3, APICalls: 4, InputTokens: 30, OutputTokens: 40, CacheReadTokens: 50, CacheWriteTokens: 60, ReasoningTokens: 70, EstimatedCostUSD: 1, ActualCostUSD: 2, CostUSD: 3, CostEstimatedUSD: 1})
	want := UsageRow{Key: "total", Sessions: 11, Messages: 22, ToolCalls: 4, APICalls: 6, InputTokens: 33, OutputTokens: 44, CacheReadTokens: 55, CacheWriteTokens: 66, ReasoningTokens: 77, EstimatedCostUSD: 1.5, ActualCostUSD: 2.25, CostUSD: 3.75, CostEstimatedUSD: 1.5}
	if total != want {
		t.Fatalf("sum %+v, want %+v", total, want)
	}
	if total.Tokens() != 77 {
		t.Errorf("Tokens() = %d, want input + output = 77", total.Tokens())
	}
}

func TestSessionCost(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name      string
		est, act  *float64
		want      float64
		estimated bool
	}{
		{"billed", f(0.5), f(0.4), 0.4, false},
		{"billed nothing", f(0.5), f(0), 0, false},
		{"estimated", f(0.5), nil, 0.5, true},
		{"estimated nothing", f(0), nil, 0, false},
		{"no cost", nil, nil, 0, false},
	} {
		got, est := SessionCost(&Session{EstimatedCostUSD: c.est, ActualCostUSD: c.act})
		if got != c.want || est != c.estimated {
			t.Errorf("%s: %v, estimated %v; want %v, %v", c.name, got, est, c.want, c.estimated)
		}
	}
}

func TestFormatUSD(t *testing.T) {
	for v, want := range map[float64]string{
		0: "$0", 0.08252999999999999: "$0.0825", 0.00788: "$0.0079", 0.0003: "$0.0003", 0.00004: "<$0.0001",
		0.99999: "$1.0000", 1: "$1.00", 12.5: "$12.50", 1234.567: "$1234.57", -0.5: "-$0.5000",
	} {
		if got := FormatUSD(v); got != want {
			t.Errorf("FormatUSD(%v) = %q, want %q", v, got, want)
		}
	}
}

// A usage row's JSON gives its cost sums without the float noise of the
// addition, and keeps every other field and every cost that is exact.
func TestUsageRowJSONRoundsSums(t *testing.T) {
	var r UsageRow
	for _, c := range []float64{0.094163, 0.001369 - 0.001369, 0.001369} {
		r.Add(UsageRow{Sessions: 1, CostUSD: c, EstimatedCostUSD: c, ActualCostUSD: 1e-7, CostEstimatedUSD: 123456.789})
	}
	r.Key, r.InputTokens = "m", 7
	if r.CostUSD == 0.095532 {
		t.Fatalf("the sum %v has no noise to round: the test proves nothing", r.CostUSD)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cost_usd":0.095532`, `"estimated_cost_usd":0.095532`, `"actual_cost_usd":3e-7`,
		`"cost_estimated_usd":370370.367`, `"key":"m"`, `"sessions":3`, `"input_tokens":7`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	rep, err := json.Marshal(UsageReport{Total: r, ByModel: []UsageRow{r}})
	if err != nil || strings.Count(string(rep), `"cost_usd":0.095532,`) != 2 {
		t.Errorf("a report's rows are not written alike: %s, %v", rep, err)
	}
	for x, want := range map[float64]float64{0.09422799999999999: 0.094228, 0.1 + 0.2: 0.3, 1e-12: 1e-12, 0: 0, -2.0000000000000004: -2} {
		if got := roundSum(x); got != want {
			t.Errorf("roundSum(%v) = %v, want %v", x, got, want)
		}
	}
}
