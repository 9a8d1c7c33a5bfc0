package sessiondb

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// UsageFilter narrows a usage report. The zero value covers every source
// and all time, with the 10 most expensive sessions in Top.
type UsageFilter struct {
	// Source keeps only sessions of this source; "" means all.
	Source string
	// Since keeps only sessions started at or after this epoch second; 0
	// means all time.
	Since float64
	// Top is how many sessions to list in UsageReport.Top; 0 means 10,
	// negative means none.
	Top int
}

// UsageRow sums the counters and costs of a group of sessions. Key is the
// model, the source, the day or (in UsageReport.Top) the session id.
type UsageRow struct {
	Key string `json:"key"`
	// Title is the session's title, in UsageReport.Top only.
	Title string `json:"title,omitempty"`
	// Sessions counts the sessions of the group. By model it counts the
	// sessions that spent on the model (see UsageService), so a session
	// that switched models counts under each.
	Sessions int64 `json:"sessions"`
	// Messages and ToolCalls are the sessions' message_count and
	// tool_call_count; by model they go to each session's own model.
	Messages  int64 `json:"messages"`
	ToolCalls int64 `json:"tool_calls"`
	// APICalls is api_call_count (0 on a file without it).
	APICalls         int64 `json:"api_calls"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
	// EstimatedCostUSD and ActualCostUSD sum the two cost columns as
	// stored.
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
	// CostUSD is what the group cost by CostRule: each session's actual
	// cost where it was billed, else its estimate. CostEstimatedUSD is the
	// part of CostUSD that is estimated (the sessions not billed).
	CostUSD          float64 `json:"cost_usd"`
	CostEstimatedUSD float64 `json:"cost_estimated_usd"`
}

// MarshalJSON writes r with its costs to 15 significant digits: a sum of
// costs carries float noise in its last digits (0.094228 summed as
// 0.09422799999999999), which a script reading --json need not see.
func (r UsageRow) MarshalJSON() ([]byte, error) {
	type plain UsageRow
	p := plain(r)
	for _, c := range []*float64{&p.EstimatedCostUSD, &p.ActualCostUSD, &p.CostUSD, &p.CostEstimatedUSD} {
		*c = roundSum(*c)
	}
	return json.Marshal(p)
}

// roundSum is x to 15 significant digits, the float noise of a sum
// (0.09422799999999999) rounded off (0.094228).
func roundSum(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 15, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// Tokens is the row's input + output (see the function Tokens).
func (r UsageRow) Tokens() int64 { return Tokens(r.InputTokens, r.OutputTokens) }

// Add adds x's counts and costs to r (its key and title stay): a total
// over rows.
func (r *UsageRow) Add(x UsageRow) {
	r.Sessions += x.Sessions
	r.Messages += x.Messages
	r.ToolCalls += x.ToolCalls
	r.APICalls += x.APICalls
	r.InputTokens += x.InputTokens
	r.OutputTokens += x.OutputTokens
	r.CacheReadTokens += x.CacheReadTokens
	r.CacheWriteTokens += x.CacheWriteTokens
	r.ReasoningTokens += x.ReasoningTokens
	r.EstimatedCostUSD += x.EstimatedCostUSD
	r.ActualCostUSD += x.ActualCostUSD
	r.CostUSD += x.CostUSD
	r.CostEstimatedUSD += x.CostEstimatedUSD
}

// scanTargets are r's fields in the order of the usage queries' columns
// (usageSelect).
func (r *UsageRow) scanTargets() []any {
	return []any{&r.Key, &r.Title, &r.Sessions, &r.Messages, &r.ToolCalls, &r.APICalls, &r.InputTokens, &r.OutputTokens,
		&r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens, &r.EstimatedCostUSD, &r.ActualCostUSD, &r.CostUSD, &r.CostEstimatedUSD}
}

// ScanUsageRow scans one row of a query ReadUsage or UsageSums built:
// scan is the driver's Scan.
func ScanUsageRow(scan func(dest ...any) error) (UsageRow, error) {
	var r UsageRow
	err := scan(r.scanTargets()...)
	return r, err
}

// UsageReport is token use and cost grouped by model, by source and by
// day, plus the sessions that cost most.
type UsageReport struct {
	// Total sums every session the filter selects, each once.
	Total UsageRow `json:"total"`
	// ModelUsageRows says ByModel split sessions across the models they
	// used by the store's per-model usage rows (Hermes' session_model_usage);
	// false when the store has no such table and each session's usage went
	// to its own model.
	ModelUsageRows bool       `json:"model_usage_rows"`
	ByModel        []UsageRow `json:"by_model"`
	BySource       []UsageRow `json:"by_source"`
	// ByDay groups by the UTC day a session started ("2006-01-02"), oldest
	// first; days without a session are absent.
	ByDay []UsageRow `json:"by_day"`
	Top   []UsageRow `json:"top"`
}

// UsageService reports token use and cost from the sessions' counters.
type UsageService interface {
	// Usage sums the counters and costs of the sessions f selects: in
	// total; by model and by source, each ordered by cost (CostRule,
	// highest first) then key; by the UTC day each session started, oldest
	// day first; and in Top the f.Top sessions that cost most (by
	// CostRule; then tokens, input + output; then newest), one row per
	// session with its title and Sessions = 1. Lists are empty, never nil.
	//
	// By model, where the store has per-model usage rows (a newer Hermes'
	// session_model_usage), each row's tokens, calls and costs go to its
	// model, and what a session's totals hold beyond its rows (per
	// counter and cost, never below 0) to the session's own model ("" for
	// none), as Hermes' insights split them; without such rows everything
	// goes to the session's model. A session counts under each model it
	// spent on (a row, or totals beyond its rows), so one with no usage
	// counts under none; its messages and tool calls go to its own model.
	Usage(ctx context.Context, f UsageFilter) (*UsageReport, error)
}

// DefaultUsageTop is how many sessions UsageReport.Top lists when
// UsageFilter.Top is 0.
const DefaultUsageTop = 10

// UsageReader is a backend's side of ReadUsage: it says how its SQL is
// written and which columns it has, and runs the queries ReadUsage builds.
type UsageReader interface {
	// UsageSQL describes the backend's SQL (see UsageSQL).
	UsageSQL() UsageSQL
	// UsageRows runs q with args and returns its rows, each scanned with
	// ScanUsageRow. Its errors carry codes.
	UsageRows(ctx context.Context, q string, args []any) ([]UsageRow, error)
}

// ReadUsage is Usage over r, so every backend selects, splits and orders
// alike: f.Source and f.Since become the condition; f.Top 0 lists
// DefaultUsageTop sessions, a negative f.Top none.
func ReadUsage(ctx context.Context, r UsageReader, f UsageFilter) (*UsageReport, error) {
	d := r.UsageSQL()
	var where []string
	var args []any
	if f.Source != "" {
		args = append(args, f.Source)
		where = append(where, "s.source = "+d.Mark(len(args)))
	}
	if f.Since != 0 {
		args = append(args, f.Since)
		where = append(where, "s.started_at >= "+d.Mark(len(args)))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	rep := &UsageReport{Top: []UsageRow{}, ModelUsageRows: d.hasModelUsage()}
	total, err := r.UsageRows(ctx, d.totalSQL(cond), args)
	if err != nil {
		return nil, err
	}
	if len(total) == 1 {
		rep.Total = total[0]
	}
	for _, g := range []struct {
		q    string
		rows *[]UsageRow
	}{
		{d.byModelSQL(cond), &rep.ByModel},
		{d.groupSQL("COALESCE(s.source, '')"+d.Collate, cond), &rep.BySource},
		{d.byDaySQL(cond), &rep.ByDay},
	} {
		rows, err := r.UsageRows(ctx, g.q, args)
		if err != nil {
			return nil, err
		}
		*g.rows = NonNil(rows)
	}
	top := f.Top
	if top == 0 {
		top = DefaultUsageTop
	}
	if top > 0 {
		rows, err := r.UsageRows(ctx, d.topSQL(cond, len(args)+1), append(args[:len(args):len(args)], top))
		if err != nil {
			return nil, err
		}
		rep.Top = NonNil(rows)
	}
	return rep, nil
}
