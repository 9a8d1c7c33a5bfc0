package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testUsage covers Usage: sums by model and by source, the costliest
// sessions, and the filters, on sessions started one second apart.
func testUsage(t *testing.T, h Harness) {
	e := newEnv(t, h)
	type spend struct {
		id, source, model string
		u                 sessiondb.TokenUpdate
		msgs              int
	}
	for _, s := range []spend{
		{"a", "cli", "big", sessiondb.TokenUpdate{Input: 100, Output: 10, EstimatedCostUSD: f64(1.0)}, 1},
		{"b", "cli", "small", sessiondb.TokenUpdate{Input: 10, Output: 1, EstimatedCostUSD: f64(0.1), ActualCostUSD: f64(0.2)}, 1},
		{"c", "telegram", "big", sessiondb.TokenUpdate{Input: 1000, Output: 100, EstimatedCostUSD: f64(3.0)}, 2},
		{"d", "telegram", "", sessiondb.TokenUpdate{Input: 5, Output: 5, EstimatedCostUSD: f64(0)}, 1},
		{"e", "cron", "small", sessiondb.TokenUpdate{Input: 1, Output: 1, CacheRead: 3, CacheWrite: 4, Reasoning: 6, EstimatedCostUSD: f64(0.15)}, 0},
		{"f", "cli", "", sessiondb.TokenUpdate{Input: 50}, 0},
	} {
		e.createWith(sessiondb.NewSession{ID: s.id, Source: s.source, Model: s.model})
		noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, s.id, s.u))
		for i := 0; i < s.msgs; i++ {
			e.msg(s.id, "user", "x")
		}
	}
	sinceD := e.get("d").StartedAt

	// One row per session, for Top.
	row := map[string]sessiondb.UsageRow{
		"a": {Key: "a", Sessions: 1, Messages: 1, InputTokens: 100, OutputTokens: 10, EstimatedCostUSD: 1.0},
		"b": {Key: "b", Sessions: 1, Messages: 1, InputTokens: 10, OutputTokens: 1, EstimatedCostUSD: 0.1, ActualCostUSD: 0.2},
		"c": {Key: "c", Sessions: 1, Messages: 2, InputTokens: 1000, OutputTokens: 100, EstimatedCostUSD: 3.0},
		"d": {Key: "d", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5},
		"e": {Key: "e", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15},
		"f": {Key: "f", Sessions: 1, InputTokens: 50},
	}
	top := func(ids ...string) []sessiondb.UsageRow {
		out := []sessiondb.UsageRow{}
		for _, id := range ids {
			out = append(out, row[id])
		}
		return out
	}
	cases := []struct {
		name     string
		f        sessiondb.UsageFilter
		byModel  []sessiondb.UsageRow
		bySource []sessiondb.UsageRow
		top      []sessiondb.UsageRow
	}{
		{
			name: "everything",
			byModel: []sessiondb.UsageRow{
				{Key: "big", Sessions: 2, Messages: 3, InputTokens: 1100, OutputTokens: 110, EstimatedCostUSD: 4.0},
				{Key: "small", Sessions: 2, Messages: 1, InputTokens: 11, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.25, ActualCostUSD: 0.2},
				{Key: "", Sessions: 2, Messages: 1, InputTokens: 55, OutputTokens: 5},
			},
			bySource: []sessiondb.UsageRow{
				{Key: "telegram", Sessions: 2, Messages: 3, InputTokens: 1005, OutputTokens: 105, EstimatedCostUSD: 3.0},
				{Key: "cli", Sessions: 3, Messages: 2, InputTokens: 160, OutputTokens: 11, EstimatedCostUSD: 1.1, ActualCostUSD: 0.2},
				{Key: "cron", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15},
			},
			// Actual cost ranks b (0.2) above e (estimated 0.15); f and d
			// cost nothing and rank by tokens.
			top: top("c", "a", "b", "e", "f", "d"),
		},
		{
			name:     "one source",
			f:        sessiondb.UsageFilter{Source: "cli"},
			byModel:  []sessiondb.UsageRow{{Key: "big", Sessions: 1, Messages: 1, InputTokens: 100, OutputTokens: 10, EstimatedCostUSD: 1.0}, {Key: "small", Sessions: 1, Messages: 1, InputTokens: 10, OutputTokens: 1, EstimatedCostUSD: 0.1, ActualCostUSD: 0.2}, {Key: "", Sessions: 1, InputTokens: 50}},
			bySource: []sessiondb.UsageRow{{Key: "cli", Sessions: 3, Messages: 2, InputTokens: 160, OutputTokens: 11, EstimatedCostUSD: 1.1, ActualCostUSD: 0.2}},
			top:      top("a", "b", "f"),
		},
		{
			name:     "since a start time",
			f:        sessiondb.UsageFilter{Since: sinceD},
			byModel:  []sessiondb.UsageRow{{Key: "small", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15}, {Key: "", Sessions: 2, Messages: 1, InputTokens: 55, OutputTokens: 5}},
			bySource: []sessiondb.UsageRow{{Key: "cron", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15}, {Key: "cli", Sessions: 1, InputTokens: 50}, {Key: "telegram", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5}},
			top:      top("e", "f", "d"),
		},
		{
			name:     "source and since",
			f:        sessiondb.UsageFilter{Source: "telegram", Since: sinceD},
			byModel:  []sessiondb.UsageRow{{Key: "", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5}},
			bySource: []sessiondb.UsageRow{{Key: "telegram", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5}},
			top:      top("d"),
		},
		{
			name:     "top one",
			f:        sessiondb.UsageFilter{Source: "telegram", Top: 1},
			byModel:  []sessiondb.UsageRow{{Key: "big", Sessions: 1, Messages: 2, InputTokens: 1000, OutputTokens: 100, EstimatedCostUSD: 3.0}, {Key: "", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5}},
			bySource: []sessiondb.UsageRow{{Key: "telegram", Sessions: 2, Messages: 3, InputTokens: 1005, OutputTokens: 105, EstimatedCostUSD: 3.0}},
			top:      top("c"),
		},
		{
			name:     "negative top lists none",
			f:        sessiondb.UsageFilter{Source: "cron", Top: -1},
			byModel:  []sessiondb.UsageRow{{Key: "small", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15}},
			bySource: []sessiondb.UsageRow{{Key: "cron", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15}},
			top:      top(),
		},
		{
			name:     "nothing matches",
			f:        sessiondb.UsageFilter{Source: "discord"},
			byModel:  []sessiondb.UsageRow{},
			bySource: []sessiondb.UsageRow{},
			top:      top(),
		},
		{
			name:     "since after every start",
			f:        sessiondb.UsageFilter{Since: e.now() + 1},
			byModel:  []sessiondb.UsageRow{},
			bySource: []sessiondb.UsageRow{},
			top:      top(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := e.s.Usage(e.ctx, tc.f)
			noErr(t, "Usage", err)
			if rep == nil {
				t.Fatal("Usage returned a nil report")
			}
			checkUsageRows(t, "ByModel", rep.ByModel, tc.byModel)
			checkUsageRows(t, "BySource", rep.BySource, tc.bySource)
			checkUsageRows(t, "Top", rep.Top, tc.top)
		})
	}
	t.Run("by day", func(t *testing.T) {
		e := newEnv(t, h)
		// Epoch is 2026-03-15 09:24:37 UTC: x and y that day, z two days
		// later just before midnight, w the next day.
		e.create("x", "cli")
		e.create("y", "cli")
		e.clock.Set(time.Date(2026, 3, 17, 23, 59, 59, 0, time.UTC))
		e.create("z", "cli")
		e.create("w", "cli")
		for id, cost := range map[string]float64{"x": 1, "y": 2, "z": 4, "w": 8} {
			noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, id, sessiondb.TokenUpdate{Input: int64(cost), EstimatedCostUSD: f64(cost)}))
		}
		rep, err := e.s.Usage(e.ctx, sessiondb.UsageFilter{})
		noErr(t, "Usage", err)
		checkUsageRows(t, "ByDay", rep.ByDay, []sessiondb.UsageRow{
			{Key: "2026-03-15", Sessions: 2, InputTokens: 3, EstimatedCostUSD: 3},
			{Key: "2026-03-17", Sessions: 1, InputTokens: 4, EstimatedCostUSD: 4},
			{Key: "2026-03-18", Sessions: 1, InputTokens: 8, EstimatedCostUSD: 8},
		})
		rep, err = e.s.Usage(e.ctx, sessiondb.UsageFilter{Source: "discord"})
		noErr(t, "Usage", err)
		checkUsageRows(t, "ByDay of nothing", rep.ByDay, []sessiondb.UsageRow{})
	})
	t.Run("default top is ten", func(t *testing.T) {
		e := newEnv(t, h)
		for _, id := range seq("s", 12) {
			e.create(id, "cli")
		}
		rep, err := e.s.Usage(e.ctx, sessiondb.UsageFilter{})
		noErr(t, "Usage", err)
		if len(rep.Top) != 10 {
			t.Errorf("len(Top) = %d, want 10", len(rep.Top))
		}
		if len(rep.BySource) != 1 || rep.BySource[0].Sessions != 12 {
			t.Errorf("BySource = %+v, want one row of 12 sessions", rep.BySource)
		}
	})
}

// checkUsageRows compares rows, costs to within rounding of the sums. An
// empty want needs an empty, non-nil list (it is encoded as [], not null).
func checkUsageRows(t *testing.T, what string, got, want []sessiondb.UsageRow) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is nil, want a list", what)
	}
	if len(got) != len(want) {
		t.Errorf("%s = %+v\nwant %+v", what, got, want)
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		costsClose := math.Abs(g.EstimatedCostUSD-w.EstimatedCostUSD) < 1e-9 && math.Abs(g.ActualCostUSD-w.ActualCostUSD) < 1e-9
		g.EstimatedCostUSD, g.ActualCostUSD = w.EstimatedCostUSD, w.ActualCostUSD
		if g != w || !costsClose {
			t.Errorf("%s[%d] = %s\nwant %s", what, i, fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]))
		}
	}
}
