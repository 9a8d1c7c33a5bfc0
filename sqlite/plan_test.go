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

func TestPrintPlans(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "state.db"), Options{})
	mustCreate(t, s, "long", "cli")
	for i := range 60 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "long", Role: []string{"user", "assistant"}[i%2], Content: str(fmt.Sprintf("message %d about docker", i))})
	}
	reads := map[string]func() error{
		"last page": func() error { _, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10}); return err },
		"first page": func() error {
			_, err := s.GetMessagesPage(ctx, "long", sessiondb.Page{Limit: 10, FromStart: true})
			return err
		},
		"search":     func() error { _, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); return err },
		"rich":       func() error { _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Offset: 0}); return err },
		"rich src":   func() error { _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Source: "cli"}); return err },
		"keyset":     func() error { _, err := s.ListSessions(ctx, sessiondb.SessionQuery{}); return err },
		"keyset src": func() error { _, err := s.ListSessions(ctx, sessiondb.SessionQuery{Source: "cli"}); return err },
		"keyset after": func() error {
			q := sessiondb.SessionQuery{}
			q.After = q.NextCursor(5, "x")
			_, err := s.ListSessions(ctx, q)
			return err
		},
		"get": func() error { _, err := s.GetMessages(ctx, "long"); return err },
	}
	for name, read := range reads {
		for _, q := range traceReads(t, s, read) {
			t.Logf("%s: %s\n    %s", name, strings.ReplaceAll(q.q, "\n", " "), strings.Join(queryPlan(t, s, q), "\n    "))
		}
	}
}
