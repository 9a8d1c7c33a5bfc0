package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// tracedQuery is one query a read ran, with its arguments.
type tracedQuery struct {
	q    string
	args []any
}

// traceReads runs read with the store's reader queries recorded.
func traceReads(t *testing.T, s *Store, read func() error) []tracedQuery {
	t.Helper()
	var mu sync.Mutex
	var out []tracedQuery
	s.rp.trace = func(q string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, tracedQuery{q, append([]any(nil), args...)})
	}
	defer func() { s.rp.trace = nil }()
	if err := read(); err != nil {
		t.Fatal(err)
	}
	return out
}

// queryPlan is EXPLAIN QUERY PLAN of q, one detail line each.
func queryPlan(t *testing.T, s *Store, q tracedQuery) []string {
	t.Helper()
	out, err := sqlitedb.Append(context.Background(), s.db, "EXPLAIN QUERY PLAN "+q.q, q.args, nil, func(r sqlitedb.Row) (string, error) {
		var id, parent, notused int
		var detail string
		err := r.Scan(&id, &parent, &notused, &detail)
		return detail, err
	})
	if err != nil {
		t.Fatalf("explain %s: %v", q.q, err)
	}
	return out
}

// TestReadPlansUseIndexes checks the plans of the reads whose cost must
// not grow with the store (docs/benchmarks.md, the growth benchmark):
// pages of a long session, listings' pages, previews and search context
// seek the read indexes instead of reading a whole session or every row
// before a page.
func TestReadPlansUseIndexes(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "state.db"), Options{})
	mustCreate(t, s, "long", "cli")
	var mid int64
	for i := range 60 {
		id := mustAppend(t, s, sessiondb.NewMessage{SessionID: "long", Role: []string{"user", "assistant"}[i%2], Content: str(fmt.Sprintf("message %d about docker", i))})
		if i == 30 {
			mid = id
		}
	}
	after := sessiondb.SessionQuery{}
	after.After = after.NextCursor(5, "x")
	srcAfter := sessiondb.SessionQuery{Source: "cli"}
	srcAfter.After = srcAfter.NextCursor(5, "x")
	activeAfter := sessiondb.SessionQuery{Sort: sessiondb.SortLastActive}
	activeAfter.After = activeAfter.NextCursor(5, "x")
	activeSrcAfter := sessiondb.SessionQuery{Sort: sessiondb.SortLastActive, Source: "cli"}
	activeSrcAfter.After = activeSrcAfter.NextCursor(5, "x")
	type rule struct {
		forbid  []string // no plan line may contain these
		require string   // some plan line must contain this
	}
	// A listing's /branch arms read the partial indexes that hold the
	// branches alone (and the parents ended "branched"): scanning them
	// reads no other session.
	branchArms := map[string]bool{
		"SCAN s USING INDEX sessiondb_sessions_branch_marked":      true,
		"SCAN bp USING COVERING INDEX sessiondb_sessions_branched": true,
	}
	seekOnly := rule{forbid: []string{"TEMP B-TREE", "SCAN", "LIST SUBQUERY"}}
	listing := rule{forbid: []string{"SCAN m", "SCAN messages", "SCAN s", "SCAN sessions", "SCAN bp"}}
	type planCase struct {
		name string
		read func() error
		rule rule
	}
	cases := []planCase{
		{"last page", func() error { _, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10}); return err }, seekOnly},
		{"first page", func() error {
			_, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10, FromStart: true})
			return err
		}, seekOnly},
		{"page before", func() error {
			_, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10, BeforeID: mid})
			return err
		}, seekOnly},
		{"page after", func() error {
			_, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10, AfterID: mid})
			return err
		}, seekOnly},
		{"offset listing", func() error { _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Offset: 10}); return err },
			rule{forbid: listing.forbid, require: "COVERING INDEX sessiondb_sessions_roots"}},
		{"offset listing of a source", func() error { _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Source: "cli"}); return err },
			rule{forbid: listing.forbid, require: "COVERING INDEX sessiondb_sessions_source_roots"}},
		{"keyset listing", func() error { _, err := s.ListSessions(ctx, sessiondb.SessionQuery{}); return err },
			rule{forbid: listing.forbid, require: "sessiondb_sessions_roots"}},
		{"keyset listing, a later page", func() error { _, err := s.ListSessions(ctx, after); return err },
			rule{forbid: listing.forbid, require: "(started_at,id)<(?,?)"}},
		{"keyset listing of a source, a later page", func() error { _, err := s.ListSessions(ctx, srcAfter); return err },
			rule{forbid: listing.forbid, require: "source=? AND parent_session_id=? AND (started_at,id)<(?,?)"}},
		{"last-activity listing", func() error {
			_, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive})
			return err
		}, rule{forbid: append(listing.forbid, "SCAN a"), require: "SEARCH a USING COVERING INDEX sessiondb_last_active_roots (parent_session_id=?)"}},
		{"last-activity listing, a later page", func() error { _, err := s.ListSessions(ctx, activeAfter); return err },
			rule{forbid: append(listing.forbid, "SCAN a"), require: "SEARCH a USING COVERING INDEX sessiondb_last_active_roots (parent_session_id=? AND (last_active,session_id)<(?,?))"}},
		{"last-activity listing of a source, a later page", func() error { _, err := s.ListSessions(ctx, activeSrcAfter); return err },
			rule{forbid: append(listing.forbid, "SCAN a"), require: "SEARCH a USING COVERING INDEX sessiondb_last_active_source_roots (source=? AND parent_session_id=? AND (last_active,session_id)<(?,?))"}},
		{"whole session", func() error { _, err := s.GetMessages(ctx, "long"); return err }, seekOnly},
		{"search context", func() error { _, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); return err },
			rule{forbid: []string{"SCAN m", "SCAN messages"}, require: "p USING COVERING INDEX idx_messages_session_id (session_id=? AND id<?)"}},
	}
	// Once the file holds a /branch, an older Hermes' branch and an
	// orphaned delegate, a listing reads each through its partial index
	// and still reads the roots from their index alone.
	kinds := func(name string, read func() error, require ...string) {
		for _, r := range require {
			cases = append(cases, planCase{name + ": " + r, read, rule{forbid: listing.forbid, require: r}})
		}
	}
	kinds("listing with every kind of child", func() error {
		if _, err := s.ListSessions(ctx, sessiondb.SessionQuery{}); err != nil {
			return err
		}
		_, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Offset: 10})
		return err
	}, "COVERING INDEX sessiondb_sessions_roots", "SCAN s USING INDEX sessiondb_sessions_branch_marked",
		"SCAN bp USING COVERING INDEX sessiondb_sessions_branched", "SCAN rd USING INDEX sessiondb_sessions_root_delegates")
	for i, tc := range cases {
		if strings.HasPrefix(tc.name, "listing with every kind") && !strings.HasPrefix(cases[i-1].name, "listing with every kind") {
			mustCreate(t, s, "old", "cli")
			if err := s.EndSession(ctx, "old", "branched"); err != nil {
				t.Fatal(err)
			}
			for _, n := range []sessiondb.NewSession{
				{ID: "legacy", Source: "cli", ParentSessionID: "old"},
				{ID: "br", Source: "cli", ParentSessionID: "long", ModelConfig: map[string]any{"_branched_from": "long"}},
				{ID: "orphan", Source: "cli", ModelConfig: map[string]any{"_delegate_from": "__orphaned__"}},
			} {
				if _, err := s.CreateSession(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			var all []string
			for _, q := range traceReads(t, s, tc.read) {
				plan := queryPlan(t, s, q)
				all = append(all, plan...)
				for _, line := range plan {
					if branchArms[strings.TrimSpace(line)] {
						continue
					}
					for _, bad := range tc.rule.forbid {
						// "SCAN m" is a whole-table scan of m, not of m_fts.
						if strings.Contains(line+" ", bad+" ") || !strings.HasPrefix(bad, "SCAN") && strings.Contains(line, bad) {
							t.Errorf("plan of %s\nhas %q:\n    %s", q.q, bad, strings.Join(plan, "\n    "))
						}
					}
				}
			}
			if tc.rule.require != "" && !strings.Contains(strings.Join(all, "\n"), tc.rule.require) {
				t.Errorf("no plan line has %q:\n    %s", tc.rule.require, strings.Join(all, "\n    "))
			}
		})
	}
}

// TestLastActiveCatchUpReadsOnlyNewMessages: the catch-up before a
// listing by last activity reads the messages above its mark by rowid,
// never every message: with DISTINCT the planner walked the session index
// of every message (0.5 s a listing after one append at ten million
// messages), nor every row of the table. Neither Hermes nor sessiondb
// runs ANALYZE, so the plans are those without statistics.
func TestLastActiveCatchUpReadsOnlyNewMessages(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "state.db"), Options{})
	for i := range 20 {
		id := fmt.Sprintf("s%02d", i)
		mustCreate(t, s, id, "cli")
		for range 10 {
			mustAppend(t, s, sessiondb.NewMessage{SessionID: id, Role: "user", Content: str("hello")})
		}
	}
	for _, stmt := range strings.Split(lastActiveCatchUp(s.si), ";\n") {
		if stmt = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stmt), ";")); stmt == "" {
			continue
		}
		plan := queryPlan(t, s, tracedQuery{q: stmt})
		for _, line := range plan {
			switch {
			case !strings.HasPrefix(line, "SCAN"), line == "SCAN up", line == "SCAN down", line == "SCAN CONSTANT ROW",
				strings.HasPrefix(line, "SCAN sessiondb_last_active_dirty"):
				continue
			}
			t.Errorf("the catch-up's statement\n%s\nscans: %s (plan %v)", stmt, line, plan)
		}
	}
}
