package storetest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testSessions covers section 5's create, ensure, end, reopen, system prompt
// and get.
func testSessions(t *testing.T, h Harness) {
	t.Run("Create", func(t *testing.T) {
		cases := []struct {
			name string
			ns   sessiondb.NewSession
			code string // "" = success
			// check runs on success against the stored row.
			check func(t *testing.T, e *env, s *sessiondb.Session, created float64)
		}{
			{name: "source required", ns: sessiondb.NewSession{ID: "s1"}, code: sessiondb.EINVALID},
			{
				name: "all fields stored",
				ns: sessiondb.NewSession{ID: "s1", Source: "cli", Model: "m1", SystemPrompt: "be brief",
					UserID: "u1", ModelConfig: map[string]any{"temperature": 0.5, "max_tokens": 100.0}},
				check: func(t *testing.T, e *env, s *sessiondb.Session, created float64) {
					if s.Source != "cli" || deref(s.Model) != "m1" || deref(s.SystemPrompt) != "be brief" || deref(s.UserID) != "u1" {
						t.Errorf("source/model/prompt/user = %q/%s/%s/%s", s.Source, deref(s.Model), deref(s.SystemPrompt), deref(s.UserID))
					}
					if s.StartedAt != created {
						t.Errorf("started_at = %v, want now %v", s.StartedAt, created)
					}
					if s.ModelConfig == nil {
						t.Fatal("model_config is NULL, want JSON")
					}
					want := map[string]any{"temperature": 0.5, "max_tokens": 100.0}
					if got := jsonText(t, *s.ModelConfig); !reflect.DeepEqual(got, want) {
						t.Errorf("model_config = %v, want %v", got, want)
					}
					if s.ParentSessionID != nil || s.EndedAt != nil || s.EndReason != nil || s.Title != nil {
						t.Errorf("parent/ended/reason/title should be NULL: %+v", s)
					}
					if s.MessageCount != 0 || s.ToolCallCount != 0 || s.InputTokens != 0 || s.EstimatedCostUSD != nil || s.ActualCostUSD != nil {
						t.Errorf("counters should start at zero and costs NULL: %+v", s)
					}
				},
			},
			{
				name: "nil model_config is NULL",
				ns:   sessiondb.NewSession{ID: "s1", Source: "cli"},
				check: func(t *testing.T, e *env, s *sessiondb.Session, _ float64) {
					if s.ModelConfig != nil {
						t.Errorf("model_config = %q, want NULL", *s.ModelConfig)
					}
					if s.Model != nil || s.SystemPrompt != nil || s.UserID != nil {
						t.Errorf("empty model/prompt/user should be NULL: %+v", s)
					}
				},
			},
			{
				name: "empty model_config is NULL",
				ns:   sessiondb.NewSession{ID: "s1", Source: "cli", ModelConfig: map[string]any{}},
				check: func(t *testing.T, e *env, s *sessiondb.Session, _ float64) {
					if s.ModelConfig != nil {
						t.Errorf("model_config = %q, want NULL", *s.ModelConfig)
					}
				},
			},
			{name: "unknown parent is invalid", ns: sessiondb.NewSession{ID: "s1", Source: "cli", ParentSessionID: "ghost"}, code: sessiondb.EINVALID},
			{
				name: "known parent",
				ns:   sessiondb.NewSession{ID: "s1", Source: "cli", ParentSessionID: "p"},
				check: func(t *testing.T, e *env, s *sessiondb.Session, _ float64) {
					if deref(s.ParentSessionID) != "p" {
						t.Errorf("parent_session_id = %s, want p", deref(s.ParentSessionID))
					}
				},
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("p", "cli")
				created := e.now()
				id, err := e.s.CreateSession(e.ctx, tc.ns)
				if tc.code != "" {
					wantCode(t, "CreateSession", err, tc.code)
					if _, gerr := e.s.GetSession(e.ctx, tc.ns.ID); sessiondb.ErrorCode(gerr) != sessiondb.ENOTFOUND {
						t.Errorf("rejected create left a row behind (GetSession err %v)", gerr)
					}
					return
				}
				noErr(t, "CreateSession", err)
				if id != tc.ns.ID {
					t.Errorf("returned id %q, want %q", id, tc.ns.ID)
				}
				tc.check(t, e, e.get(tc.ns.ID), created)
			})
		}
	})

	t.Run("CreateUpsertFillsNullsOnly", func(t *testing.T) {
		e := newEnv(t, h)
		noErr(t, "EnsureSession", e.s.EnsureSession(e.ctx, "s1", "cli", ""))
		started := e.get("s1").StartedAt
		e.tick()
		e.createWith(sessiondb.NewSession{ID: "s1", Source: "telegram", Model: "m1", SystemPrompt: "p1",
			UserID: "u1", ModelConfig: map[string]any{"k": "v"}})
		s := e.get("s1")
		if s.Source != "cli" || s.StartedAt != started {
			t.Errorf("existing source/started_at clobbered: %q %v (want cli %v)", s.Source, s.StartedAt, started)
		}
		if deref(s.Model) != "m1" || deref(s.SystemPrompt) != "p1" || deref(s.UserID) != "u1" || s.ModelConfig == nil {
			t.Errorf("NULL columns not filled: model %s prompt %s user %s config %v", deref(s.Model), deref(s.SystemPrompt), deref(s.UserID), s.ModelConfig)
		}
		// A second rich create must not overwrite what is now set.
		e.createWith(sessiondb.NewSession{ID: "s1", Source: "cli", Model: "m2", SystemPrompt: "p2", UserID: "u2"})
		s = e.get("s1")
		if deref(s.Model) != "m1" || deref(s.SystemPrompt) != "p1" || deref(s.UserID) != "u1" {
			t.Errorf("set columns overwritten: model %s prompt %s user %s", deref(s.Model), deref(s.SystemPrompt), deref(s.UserID))
		}
		if n, _ := e.s.SessionCount(e.ctx, ""); n != 1 {
			t.Errorf("SessionCount = %d, want 1", n)
		}
	})

	t.Run("Ensure", func(t *testing.T) {
		cases := []struct {
			name          string
			pre           bool // session exists before
			source, model string
			wantSource    string
			wantModel     *string
		}{
			{name: "absent inserts", source: "cli", model: "m1", wantSource: "cli", wantModel: str("m1")},
			{name: "empty source is unknown", source: "", model: "m1", wantSource: "unknown", wantModel: str("m1")},
			{name: "empty model is NULL", source: "cli", model: "", wantSource: "cli"},
			{name: "present is a no-op", pre: true, source: "telegram", model: "m2", wantSource: "cli", wantModel: str("m0")},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				if tc.pre {
					e.createWith(sessiondb.NewSession{ID: "s1", Source: "cli", Model: "m0"})
				}
				// createWith ticked, so a clobbering ensure would move started_at.
				wantStart := e.now()
				if tc.pre {
					wantStart = e.get("s1").StartedAt
				}
				noErr(t, "EnsureSession", e.s.EnsureSession(e.ctx, "s1", tc.source, tc.model))
				s := e.get("s1")
				if s.Source != tc.wantSource {
					t.Errorf("source = %q, want %q", s.Source, tc.wantSource)
				}
				if !reflect.DeepEqual(s.Model, tc.wantModel) {
					t.Errorf("model = %s, want %s", deref(s.Model), deref(tc.wantModel))
				}
				if s.StartedAt != wantStart {
					t.Errorf("started_at = %v, want %v", s.StartedAt, wantStart)
				}
			})
		}
	})

	t.Run("EndAndReopen", func(t *testing.T) {
		type step struct {
			op     string // end, reopen
			reason string
		}
		cases := []struct {
			name       string
			steps      []step
			wantReason *string
			wantEndAt  int // index of the step whose time ended_at holds; -1 = NULL
		}{
			{name: "end sets reason and time", steps: []step{{"end", "user_exit"}}, wantReason: str("user_exit"), wantEndAt: 0},
			{name: "first reason wins", steps: []step{{"end", "user_exit"}, {"end", "compression"}}, wantReason: str("user_exit"), wantEndAt: 0},
			{name: "reopen clears", steps: []step{{"end", "user_exit"}, {"reopen", ""}}, wantEndAt: -1},
			{name: "reopen then re-end", steps: []step{{"end", "user_exit"}, {"reopen", ""}, {"end", "compression"}}, wantReason: str("compression"), wantEndAt: 2},
			{name: "reopen an open session", steps: []step{{"reopen", ""}}, wantEndAt: -1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("s1", "cli")
				times := make([]float64, len(tc.steps))
				for i, st := range tc.steps {
					times[i] = e.now()
					switch st.op {
					case "end":
						e.end("s1", st.reason)
					case "reopen":
						noErr(t, "ReopenSession", e.s.ReopenSession(e.ctx, "s1"))
						e.tick()
					}
				}
				s := e.get("s1")
				if !reflect.DeepEqual(s.EndReason, tc.wantReason) {
					t.Errorf("end_reason = %s, want %s", deref(s.EndReason), deref(tc.wantReason))
				}
				switch {
				case tc.wantEndAt < 0 && s.EndedAt != nil:
					t.Errorf("ended_at = %v, want NULL", *s.EndedAt)
				case tc.wantEndAt >= 0 && (s.EndedAt == nil || *s.EndedAt != times[tc.wantEndAt]):
					t.Errorf("ended_at = %v, want %v", derefF(s.EndedAt), times[tc.wantEndAt])
				}
			})
		}
	})

	t.Run("UnknownIDsAreNoOps", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		noErr(t, "EndSession(ghost)", e.s.EndSession(e.ctx, "ghost", "user_exit"))
		noErr(t, "UpdateSystemPrompt(ghost)", e.s.UpdateSystemPrompt(e.ctx, "ghost", "p"))
		noErr(t, "UpdateTokenCounts(ghost)", e.s.UpdateTokenCounts(e.ctx, "ghost", sessiondb.TokenUpdate{Input: 5}))
		noErr(t, "ClearMessages(ghost)", e.s.ClearMessages(e.ctx, "ghost"))
		if n, err := e.s.SessionCount(e.ctx, ""); err != nil || n != 1 {
			t.Errorf("SessionCount = %d, %v; want 1 (no-ops must not insert)", n, err)
		}
		if _, err := e.s.GetSession(e.ctx, "ghost"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
			t.Errorf("ghost session appeared (err %v)", err)
		}
	})

	t.Run("UpdateSystemPrompt", func(t *testing.T) {
		e := newEnv(t, h)
		e.createWith(sessiondb.NewSession{ID: "s1", Source: "cli", SystemPrompt: "old"})
		noErr(t, "UpdateSystemPrompt", e.s.UpdateSystemPrompt(e.ctx, "s1", "new prompt"))
		if got := deref(e.get("s1").SystemPrompt); got != "new prompt" {
			t.Errorf("system_prompt = %s, want new prompt", got)
		}
	})

	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		for _, id := range []string{"ghost", "s", "S1", ""} {
			s, err := e.s.GetSession(e.ctx, id)
			if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
				t.Errorf("GetSession(%q) = %v, %v; want not_found", id, s, err)
			}
		}
	})

	t.Run("Counts", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.create("b", "cli")
		e.create("c", "telegram")
		e.msg("a", "user", "1")
		e.msg("a", "assistant", "2")
		e.msg("c", "user", "3")
		cases := []struct {
			name string
			fn   func() (int64, error)
			want int64
		}{
			{"sessions all", func() (int64, error) { return e.s.SessionCount(e.ctx, "") }, 3},
			{"sessions cli", func() (int64, error) { return e.s.SessionCount(e.ctx, "cli") }, 2},
			{"sessions none", func() (int64, error) { return e.s.SessionCount(e.ctx, "discord") }, 0},
			{"messages all", func() (int64, error) { return e.s.MessageCount(e.ctx, "") }, 3},
			{"messages of a", func() (int64, error) { return e.s.MessageCount(e.ctx, "a") }, 2},
			{"messages of b", func() (int64, error) { return e.s.MessageCount(e.ctx, "b") }, 0},
			{"messages of ghost", func() (int64, error) { return e.s.MessageCount(e.ctx, "ghost") }, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, err := tc.fn()
				noErr(t, tc.name, err)
				if got != tc.want {
					t.Errorf("got %d, want %d", got, tc.want)
				}
			})
		}
	})
}

// testTokenCounts covers UpdateTokenCounts, incremental and absolute.
func testTokenCounts(t *testing.T, h Harness) {
	type want struct {
		in, out, cr, cw, rs int64
		est, act            *float64
		status, src, pv     *string
		bp, bu, bm, model   *string
	}
	cases := []struct {
		name    string
		model   string // the session's model at creation
		updates []sessiondb.TokenUpdate
		want    want
	}{
		{
			name: "spec check example",
			updates: []sessiondb.TokenUpdate{
				{Input: 10, Output: 5, EstimatedCostUSD: f64(0.01)},
				{Input: 10, Output: 5, EstimatedCostUSD: f64(0.02), ActualCostUSD: f64(0.5)},
			},
			want: want{in: 20, out: 10, est: f64(0.03), act: f64(0.5)},
		},
		{
			name: "all five token columns add",
			updates: []sessiondb.TokenUpdate{
				{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, Reasoning: 5},
				{Input: 10, Output: 20, CacheRead: 30, CacheWrite: 40, Reasoning: 50},
			},
			want: want{in: 11, out: 22, cr: 33, cw: 44, rs: 55, est: f64(0)},
		},
		{
			name:    "estimated cost becomes 0 without a cost",
			updates: []sessiondb.TokenUpdate{{Input: 1}},
			want:    want{in: 1, est: f64(0)},
		},
		{
			name:    "actual cost stays NULL when never given",
			updates: []sessiondb.TokenUpdate{{Input: 1, EstimatedCostUSD: f64(0.25)}, {Output: 1}},
			want:    want{in: 1, out: 1, est: f64(0.25)},
		},
		{
			name:    "actual cost adds when given",
			updates: []sessiondb.TokenUpdate{{ActualCostUSD: f64(0.25)}, {}, {ActualCostUSD: f64(0.5)}},
			want:    want{est: f64(0), act: f64(0.75)},
		},
		{
			name: "absolute sets tokens",
			updates: []sessiondb.TokenUpdate{
				{Input: 100, Output: 100, CacheRead: 100, CacheWrite: 100, Reasoning: 100, EstimatedCostUSD: f64(1)},
				{Input: 7, Output: 8, CacheRead: 9, CacheWrite: 10, Reasoning: 11, EstimatedCostUSD: f64(0.5), Absolute: true},
			},
			want: want{in: 7, out: 8, cr: 9, cw: 10, rs: 11, est: f64(0.5)},
		},
		{
			name:    "absolute nil estimate resets to 0",
			updates: []sessiondb.TokenUpdate{{Input: 5, EstimatedCostUSD: f64(1)}, {Input: 5, Absolute: true}},
			want:    want{in: 5, est: f64(0)},
		},
		{
			name: "absolute replaces actual only when given",
			updates: []sessiondb.TokenUpdate{
				{ActualCostUSD: f64(2)},
				{Absolute: true},
				{Absolute: true, ActualCostUSD: f64(0.5)},
			},
			want: want{est: f64(0), act: f64(0.5)},
		},
		{
			name: "cost status source and pricing version: latest non-nil wins",
			updates: []sessiondb.TokenUpdate{
				{CostStatus: str("estimated"), CostSource: str("table"), PricingVersion: str("v1")},
				{CostStatus: str("final"), PricingVersion: str("v2")},
				{},
			},
			want: want{est: f64(0), status: str("final"), src: str("table"), pv: str("v2")},
		},
		{
			name: "billing fields and model: first wins",
			updates: []sessiondb.TokenUpdate{
				{BillingProvider: str("openrouter"), BillingBaseURL: str("https://a"), Model: str("m-first")},
				{BillingProvider: str("anthropic"), BillingBaseURL: str("https://b"), BillingMode: str("subscription"), Model: str("m-second")},
			},
			want: want{est: f64(0), bp: str("openrouter"), bu: str("https://a"), bm: str("subscription"), model: str("m-first")},
		},
		{
			name:    "model set at creation is kept",
			model:   "m0",
			updates: []sessiondb.TokenUpdate{{Model: str("m1")}},
			want:    want{est: f64(0), model: str("m0")},
		},
		{
			name: "absolute keeps first-wins and latest-wins rules",
			updates: []sessiondb.TokenUpdate{
				{BillingMode: str("api"), CostStatus: str("a")},
				{Absolute: true, BillingMode: str("sub"), CostStatus: str("b")},
			},
			want: want{est: f64(0), bm: str("api"), status: str("b")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			e.createWith(sessiondb.NewSession{ID: "s1", Source: "cli", Model: tc.model})
			for i, u := range tc.updates {
				noErr(t, fmt.Sprintf("UpdateTokenCounts #%d", i), e.s.UpdateTokenCounts(e.ctx, "s1", u))
			}
			s := e.get("s1")
			w := tc.want
			if got := [5]int64{s.InputTokens, s.OutputTokens, s.CacheReadTokens, s.CacheWriteTokens, s.ReasoningTokens}; got != [5]int64{w.in, w.out, w.cr, w.cw, w.rs} {
				t.Errorf("tokens in/out/cache_read/cache_write/reasoning = %v, want %v", got, [5]int64{w.in, w.out, w.cr, w.cw, w.rs})
			}
			checkFloat(t, "estimated_cost_usd", s.EstimatedCostUSD, w.est)
			checkFloat(t, "actual_cost_usd", s.ActualCostUSD, w.act)
			for _, f := range []struct {
				name      string
				got, want *string
			}{
				{"cost_status", s.CostStatus, w.status}, {"cost_source", s.CostSource, w.src},
				{"pricing_version", s.PricingVersion, w.pv}, {"billing_provider", s.BillingProvider, w.bp},
				{"billing_base_url", s.BillingBaseURL, w.bu}, {"billing_mode", s.BillingMode, w.bm},
				{"model", s.Model, w.model},
			} {
				if !reflect.DeepEqual(f.got, f.want) {
					t.Errorf("%s = %s, want %s", f.name, deref(f.got), deref(f.want))
				}
			}
		})
	}
}

// checkFloat compares a nullable REAL allowing for binary rounding of sums.
func checkFloat(t *testing.T, name string, got, want *float64) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", name, derefF(got), derefF(want))
	default:
		if d := *got - *want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", name, *got, *want)
		}
	}
}

// testResolve covers ResolveSessionID (IMP-14).
func testResolve(t *testing.T, h Harness) {
	cases := []struct {
		name  string
		ids   []string // created in this order (so later = newer)
		query string
		want  string
		code  string
	}{
		{name: "exact", ids: []string{"20260315_092437_c9a6ff"}, query: "20260315_092437_c9a6ff", want: "20260315_092437_c9a6ff"},
		{name: "unique prefix", ids: []string{"20260315_092437_c9a6ff", "20260316_100000_aaaaaa"}, query: "20260315", want: "20260315_092437_c9a6ff"},
		{name: "exact wins over prefix", ids: []string{"abc", "abcdef", "abcxyz"}, query: "abc", want: "abc"},
		{name: "none is not_found", ids: []string{"abc"}, query: "xyz", code: sessiondb.ENOTFOUND},
		{name: "ambiguous is conflict", ids: []string{"abc1", "abc2"}, query: "abc", code: sessiondb.ECONFLICT},
		{name: "empty is invalid", ids: []string{"only"}, query: "", code: sessiondb.EINVALID},
		{name: "percent is literal", ids: []string{"a%1", "ab2"}, query: "a%", want: "a%1"},
		{name: "percent matches nothing else", ids: []string{"ab2"}, query: "a%", code: sessiondb.ENOTFOUND},
		{name: "underscore is literal", ids: []string{"x_1", "xy2"}, query: "x_", want: "x_1"},
		{name: "underscore matches nothing else", ids: []string{"xy2"}, query: "x_", code: sessiondb.ENOTFOUND},
		{name: "backslash is literal", ids: []string{`p\q1`, "pq2"}, query: `p\`, want: `p\q1`},
		{name: "newest of one match", ids: []string{"Abc1", "zzz"}, query: "Abc", want: "Abc1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			for _, id := range tc.ids {
				e.create(id, "cli")
			}
			got, err := e.s.ResolveSessionID(e.ctx, tc.query)
			if tc.code != "" {
				wantCode(t, fmt.Sprintf("ResolveSessionID(%q)", tc.query), err, tc.code)
				return
			}
			noErr(t, "ResolveSessionID", err)
			if got != tc.want {
				t.Errorf("ResolveSessionID(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

// testSearchSessions covers SearchSessions: newest first, source filter,
// limit and offset.
func testSearchSessions(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.create("a", "cli")
	e.create("b", "telegram")
	e.create("c", "cli")
	e.create("d", "cli")
	cases := []struct {
		name          string
		source        string
		limit, offset int
		want          []string
	}{
		{name: "all newest first", source: "", limit: 20, want: []string{"d", "c", "b", "a"}},
		{name: "one source", source: "cli", limit: 20, want: []string{"d", "c", "a"}},
		{name: "other source", source: "telegram", limit: 20, want: []string{"b"}},
		{name: "unknown source", source: "discord", limit: 20, want: []string{}},
		{name: "limit", source: "", limit: 2, want: []string{"d", "c"}},
		{name: "offset", source: "", limit: 2, offset: 1, want: []string{"c", "b"}},
		{name: "offset past end", source: "", limit: 2, offset: 10, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.s.SearchSessions(e.ctx, tc.source, tc.limit, tc.offset)
			noErr(t, "SearchSessions", err)
			if g := ids(got); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("got %v, want %v", g, tc.want)
			}
		})
	}
	t.Run("rows carry all columns", func(t *testing.T) {
		noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, "a", sessiondb.TokenUpdate{Input: 3}))
		e.setTitle("a", "Alpha")
		got, err := e.s.SearchSessions(e.ctx, "", 20, 0)
		noErr(t, "SearchSessions", err)
		for _, s := range got {
			if s.ID == "a" {
				want := e.get("a")
				if !reflect.DeepEqual(&s, want) {
					t.Errorf("SearchSessions row = %+v\nGetSession = %+v", s, *want)
				}
				return
			}
		}
		t.Error("session a missing")
	})
}

// hops names a chain of n hops: h0, h1, … hn.
func hops(n int) []string {
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("h%d", i)
	}
	return ids
}

// testCompressionTip covers CompressionTip.
func testCompressionTip(t *testing.T, h Harness) {
	cases := []struct {
		name  string
		build func(e *env)
		from  string
		want  string
	}{
		{name: "no children", build: func(e *env) { e.create("a", "cli") }, from: "a", want: "a"},
		{name: "unknown id", build: func(e *env) { e.create("a", "cli") }, from: "ghost", want: "ghost"},
		{name: "one hop", build: func(e *env) { e.compressionChain("a", "b") }, from: "a", want: "b"},
		{name: "chain", build: func(e *env) { e.compressionChain("a", "b", "c") }, from: "a", want: "c"},
		{name: "from the middle", build: func(e *env) { e.compressionChain("a", "b", "c") }, from: "b", want: "c"},
		{name: "non-compression end ignored", build: func(e *env) {
			e.create("a", "cli")
			e.end("a", "user_exit")
			e.child("b", "a")
		}, from: "a", want: "a"},
		{name: "open parent ignored", build: func(e *env) {
			e.create("a", "cli")
			e.child("b", "a")
		}, from: "a", want: "a"},
		// Current Hermes follows a continuation made before its parent's
		// end was written (a gateway race), where v6 required the child
		// to start at or after the end.
		{name: "child started before parent ended followed", build: func(e *env) {
			e.create("a", "cli")
			e.child("b", "a")
			e.end("a", "compression")
		}, from: "a", want: "b"},
		{name: "branch, delegate and tool children not followed", build: func(e *env) {
			e.create("a", "cli")
			e.end("a", "compression")
			e.createWith(sessiondb.NewSession{ID: "br", Source: "cli", ParentSessionID: "a", ModelConfig: map[string]any{"_branched_from": "a"}})
			e.createWith(sessiondb.NewSession{ID: "de", Source: "cli", ParentSessionID: "a", ModelConfig: map[string]any{"_delegate_from": "a"}})
			e.createWith(sessiondb.NewSession{ID: "to", Source: "tool", ParentSessionID: "a"})
		}, from: "a", want: "a"},
		{name: "a compressed continuation before a live one", build: func(e *env) {
			e.create("a", "cli")
			e.end("a", "compression")
			e.child("b", "a")
			e.end("b", "compression")
			e.child("c", "a")
		}, from: "a", want: "b"},
		{name: "a live continuation before a closed one", build: func(e *env) {
			e.create("a", "cli")
			e.end("a", "compression")
			e.child("live", "a")
			e.child("stale", "a")
			e.end("stale", "ws_orphan_reap")
		}, from: "a", want: "live"},
		{name: "child started at the end counts", build: func(e *env) {
			e.create("a", "cli")
			noErr(e.t, "EndSession", e.s.EndSession(e.ctx, "a", "compression"))
			e.child("b", "a") // same clock reading as ended_at
		}, from: "a", want: "b"},
		{name: "latest started child first", build: func(e *env) {
			e.compressionChain("a", "b1")
			e.child("b2", "a")
			e.child("b0", "a")
		}, from: "a", want: "b0"},
		{name: "chain stops at a non-compression end", build: func(e *env) {
			e.compressionChain("a", "b")
			e.end("b", "user_exit")
			e.child("c", "b")
		}, from: "a", want: "b"},
		{name: "100-hop cap", build: func(e *env) { e.compressionChain(hops(105)...) }, from: "h0", want: "h100"},
		{name: "99 hops reach the tip", build: func(e *env) { e.compressionChain(hops(99)...) }, from: "h0", want: "h99"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			tc.build(e)
			got, err := e.s.CompressionTip(e.ctx, tc.from)
			noErr(t, "CompressionTip", err)
			if got != tc.want {
				t.Errorf("CompressionTip(%q) = %q, want %q", tc.from, got, tc.want)
			}
		})
	}
}
