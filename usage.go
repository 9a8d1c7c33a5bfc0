package sessiondb

import (
	"context"
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

// UsageRow sums the token and cost columns of a group of sessions. Key is
// the model, the source, the day or (in UsageReport.Top) the session id.
type UsageRow struct {
	Key              string  `json:"key"`
	Sessions         int64   `json:"sessions"`
	Messages         int64   `json:"messages"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
}

// Add adds x's counts and costs to r (its key stays): a total over rows.
func (r *UsageRow) Add(x UsageRow) {
	r.Sessions += x.Sessions
	r.Messages += x.Messages
	r.InputTokens += x.InputTokens
	r.OutputTokens += x.OutputTokens
	r.CacheReadTokens += x.CacheReadTokens
	r.CacheWriteTokens += x.CacheWriteTokens
	r.ReasoningTokens += x.ReasoningTokens
	r.EstimatedCostUSD += x.EstimatedCostUSD
	r.ActualCostUSD += x.ActualCostUSD
}

// UsageReport is token use and cost grouped by model, by source and by
// day, plus the sessions that cost most (ordered by cost, then by total
// tokens).
type UsageReport struct {
	ByModel  []UsageRow `json:"by_model"`
	BySource []UsageRow `json:"by_source"`
	// ByDay groups by the UTC day a session started ("2006-01-02"), oldest
	// first; days without a session are absent.
	ByDay []UsageRow `json:"by_day"`
	Top   []UsageRow `json:"top"`
}

// UsageService reports token use and cost from the sessions' counters.
type UsageService interface {
	// Usage sums the token and cost columns of the sessions f selects: by
	// model ("" for sessions without one) and by source, each ordered by
	// estimated cost (highest first) then key; by the UTC day each session
	// started, oldest day first; and in Top the f.Top
	// sessions that cost most (actual cost when known, else estimated;
	// then total tokens; then newest), one row per session with Sessions =
	// 1. Lists are empty, never nil. Messages is the sessions'
	// message_count.
	Usage(ctx context.Context, f UsageFilter) (*UsageReport, error)
}

// UsageBreakdown names one grouped list of a UsageReport.
type UsageBreakdown int

// The grouped lists of a UsageReport.
const (
	UsageByModel UsageBreakdown = iota
	UsageBySource
	UsageByDay
)

// DefaultUsageTop is how many sessions UsageReport.Top lists when
// UsageFilter.Top is 0.
const DefaultUsageTop = 10

// UsageReader is a backend's side of ReadUsage: the report's rows over its
// own SQL, for the sessions that cond (" WHERE …", or "" for all) selects
// with args. Its errors carry codes.
type UsageReader interface {
	// UsageGroups returns the sums of one breakdown, ordered as
	// UsageService says.
	UsageGroups(ctx context.Context, by UsageBreakdown, cond string, args []any) ([]UsageRow, error)
	// UsageTop returns at most limit (> 0) sessions that cost most, ordered
	// as UsageService says; the limit's own argument comes after args.
	UsageTop(ctx context.Context, cond string, args []any, limit int) ([]UsageRow, error)
}

// ReadUsage is Usage over r, so every backend selects alike: f.Source and
// f.Since become the condition, mark(n) the SQL placeholder of its n-th
// argument (from 1); f.Top 0 lists DefaultUsageTop sessions, a negative
// f.Top none.
func ReadUsage(ctx context.Context, r UsageReader, f UsageFilter, mark func(n int) string) (*UsageReport, error) {
	var where []string
	var args []any
	if f.Source != "" {
		args = append(args, f.Source)
		where = append(where, "source = "+mark(len(args)))
	}
	if f.Since != 0 {
		args = append(args, f.Since)
		where = append(where, "started_at >= "+mark(len(args)))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	rep := &UsageReport{Top: []UsageRow{}}
	for _, g := range []struct {
		by   UsageBreakdown
		rows *[]UsageRow
	}{{UsageByModel, &rep.ByModel}, {UsageBySource, &rep.BySource}, {UsageByDay, &rep.ByDay}} {
		rows, err := r.UsageGroups(ctx, g.by, cond, args)
		if err != nil {
			return nil, err
		}
		*g.rows = rows
	}
	top := f.Top
	if top == 0 {
		top = DefaultUsageTop
	}
	if top > 0 {
		rows, err := r.UsageTop(ctx, cond, args, top)
		if err != nil {
			return nil, err
		}
		rep.Top = rows
	}
	return rep, nil
}
