package storetest

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testRich covers section 5.2, ListSessionsRich.
func testRich(t *testing.T, h Harness) {
	t.Run("Preview", testPreview(h))
	t.Run("LastActive", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("empty", "cli")
		emptyStart := e.get("empty").StartedAt
		e.create("busy", "cli")
		e.msg("busy", "user", "one")
		latest := e.now()
		e.msg("busy", "assistant", "two")
		// A later insert with a clock stepped back does not lower last_active.
		e.clock.Advance(-time.Hour)
		e.msg("busy", "user", "three")
		rows := listRich(t, e, sessiondb.RichFilter{})
		got := map[string]float64{}
		for _, r := range rows {
			got[r.ID] = r.LastActive
		}
		if got["empty"] != emptyStart {
			t.Errorf("last_active without messages = %v, want started_at %v", got["empty"], emptyStart)
		}
		if got["busy"] != latest {
			t.Errorf("last_active = %v, want newest message timestamp %v", got["busy"], latest)
		}
	})
	t.Run("Filter", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.create("b", "telegram")
		e.child("a1", "a") // a child, source cli
		e.create("c", "cron")
		e.create("d", "cli")
		cases := []struct {
			name string
			f    sessiondb.RichFilter
			want []string
		}{
			{name: "top-level newest first", f: sessiondb.RichFilter{}, want: []string{"d", "c", "b", "a"}},
			{name: "include children", f: sessiondb.RichFilter{IncludeChildren: true}, want: []string{"d", "c", "a1", "b", "a"}},
			{name: "source", f: sessiondb.RichFilter{Source: "cli"}, want: []string{"d", "a"}},
			{name: "source with children", f: sessiondb.RichFilter{Source: "cli", IncludeChildren: true}, want: []string{"d", "a1", "a"}},
			{name: "exclude sources", f: sessiondb.RichFilter{ExcludeSources: []string{"cron", "telegram"}}, want: []string{"d", "a"}},
			{name: "empty exclude list excludes nothing", f: sessiondb.RichFilter{ExcludeSources: []string{}}, want: []string{"d", "c", "b", "a"}},
			{name: "limit", f: sessiondb.RichFilter{Limit: 2}, want: []string{"d", "c"}},
			{name: "offset", f: sessiondb.RichFilter{Limit: 2, Offset: 1}, want: []string{"c", "b"}},
			{name: "offset past end", f: sessiondb.RichFilter{Offset: 9}, want: []string{}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got := richIDs(listRich(t, e, tc.f))
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	})
	t.Run("DefaultLimit", func(t *testing.T) {
		e := newEnv(t, h)
		for i := 0; i < 22; i++ {
			e.create(fmt.Sprintf("s%02d", i), "cli")
		}
		rows := listRich(t, e, sessiondb.RichFilter{})
		if len(rows) != 20 || rows[0].ID != "s21" || rows[19].ID != "s02" {
			t.Errorf("zero filter listed %d rows %v, want the 20 newest s21…s02", len(rows), richIDs(rows))
		}
	})
	t.Run("Projection", testProjection(h))
}

func listRich(t *testing.T, e *env, f sessiondb.RichFilter) []sessiondb.RichSession {
	t.Helper()
	rows, err := e.s.ListSessionsRich(e.ctx, f)
	noErr(t, "ListSessionsRich", err)
	return rows
}

func richIDs(rows []sessiondb.RichSession) []string {
	return pluck(rows, func(r sessiondb.RichSession) string { return r.ID })
}

func testPreview(h Harness) func(t *testing.T) {
	type m struct {
		role    string
		content *string
	}
	user := func(s string) m { return m{"user", &s} }
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name     string
		msgs     []m
		stepBack bool // step the clock back an hour before each message after the first
		want     string
	}{
		{name: "short", msgs: []m{user("Hello world")}, want: "Hello world"},
		{name: "exactly 60", msgs: []m{user(x(60))}, want: x(60)},
		{name: "61 is cut", msgs: []m{user(x(61))}, want: x(60) + "..."},
		{name: "63 is cut", msgs: []m{user(x(63))}, want: x(60) + "..."},
		{name: "long is cut", msgs: []m{user(x(500))}, want: x(60) + "..."},
		{name: "two-byte code points", msgs: []m{user(strings.Repeat("é", 100))}, want: strings.Repeat("é", 60) + "..."},
		{name: "four-byte code points", msgs: []m{user(strings.Repeat("😀", 61))}, want: strings.Repeat("😀", 60) + "..."},
		{name: "CJK exactly 60", msgs: []m{user(strings.Repeat("项", 60))}, want: strings.Repeat("项", 60)},
		{name: "LF and CR become spaces", msgs: []m{user("line1\nline2\rline3")}, want: "line1 line2 line3"},
		{name: "CRLF is two spaces", msgs: []m{user("a\r\nb")}, want: "a  b"},
		{name: "trimmed", msgs: []m{user("  \n hi there \n ")}, want: "hi there"},
		{name: "trimmed after the 63 cut", msgs: []m{user("  " + x(61))}, want: x(60) + "..."},
		{name: "spaces after 60 are cut then trimmed", msgs: []m{user(x(60) + "   tail")}, want: x(60)},
		{name: "first user message", msgs: []m{{"assistant", str("hi from assistant")}, user("first"), user("second")}, want: "first"},
		{name: "NULL content skipped", msgs: []m{{"user", nil}, user("with text")}, want: "with text"},
		{name: "no user message", msgs: []m{{"assistant", str("only me")}, {"tool", str("tool out")}}, want: ""},
		{name: "no messages", want: ""},
		{name: "insertion order when the clock steps back", msgs: []m{user("inserted first"), user("inserted second")}, stepBack: true, want: "inserted first"},
	}
	return func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("s1", "cli")
				for i, mm := range tc.msgs {
					if tc.stepBack && i > 0 {
						e.clock.Advance(-time.Hour)
					}
					e.append(sessiondb.NewMessage{SessionID: "s1", Role: mm.role, Content: mm.content})
				}
				rows := listRich(t, e, sessiondb.RichFilter{})
				if len(rows) != 1 {
					t.Fatalf("listed %d rows, want 1", len(rows))
				}
				if rows[0].Preview != tc.want {
					t.Errorf("preview = %q, want %q", rows[0].Preview, tc.want)
				}
			})
		}
	}
}

func testProjection(h Harness) func(t *testing.T) {
	// build: root a (cli, started first) ended by compression; x (cli) in
	// between; b continues a with its own title, model, prompt, messages
	// and an end; lone ended by compression without a continuation.
	build := func(t *testing.T) (*env, map[string]*sessiondb.Session) {
		e := newEnv(t, h)
		e.createWith(sessiondb.NewSession{ID: "a", Source: "cli", Model: "m-a", SystemPrompt: "p-a"})
		e.msg("a", "user", "root question")
		e.create("x", "cli")
		e.end("a", "compression")
		e.createWith(sessiondb.NewSession{ID: "b", Source: "cli", Model: "m-b", SystemPrompt: "p-b", ParentSessionID: "a"})
		e.setTitle("b", "tip title")
		e.msg("b", "user", "tip question")
		e.append(sessiondb.NewMessage{SessionID: "b", Role: "assistant", Content: str(""), ToolCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}}})
		e.end("b", "user_exit")
		e.create("lone", "cli")
		e.end("lone", "compression")
		got := map[string]*sessiondb.Session{}
		for _, id := range []string{"a", "b", "x", "lone"} {
			got[id] = e.get(id)
		}
		return e, got
	}
	return func(t *testing.T) {
		t.Run("tip projected onto root", func(t *testing.T) {
			e, s := build(t)
			rows := listRich(t, e, sessiondb.RichFilter{})
			if got, want := richIDs(rows), []string{"lone", "x", "b"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("listed %v, want %v (the projected row keeps the root's place)", got, want)
			}
			r, tip, root := rows[2], s["b"], s["a"]
			if r.LineageRootID != "a" {
				t.Errorf("_lineage_root_id = %q, want a", r.LineageRootID)
			}
			if r.StartedAt != root.StartedAt {
				t.Errorf("started_at = %v, want the root's %v", r.StartedAt, root.StartedAt)
			}
			if !reflect.DeepEqual(r.EndedAt, tip.EndedAt) || deref(r.EndReason) != "user_exit" {
				t.Errorf("ended_at/end_reason = %v/%s, want the tip's %v/user_exit", derefF(r.EndedAt), deref(r.EndReason), derefF(tip.EndedAt))
			}
			if r.MessageCount != 2 || r.ToolCallCount != 2 {
				t.Errorf("message_count/tool_call_count = %d/%d, want the tip's 2/2", r.MessageCount, r.ToolCallCount)
			}
			if deref(r.Title) != "tip title" || deref(r.Model) != "m-b" || deref(r.SystemPrompt) != "p-b" {
				t.Errorf("title/model/system_prompt = %s/%s/%s, want the tip's", deref(r.Title), deref(r.Model), deref(r.SystemPrompt))
			}
			if r.Preview != "tip question" {
				t.Errorf("preview = %q, want the tip's", r.Preview)
			}
			ms := e.messages("b")
			if r.LastActive != ms[len(ms)-1].Timestamp {
				t.Errorf("last_active = %v, want the tip's %v", r.LastActive, ms[len(ms)-1].Timestamp)
			}
			if lone := rows[0]; lone.LineageRootID != "" || deref(lone.EndReason) != "compression" {
				t.Errorf("compression end without continuation should list raw: %+v", lone)
			}
			if x := rows[1]; x.LineageRootID != "" {
				t.Errorf("plain session gained _lineage_root_id %q", x.LineageRootID)
			}
		})
		t.Run("no projection lists raw rows", func(t *testing.T) {
			e, s := build(t)
			rows := listRich(t, e, sessiondb.RichFilter{NoProjection: true})
			if got, want := richIDs(rows), []string{"lone", "x", "a"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("listed %v, want %v", got, want)
			}
			r := rows[2]
			if r.LineageRootID != "" || r.Preview != "root question" || !reflect.DeepEqual(r.Session, *s["a"]) {
				t.Errorf("raw root row = %+v, want %+v with preview %q", r, *s["a"], "root question")
			}
		})
		t.Run("include children lists raw rows", func(t *testing.T) {
			e, _ := build(t)
			rows := listRich(t, e, sessiondb.RichFilter{IncludeChildren: true})
			if got, want := richIDs(rows), []string{"lone", "b", "x", "a"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("listed %v, want %v", got, want)
			}
			for _, r := range rows {
				if r.LineageRootID != "" {
					t.Errorf("row %s gained _lineage_root_id %q with IncludeChildren", r.ID, r.LineageRootID)
				}
			}
		})
		t.Run("chain totals", func(t *testing.T) {
			// r → m → tip, each with its own tokens, cost and messages; m
			// billed. The row shows the tip, and Chain sums all three.
			e := newEnv(t, h)
			e.compressionChain("r", "m", "tip")
			e.create("plain", "cli")
			for i, id := range []string{"r", "m", "tip"} {
				u := sessiondb.TokenUpdate{Input: int64(100 * (i + 1)), Output: int64(10 * (i + 1)), CacheRead: 1000, EstimatedCostUSD: f64(0.01 * float64(i+1))}
				if id == "m" {
					u.ActualCostUSD = f64(0.5)
				}
				noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, id, u))
				for j := 0; j <= i; j++ {
					e.msg(id, "user", "words")
				}
			}
			want := sessiondb.UsageRow{Key: "r", Sessions: 3, Messages: 6, InputTokens: 600, OutputTokens: 60, CacheReadTokens: 3000,
				EstimatedCostUSD: 0.06, ActualCostUSD: 0.5, CostUSD: 0.54, CostEstimatedUSD: 0.04}
			page, err := e.s.ListSessions(e.ctx, sessiondb.SessionQuery{})
			noErr(t, "ListSessions", err)
			for what, rows := range map[string][]sessiondb.RichSession{"ListSessionsRich": listRich(t, e, sessiondb.RichFilter{}), "ListSessions": page.Sessions} {
				if len(rows) != 2 || rows[1].ID != "tip" || rows[1].Chain == nil || rows[0].Chain != nil {
					t.Fatalf("%s: rows %+v, want plain without Chain and the tip with one", what, rows)
				}
				got := *rows[1].Chain
				if math.Abs(got.CostUSD-want.CostUSD) > 1e-9 || math.Abs(got.CostEstimatedUSD-want.CostEstimatedUSD) > 1e-9 ||
					math.Abs(got.EstimatedCostUSD-want.EstimatedCostUSD) > 1e-9 {
					t.Errorf("%s: chain costs %+v, want %+v", what, got, want)
				}
				got.CostUSD, got.CostEstimatedUSD, got.EstimatedCostUSD = want.CostUSD, want.CostEstimatedUSD, want.EstimatedCostUSD
				if got != want {
					t.Errorf("%s: Chain = %+v\nwant %+v", what, got, want)
				}
			}
			for _, r := range listRich(t, e, sessiondb.RichFilter{IncludeChildren: true}) {
				if r.Chain != nil {
					t.Errorf("row %s has Chain with IncludeChildren", r.ID)
				}
			}
			// plain costs and holds more than any one session of the chain
			// but less than the chain: sorted by cost or by tokens, the
			// chain's row ranks by the totals it shows.
			noErr(t, "UpdateTokenCounts", e.s.UpdateTokenCounts(e.ctx, "plain", sessiondb.TokenUpdate{Input: 500, EstimatedCostUSD: f64(0.3)}))
			for _, sort := range []sessiondb.SessionSort{sessiondb.SortCost, sessiondb.SortTokens} {
				if got := walkSessions(t, e, sessiondb.SessionQuery{Sort: sort}, 1); !reflect.DeepEqual(got, []string{"tip", "plain"}) {
					t.Errorf("by %s: %v, want the chain (its totals) before plain", sort, got)
				}
			}
		})
		t.Run("projection follows the whole chain", func(t *testing.T) {
			e := newEnv(t, h)
			e.compressionChain("r", "m", "tip")
			e.msg("tip", "user", "latest words")
			rows := listRich(t, e, sessiondb.RichFilter{})
			if len(rows) != 1 || rows[0].ID != "tip" || rows[0].LineageRootID != "r" || rows[0].Preview != "latest words" {
				t.Errorf("rows = %+v, want one row for tip with _lineage_root_id r", rows)
			}
		})
	}
}
