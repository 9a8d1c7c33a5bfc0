package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// BenchmarkListSessions times the listings' pages on a store of 100,000
// sessions shaped as the growth benchmark's at 10 M messages (every tenth
// session a compression continuation of the one before, one message each
// here), plus 5,000 delegate subagents and 20 /branch children: the kinds
// of child a listing must leave out or show.
func BenchmarkListSessions(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.db")
	s := openTestStore(b, path, Options{})
	mustCreate(b, s, "seed", "cli")
	s.Close()
	sqlitetest.ExecFile(b, path, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO sessions (id, source, started_at, ended_at, end_reason, parent_session_id, message_count)
SELECT printf('s%06d', i), CASE WHEN i % 3 = 0 THEN 'telegram' ELSE 'cli' END, 1.7e9 + i,
  CASE WHEN i % 10 = 1 THEN 1.7e9 + i + 0.5 END, CASE WHEN i % 10 = 1 THEN 'compression' END,
  CASE WHEN i % 10 = 2 THEN printf('s%06d', i - 1) END, 1 FROM n`)
	sqlitetest.ExecFile(b, path, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
INSERT INTO sessions (id, source, started_at, parent_session_id, model_config)
SELECT printf('d%06d', i), 'cli', 1.7e9 + i * 20 + 0.25, printf('s%06d', i * 20), '{"_delegate_from": "' || printf('s%06d', i * 20) || '"}' FROM n`)
	sqlitetest.ExecFile(b, path, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
INSERT INTO sessions (id, source, started_at, parent_session_id, model_config)
SELECT printf('b%06d', i), 'cli', 1.7e9 + i * 5000 + 0.75, printf('s%06d', i * 5000), '{"_branched_from": "' || printf('s%06d', i * 5000) || '"}' FROM n`)
	sqlitetest.ExecFile(b, path, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO messages (session_id, role, content, timestamp) SELECT printf('s%06d', i), 'user', 'hello ' || i, 1.7e9 + i + 0.1 FROM n`)
	s = openTestStore(b, path, Options{})
	first, err := s.ListSessions(ctx, sessiondb.SessionQuery{})
	if err != nil {
		b.Fatal(err)
	}
	appendAndList := func(id string) error {
		text := "one more"
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &text}); err != nil {
			return err
		}
		_, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive})
		return err
	}
	deep := sessiondb.SessionQuery{}
	deep.After = deep.NextCursor(1.7e9+50000, "s050000")
	cases := []struct {
		name string
		run  func() error
	}{
		{"first page", func() error { _, err := s.ListSessions(ctx, sessiondb.SessionQuery{}); return err }},
		{"deep page", func() error { _, err := s.ListSessions(ctx, deep); return err }},
		{"source", func() error { _, err := s.ListSessions(ctx, sessiondb.SessionQuery{Source: "telegram"}); return err }},
		{"last activity", func() error {
			_, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive})
			return err
		}},
		{"by tokens", func() error {
			_, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortTokens})
			return err
		}},
		{"rich offset 1000", func() error { _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{Offset: 1000}); return err }},
		// A listing by last activity after an append catches the table up
		// first: for a plain session, its row; for a continuation, its
		// chain's key too. "append alone" is the append without the
		// listing, the floor of the two after it.
		{"append alone", func() error {
			text := "one more"
			_, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s000003", Role: "user", Content: &text})
			return err
		}},
		{"last activity after an append", func() error { return appendAndList("s000003") }},
		{"last activity after an append to a continuation", func() error { return appendAndList("s000002") }},
	}
	if first.Next == "" {
		b.Fatal("one page only")
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
