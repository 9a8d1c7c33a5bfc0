package storetest

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testUsage covers Usage: sums by model and by source, the costliest
// sessions, and the filters, on sessions started one second apart; costs
// by sessiondb.CostRule (b is billed, the others estimated).
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
		// g used nothing: it counts as a session of its source, not of
		// its model, whose messages it still adds to.
		{"g", "cli", "big", sessiondb.TokenUpdate{}, 1},
	} {
		e.createWith(sessiondb.NewSession{ID: s.id, Source: s.source, Model: s.model})
		noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, s.id, s.u))
		for i := 0; i < s.msgs; i++ {
			e.msg(s.id, "user", "x")
		}
	}
	e.setTitle("c", "the costly one")
	sinceD := e.get("d").StartedAt

	// One row per session, for Top.
	row := map[string]sessiondb.UsageRow{
		"a": {Key: "a", Sessions: 1, Messages: 1, InputTokens: 100, OutputTokens: 10, EstimatedCostUSD: 1.0, CostUSD: 1.0, CostEstimatedUSD: 1.0},
		"b": {Key: "b", Sessions: 1, Messages: 1, InputTokens: 10, OutputTokens: 1, EstimatedCostUSD: 0.1, ActualCostUSD: 0.2, CostUSD: 0.2},
		"c": {Key: "c", Title: "the costly one", Sessions: 1, Messages: 2, InputTokens: 1000, OutputTokens: 100, EstimatedCostUSD: 3.0, CostUSD: 3.0, CostEstimatedUSD: 3.0},
		"d": {Key: "d", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5},
		"e": {Key: "e", Sessions: 1, InputTokens: 1, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 6, EstimatedCostUSD: 0.15, CostUSD: 0.15, CostEstimatedUSD: 0.15},
		"f": {Key: "f", Sessions: 1, InputTokens: 50},
		"g": {Key: "g", Sessions: 1, Messages: 1},
	}
	top := func(ids ...string) []sessiondb.UsageRow {
		out := []sessiondb.UsageRow{}
		for _, id := range ids {
			out = append(out, row[id])
		}
		return out
	}
	// sum is the rows of ids added up under key, each session once.
	sum := func(key string, ids ...string) sessiondb.UsageRow {
		r := sessiondb.UsageRow{Key: key}
		for _, id := range ids {
			r.Add(row[id])
		}
		return r
	}
	// byModel is sum by model: g's messages count, g does not.
	byModel := func(key string, ids ...string) sessiondb.UsageRow {
		r := sum(key, ids...)
		if slices.Contains(ids, "g") {
			r.Sessions--
		}
		return r
	}
	cases := []struct {
		name     string
		f        sessiondb.UsageFilter
		total    sessiondb.UsageRow
		byModel  []sessiondb.UsageRow
		bySource []sessiondb.UsageRow
		top      []sessiondb.UsageRow
	}{
		{
			name:    "everything",
			total:   sum("", "a", "b", "c", "d", "e", "f", "g"),
			byModel: []sessiondb.UsageRow{byModel("big", "a", "c", "g"), byModel("small", "b", "e"), byModel("", "d", "f")},
			// cli's cost mixes b's billed 0.2 and a's estimated 1.0.
			bySource: []sessiondb.UsageRow{sum("telegram", "c", "d"), sum("cli", "a", "b", "f", "g"), sum("cron", "e")},
			// Actual cost ranks b (0.2) above e (estimated 0.15); f, d
			// and g cost nothing and rank by tokens.
			top: top("c", "a", "b", "e", "f", "d", "g"),
		},
		{
			name:     "one source",
			f:        sessiondb.UsageFilter{Source: "cli"},
			total:    sum("", "a", "b", "f", "g"),
			byModel:  []sessiondb.UsageRow{byModel("big", "a", "g"), byModel("small", "b"), byModel("", "f")},
			bySource: []sessiondb.UsageRow{sum("cli", "a", "b", "f", "g")},
			top:      top("a", "b", "f", "g"),
		},
		{
			name:     "since a start time",
			f:        sessiondb.UsageFilter{Since: sinceD},
			total:    sum("", "d", "e", "f", "g"),
			byModel:  []sessiondb.UsageRow{byModel("small", "e"), byModel("", "d", "f"), byModel("big", "g")},
			bySource: []sessiondb.UsageRow{sum("cron", "e"), sum("cli", "f", "g"), sum("telegram", "d")},
			top:      top("e", "f", "d", "g"),
		},
		{
			name:     "source and since",
			f:        sessiondb.UsageFilter{Source: "telegram", Since: sinceD},
			total:    sum("", "d"),
			byModel:  []sessiondb.UsageRow{byModel("", "d")},
			bySource: []sessiondb.UsageRow{sum("telegram", "d")},
			top:      top("d"),
		},
		{
			name:     "top one",
			f:        sessiondb.UsageFilter{Source: "telegram", Top: 1},
			total:    sum("", "c", "d"),
			byModel:  []sessiondb.UsageRow{byModel("big", "c"), byModel("", "d")},
			bySource: []sessiondb.UsageRow{sum("telegram", "c", "d")},
			top:      top("c"),
		},
		{
			name:     "negative top lists none",
			f:        sessiondb.UsageFilter{Source: "cron", Top: -1},
			total:    sum("", "e"),
			byModel:  []sessiondb.UsageRow{byModel("small", "e")},
			bySource: []sessiondb.UsageRow{sum("cron", "e")},
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
			tc.total.Key = ""
			checkUsageRows(t, "Total", []sessiondb.UsageRow{rep.Total}, []sessiondb.UsageRow{tc.total})
			checkUsageRows(t, "ByModel", rep.ByModel, tc.byModel)
			checkUsageRows(t, "BySource", rep.BySource, tc.bySource)
			checkUsageRows(t, "Top", rep.Top, tc.top)
		})
	}
	t.Run("split by model", func(t *testing.T) {
		e := newEnv(t, h)
		// s1 switched from claude to codex: its rows put each call on its
		// model, and what its totals hold beyond them (0.02 of estimate)
		// goes to its own model. s2 was billed: its parts count their
		// actual cost, which adds up to the session's.
		usage := func(model string, in, out, calls int, est, act float64) map[string]any {
			return map[string]any{"model": model, "billing_provider": "p", "input_tokens": float64(in), "output_tokens": float64(out),
				"api_call_count": float64(calls), "estimated_cost_usd": est, "actual_cost_usd": act, "cost_status": "estimated"}
		}
		s1 := map[string]any{"id": "s1", "source": "cli", "started_at": 1000.0, "model": "gpt-5-codex",
			"input_tokens": 15000.0, "output_tokens": 790.0, "cache_read_tokens": 4100.0, "reasoning_tokens": 136.0,
			"api_call_count": 4.0, "estimated_cost_usd": 0.0457,
			"messages":         []any{map[string]any{"role": "user", "content": "hi", "timestamp": 1001.0}},
			sessiondb.UsageKey: []any{usage("anthropic/claude-sonnet-4", 6400, 430, 2, 0.0257, 0), usage("gpt-5-codex", 8600, 360, 2, 0, 0)}}
		s1[sessiondb.UsageKey].([]any)[0].(map[string]any)["cache_read_tokens"] = 4100.0
		s1[sessiondb.UsageKey].([]any)[1].(map[string]any)["reasoning_tokens"] = 136.0
		s2 := map[string]any{"id": "s2", "source": "cli", "started_at": 1002.0, "model": "m2",
			"input_tokens": 300.0, "estimated_cost_usd": 0.04, "actual_cost_usd": 0.049,
			sessiondb.UsageKey: []any{usage("m1", 100, 0, 0, 0.01, 0.03), usage("m2", 200, 0, 0, 0.03, 0.019)}}
		var dropped []sessiondb.DroppedField
		for _, rec := range []map[string]any{s1, s2} {
			res, err := e.s.ImportSession(e.ctx, rec, sessiondb.ImportOptions{})
			noErr(t, "ImportSession", err)
			dropped = sessiondb.MergeDropped(dropped, res.Dropped)
		}
		split := !slices.ContainsFunc(dropped, func(d sessiondb.DroppedField) bool { return d.Field == sessiondb.UsageKey })
		calls := int64(2)
		if slices.ContainsFunc(dropped, func(d sessiondb.DroppedField) bool { return d.Field == "sessions.api_call_count" }) {
			calls = 0 // a schema-6 file has no api_call_count
		}
		rep, err := e.s.Usage(e.ctx, sessiondb.UsageFilter{})
		noErr(t, "Usage", err)
		if rep.ModelUsageRows != split {
			t.Errorf("ModelUsageRows = %v; the store kept the usage rows: %v", rep.ModelUsageRows, split)
		}
		m := e.get("s1").MessageCount
		want := []sessiondb.UsageRow{
			{Key: "m1", Sessions: 1, InputTokens: 100, EstimatedCostUSD: 0.01, ActualCostUSD: 0.03, CostUSD: 0.03},
			{Key: "anthropic/claude-sonnet-4", Sessions: 1, APICalls: calls, InputTokens: 6400, OutputTokens: 430, CacheReadTokens: 4100,
				EstimatedCostUSD: 0.0257, CostUSD: 0.0257, CostEstimatedUSD: 0.0257},
			{Key: "gpt-5-codex", Sessions: 1, Messages: m, APICalls: calls, InputTokens: 8600, OutputTokens: 360, ReasoningTokens: 136,
				EstimatedCostUSD: 0.02, CostUSD: 0.02, CostEstimatedUSD: 0.02},
			{Key: "m2", Sessions: 1, InputTokens: 200, EstimatedCostUSD: 0.03, ActualCostUSD: 0.019, CostUSD: 0.019},
		}
		if !split {
			want = []sessiondb.UsageRow{
				{Key: "m2", Sessions: 1, InputTokens: 300, EstimatedCostUSD: 0.04, ActualCostUSD: 0.049, CostUSD: 0.049},
				{Key: "gpt-5-codex", Sessions: 1, Messages: m, APICalls: 2 * calls, InputTokens: 15000, OutputTokens: 790, CacheReadTokens: 4100,
					ReasoningTokens: 136, EstimatedCostUSD: 0.0457, CostUSD: 0.0457, CostEstimatedUSD: 0.0457},
			}
		}
		checkUsageRows(t, "ByModel", rep.ByModel, want)
		// Over all models the split keeps every session's totals.
		var all sessiondb.UsageRow
		for _, r := range rep.ByModel {
			all.Add(r)
		}
		all.Key, all.Sessions, rep.Total.Sessions = "", 0, 0
		checkUsageRows(t, "ByModel summed", []sessiondb.UsageRow{all}, []sessiondb.UsageRow{rep.Total})
	})
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
			u := sessiondb.TokenUpdate{Input: int64(cost), EstimatedCostUSD: f64(cost)}
			if id == "y" {
				u.ActualCostUSD = f64(2.5)
			}
			noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, id, u))
		}
		rep, err := e.s.Usage(e.ctx, sessiondb.UsageFilter{})
		noErr(t, "Usage", err)
		checkUsageRows(t, "ByDay", rep.ByDay, []sessiondb.UsageRow{
			{Key: "2026-03-15", Sessions: 2, InputTokens: 3, EstimatedCostUSD: 3, ActualCostUSD: 2.5, CostUSD: 3.5, CostEstimatedUSD: 1},
			{Key: "2026-03-17", Sessions: 1, InputTokens: 4, EstimatedCostUSD: 4, CostUSD: 4, CostEstimatedUSD: 4},
			{Key: "2026-03-18", Sessions: 1, InputTokens: 8, EstimatedCostUSD: 8, CostUSD: 8, CostEstimatedUSD: 8},
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
		if len(rep.BySource) != 1 || rep.BySource[0].Sessions != 12 || rep.Total.Sessions != 12 {
			t.Errorf("BySource = %+v, Total %+v, want one row of 12 sessions", rep.BySource, rep.Total)
		}
		// None used a model: no model row.
		checkUsageRows(t, "ByModel of sessions that used nothing", rep.ByModel, []sessiondb.UsageRow{})
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
		costsClose := true
		for _, c := range [][2]float64{{g.EstimatedCostUSD, w.EstimatedCostUSD}, {g.ActualCostUSD, w.ActualCostUSD},
			{g.CostUSD, w.CostUSD}, {g.CostEstimatedUSD, w.CostEstimatedUSD}} {
			costsClose = costsClose && math.Abs(c[0]-c[1]) < 1e-9
		}
		g.EstimatedCostUSD, g.ActualCostUSD, g.CostUSD, g.CostEstimatedUSD = w.EstimatedCostUSD, w.ActualCostUSD, w.CostUSD, w.CostEstimatedUSD
		if g != w || !costsClose {
			t.Errorf("%s[%d] = %s\nwant %s", what, i, fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]))
		}
	}
}
