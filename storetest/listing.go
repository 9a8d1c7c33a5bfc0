package storetest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testListSessions: ListSessions, the keyset listing (filters, the four
// orders both ways, cursors that survive appends, refusals).
func testListSessions(t *testing.T, h Harness) {
	e := newEnv(t, h)
	// a..e one second apart; b and d are telegram; c is a child of a.
	e.createWith(sessiondb.NewSession{ID: "a-1", Source: "cli", Model: "gpt", UserID: "u1"})
	e.createWith(sessiondb.NewSession{ID: "b-2", Source: "telegram", Model: "claude", UserID: "u2"})
	e.createWith(sessiondb.NewSession{ID: "c-3", Source: "cli", Model: "claude", ParentSessionID: "a-1"})
	e.createWith(sessiondb.NewSession{ID: "d-4", Source: "telegram", Model: "gpt"})
	e.createWith(sessiondb.NewSession{ID: "e-5", Source: "cli", Model: "gpt"})
	e.setTitle("b-2", "Fix the Docker build")
	e.setTitle("d-4", "docker compose")
	noErr(t, "tokens", e.s.UpdateTokenCounts(e.ctx, "a-1", sessiondb.TokenUpdate{Input: 10, EstimatedCostUSD: f64(0.5)}))
	noErr(t, "tokens", e.s.UpdateTokenCounts(e.ctx, "d-4", sessiondb.TokenUpdate{Input: 100, Output: 50, EstimatedCostUSD: f64(0.25), ActualCostUSD: f64(3)}))
	noErr(t, "tokens", e.s.UpdateTokenCounts(e.ctx, "e-5", sessiondb.TokenUpdate{Reasoning: 40}))
	e.msg("b-2", "user", "newest activity")
	startOf := func(id string) float64 { return e.get(id).StartedAt }

	cases := []struct {
		name string
		q    sessiondb.SessionQuery
		want []string
	}{
		{"default: top-level, newest first", sessiondb.SessionQuery{}, []string{"e-5", "d-4", "b-2", "a-1"}},
		{"ascending", sessiondb.SessionQuery{Ascending: true}, []string{"a-1", "b-2", "d-4", "e-5"}},
		{"with children", sessiondb.SessionQuery{IncludeChildren: true}, []string{"e-5", "d-4", "c-3", "b-2", "a-1"}},
		{"children of a-1", sessiondb.SessionQuery{ParentID: "a-1"}, []string{"c-3"}},
		{"source", sessiondb.SessionQuery{Source: "telegram"}, []string{"d-4", "b-2"}},
		{"model", sessiondb.SessionQuery{Model: "gpt"}, []string{"e-5", "d-4", "a-1"}},
		{"user", sessiondb.SessionQuery{UserID: "u2"}, []string{"b-2"}},
		{"time range", sessiondb.SessionQuery{StartedFrom: startOf("b-2"), StartedBefore: startOf("e-5"), IncludeChildren: true}, []string{"d-4", "c-3", "b-2"}},
		{"title text, any case", sessiondb.SessionQuery{Text: "DOCKER"}, []string{"d-4", "b-2"}},
		{"id text", sessiondb.SessionQuery{Text: "-5"}, []string{"e-5"}},
		{"nothing matches", sessiondb.SessionQuery{Text: "kubernetes"}, []string{}},
		{"by cost: actual, else estimated", sessiondb.SessionQuery{Sort: sessiondb.SortCost}, []string{"d-4", "a-1", "e-5", "b-2"}},
		{"by cost ascending", sessiondb.SessionQuery{Sort: sessiondb.SortCost, Ascending: true}, []string{"b-2", "e-5", "a-1", "d-4"}},
		// Tokens are input + output (sessiondb.Tokens, the figure every
		// face shows): e-5's 40 reasoning tokens are not among them, so it
		// ties with b-2 at 0 and the tie goes by id.
		{"by tokens: input + output", sessiondb.SessionQuery{Sort: sessiondb.SortTokens}, []string{"d-4", "a-1", "e-5", "b-2"}},
		{"by last activity", sessiondb.SessionQuery{Sort: sessiondb.SortLastActive}, []string{"b-2", "e-5", "d-4", "a-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := walkSessions(t, e, tc.q, 0)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("one page: %v, want %v", got, tc.want)
			}
			// The same rows one at a time, by cursor.
			if got := walkSessions(t, e, tc.q, 1); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("page by page: %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("page rows carry preview and last activity", func(t *testing.T) {
		p, err := e.s.ListSessions(e.ctx, sessiondb.SessionQuery{Source: "telegram", Ascending: true, Limit: 1})
		noErr(t, "ListSessions", err)
		if len(p.Sessions) != 1 || p.Sessions[0].Preview != "newest activity" || p.Sessions[0].LastActive <= p.Sessions[0].StartedAt || p.Next == "" {
			t.Fatalf("page %+v", p)
		}
	})

	t.Run("ties are broken by id", func(t *testing.T) {
		// b-2, c-3 and e-5 cost nothing, and tie at 0 tokens (input +
		// output) too.
		got := walkSessions(t, e, sessiondb.SessionQuery{Sort: sessiondb.SortTokens, IncludeChildren: true}, 1)
		want := []string{"d-4", "a-1", "e-5", "c-3", "b-2"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v, want %v", got, want)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		first, err := e.s.ListSessions(e.ctx, sessiondb.SessionQuery{Limit: 1})
		noErr(t, "ListSessions", err)
		for name, q := range map[string]sessiondb.SessionQuery{
			"unknown sort":           {Sort: "size"},
			"negative limit":         {Limit: -1},
			"limit past the maximum": {Limit: sessiondb.MaxSessionPage + 1},
			"garbage cursor":         {After: "not-a-cursor"},
			"cursor of another sort": {Sort: sessiondb.SortCost, Limit: 1, After: first.Next},
			"cursor of a filter":     {Source: "cli", Limit: 1, After: first.Next},
		} {
			_, err := e.s.ListSessions(e.ctx, q)
			wantCode(t, name, err, sessiondb.EINVALID)
		}
	})
}

// testListSessionsUnderWrites: walking a listing page by page while
// sessions are created, messages appended and costs change between the
// requests sees every session that existed at the start exactly once (by
// start time; by cost the rows whose cost did not change).
func testListSessionsUnderWrites(t *testing.T, h Harness) {
	for _, sort := range []sessiondb.SessionSort{sessiondb.SortStarted, sessiondb.SortTokens} {
		t.Run(string(sort), func(t *testing.T) {
			e := newEnv(t, h)
			var want []string
			for i := range 17 {
				id := fmt.Sprintf("s%02d", i)
				e.create(id, "cli")
				noErr(t, "tokens", e.s.UpdateTokenCounts(e.ctx, id, sessiondb.TokenUpdate{Input: int64(i % 5)}))
				want = append(want, id)
			}
			seen := map[string]int{}
			q := sessiondb.SessionQuery{Sort: sort, Limit: 3}
			for round := 0; ; round++ {
				p, err := e.s.ListSessions(e.ctx, q)
				noErr(t, "ListSessions", err)
				for _, r := range p.Sessions {
					seen[r.ID]++
				}
				e.create(fmt.Sprintf("new%02d", round), "cli")
				e.msg("s03", "user", "more")
				if p.Next == "" {
					break
				}
				q.After = p.Next
			}
			for _, id := range want {
				if seen[id] != 1 {
					t.Errorf("%s seen %d times", id, seen[id])
				}
			}
		})
	}
}

// walkSessions lists q page by page (limit 0: one page of the default
// size) and returns the ids in order.
func walkSessions(t *testing.T, e *env, q sessiondb.SessionQuery, limit int) []string {
	t.Helper()
	q.Limit = limit
	out := []string{}
	for range 100 {
		p, err := e.s.ListSessions(e.ctx, q)
		noErr(t, "ListSessions", err)
		if limit > 0 && len(p.Sessions) > limit {
			t.Fatalf("page of %d rows with limit %d", len(p.Sessions), limit)
		}
		out = append(out, richIDs(p.Sessions)...)
		if p.Next == "" {
			return out
		}
		q.After = p.Next
	}
	t.Fatalf("listing did not end after 100 pages: %v", out)
	return nil
}

// testLineage: sessiondb.Lineage over the store (ancestors down to the
// session, every descendant under it, siblings of ancestors left out,
// orphans).
func testLineage(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.create("root", "cli")
	e.child("cont", "root")
	e.child("fork", "root")
	e.child("grand", "cont")
	e.child("grand2", "cont")
	e.child("great", "grand")
	e.create("alone", "cli")
	var shape func(n *sessiondb.LineageNode) string
	shape = func(n *sessiondb.LineageNode) string {
		s := n.ID
		if n.Selected {
			s += "*"
		}
		if len(n.Children) > 0 {
			s += "("
			for i, k := range n.Children {
				if i > 0 {
					s += " "
				}
				s += shape(k)
			}
			s += ")"
		}
		return s
	}
	for id, want := range map[string]string{
		"root":  "root*(cont(grand(great) grand2) fork)",
		"cont":  "root(cont*(grand(great) grand2))",
		"great": "root(cont(grand(great*)))",
		"alone": "alone*",
	} {
		n, err := sessiondb.Lineage(e.ctx, e.s, id)
		noErr(t, "Lineage", err)
		if got := shape(n); got != want {
			t.Errorf("Lineage(%s) = %s, want %s", id, got, want)
		}
	}
	_, err := sessiondb.Lineage(e.ctx, e.s, "nope")
	wantCode(t, "Lineage of an unknown session", err, sessiondb.ENOTFOUND)
	if _, err := e.s.DeleteSession(e.ctx, "cont"); err != nil {
		t.Fatal(err)
	}
	n, err := sessiondb.Lineage(e.ctx, e.s, "great")
	noErr(t, "Lineage", err)
	if got := shape(n); got != "grand(great*)" {
		t.Errorf("orphaned lineage = %s, want grand(great*)", got)
	}
}

// testListingKinds: both listings show the sessions Hermes' listing shows
// (roots and /branch children, by marker or by a parent ended "branched"
// before they started) and never a delegate subagent, orphaned or not, a
// compression continuation or an untagged child; MinMessages keeps the
// sessions with at least that many messages.
func testListingKinds(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.delegateFamily() // p, q roots; b a marked branch; d1, d2, x, qd delegates; u, u2, n untagged
	e.create("old", "cli")
	e.end("old", "branched")
	e.child("lb", "old") // a branch from before the marker
	e.compressionChain("r", "rc")
	e.msg("p", "user", "a second message of p")
	kept := []string{"rc", "lb", "old", "b", "q", "p"} // newest first; r shows its tip rc
	rich := func(f sessiondb.RichFilter) []string {
		rows, err := e.s.ListSessionsRich(e.ctx, f)
		noErr(t, "ListSessionsRich", err)
		ids := []string{}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := rich(sessiondb.RichFilter{Limit: 50}); !reflect.DeepEqual(got, kept) {
		t.Errorf("ListSessionsRich: %v, want %v", got, kept)
	}
	if got := walkSessions(t, e, sessiondb.SessionQuery{}, 0); !reflect.DeepEqual(got, kept) {
		t.Errorf("ListSessions: %v, want %v", got, kept)
	}
	if got := walkSessions(t, e, sessiondb.SessionQuery{}, 1); !reflect.DeepEqual(got, kept) {
		t.Errorf("ListSessions page by page: %v, want %v", got, kept)
	}
	if got, want := walkSessions(t, e, sessiondb.SessionQuery{Source: "cli", Sort: sessiondb.SortLastActive}, 0), []string{"p", "rc", "lb", "old", "b", "q"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessions by last activity: %v, want %v", got, want)
	}
	if got, want := rich(sessiondb.RichFilter{MinMessages: 2}), []string{"p"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessionsRich, at least 2 messages: %v, want %v", got, want)
	}
	if got, want := walkSessions(t, e, sessiondb.SessionQuery{MinMessages: 1}, 0), []string{"b", "q", "p"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessions, at least 1 message: %v, want %v", got, want)
	}
	_, err := e.s.ListSessionsRich(e.ctx, sessiondb.RichFilter{MinMessages: -1})
	wantCode(t, "negative MinMessages", err, sessiondb.EINVALID)
}

// testListingEscapedMarkers: a marker whose key is written with JSON
// escapes is the marker, as json_extract reads it: the escaped branch is
// listed beside the roots, the escaped orphaned delegate is not.
func testListingEscapedMarkers(t *testing.T, h Harness) {
	e := newEnv(t, h)
	for _, rec := range []map[string]any{
		{"id": "pe", "source": "cli", "started_at": 1000.0},
		{"id": "be", "source": "cli", "started_at": 1001.0, "parent_session_id": "pe", "model_config": `{"\u005fbranched_from": "pe"}`},
		{"id": "xe", "source": "cli", "started_at": 1002.0, "model_config": `{"_delegate\u005ffrom": "gone"}`},
		{"id": "ue", "source": "cli", "started_at": 1003.0, "parent_session_id": "pe", "model_config": `{"path": "C:\\work"}`},
	} {
		r, err := e.s.ImportSession(e.ctx, rec, sessiondb.ImportOptions{})
		if err != nil || !r.Imported {
			t.Fatalf("import %v: %+v, %v", rec["id"], r, err)
		}
	}
	want := []string{"be", "pe"} // newest first; xe a delegate, ue an untagged child
	if got := walkSessions(t, e, sessiondb.SessionQuery{}, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessions: %v, want %v", got, want)
	}
	rows, err := e.s.ListSessionsRich(e.ctx, sessiondb.RichFilter{Limit: 50})
	noErr(t, "ListSessionsRich", err)
	var got []string
	for _, r := range rows {
		got = append(got, r.ID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessionsRich: %v, want %v", got, want)
	}
}

// testListingByChainActivity: by last activity a compression chain takes
// the place of its newest activity anywhere on it, as Hermes'
// order_by_last_active does (its effective_last_active: the most recent
// of every continuation's newest message, or start): a message on the
// live tip, a continuation started, and a parent ended by compression
// after its child had messages each move the chain to where its newest
// activity is, with or without children listed.
func testListingByChainActivity(t *testing.T, h Harness) {
	e := newEnv(t, h)
	byActivity := sessiondb.SessionQuery{Sort: sessiondb.SortLastActive}
	withChildren := sessiondb.SessionQuery{Sort: sessiondb.SortLastActive, IncludeChildren: true}
	check := func(step string, q sessiondb.SessionQuery, want []string) {
		t.Helper()
		if got := walkSessions(t, e, q, 0); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", step, got, want)
		}
		if got := walkSessions(t, e, q, 1); !reflect.DeepEqual(got, want) {
			t.Errorf("%s, page by page: %v, want %v", step, got, want)
		}
	}
	// old → live, a chain whose root's own activity is the oldest; mid a
	// plain session in between.
	e.compressionChain("old", "live")
	e.msg("old", "user", "the chain's first words")
	e.create("mid", "cli")
	e.msg("mid", "user", "a session in between")
	check("before the tip speaks", byActivity, []string{"mid", "live"})
	e.msg("live", "user", "the tip speaks last")
	check("a message on the tip", byActivity, []string{"live", "mid"})
	// With children each row is its own session, the chain's root still
	// in its chain's place (the tip ties with it; Hermes breaks the tie
	// by start).
	if got := walkSessions(t, e, withChildren, 1); len(got) != 3 || got[2] != "mid" {
		t.Errorf("with children: %v, want old and live before mid", got)
	}
	e.msg("mid", "user", "mid speaks again")
	check("mid speaks again", byActivity, []string{"mid", "live"})

	// A continuation started without a message yet: its start is the
	// chain's newest activity.
	e.create("quiet", "cli")
	e.msg("quiet", "user", "before the new continuation")
	e.end("live", "compression")
	e.child("next", "live")
	check("a continuation started", byActivity, []string{"next", "quiet", "mid"})

	// A child with the newest message joins its parent's chain when the
	// parent ends by compression after it.
	e.create("late", "cli")
	e.child("latec", "late")
	e.create("after", "cli")
	e.msg("latec", "user", "the child speaks before its parent ends")
	check("before the parent ends", byActivity, []string{"after", "late", "next", "quiet", "mid"})
	e.end("late", "compression")
	check("the parent ended by compression", byActivity, []string{"latec", "after", "next", "quiet", "mid"})
}
