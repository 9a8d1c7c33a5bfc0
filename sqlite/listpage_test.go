package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestChainWalkCountsACycleOnce: a compression chain whose parents come
// back to its start (root → c1 → c2 → root, every one ended by
// compression) is walked to the session first reached last, and its
// totals count each session once, however many hops the walk takes
// before its limit.
func TestChainWalkCountsACycleOnce(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "state.db"), Options{})
	hello := "hello"
	for i, id := range []string{"root", "c1", "c2"} {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i; j++ {
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &hello}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE sessions SET end_reason = 'compression', ended_at = started_at + 1,
    parent_session_id = CASE id WHEN 'root' THEN 'c2' WHEN 'c1' THEN 'root' ELSE 'c1' END,
    input_tokens = CASE id WHEN 'root' THEN 1 WHEN 'c1' THEN 10 ELSE 100 END`); err != nil {
		t.Fatal(err)
	}
	tip, err := s.CompressionTip(ctx, "root")
	if err != nil || tip != "c2" {
		t.Errorf("CompressionTip(root) = %q, %v; want c2, the session first reached last", tip, err)
	}
	tips, totals, err := s.chainTipsAndTotals(ctx, []string{"root", "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if tips["root"] != "c2" || tips["c1"] != "root" {
		t.Errorf("tips = %v, want root → c2 and c1 → root", tips)
	}
	for _, root := range []string{"root", "c1"} {
		if got := totals[root]; got.Sessions != 3 || got.Messages != 6 || got.InputTokens != 111 {
			t.Errorf("totals of %s's chain = %d sessions, %d messages, %d input tokens; want 3, 6, 111 (each session once)", root, got.Sessions, got.Messages, got.InputTokens)
		}
	}
}

// TestSessionReadsANewerColumnAlone: a file with one column of a newer
// Hermes and none of the others reads that column (the session select
// takes the newer columns whenever the file has any), and a file with
// none reads their defaults.
func TestSessionReadsANewerColumnAlone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{})
	for _, id := range []string{"a", "b"} {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetSession(ctx, "a")
	if err != nil || got.Archived != 0 || got.APICallCount != 0 || got.Cwd != nil {
		t.Fatalf("on a v6 file: %+v, %v; want the newer columns' defaults", got, err)
	}
	if _, err := s.db.ExecContext(ctx, "ALTER TABLE sessions ADD COLUMN rewind_count INTEGER DEFAULT 0; UPDATE sessions SET rewind_count = 3 WHERE id = 'a'"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, path, Options{})
	got, err = s.GetSession(ctx, "a")
	if err != nil || got.RewindCount != 3 {
		t.Errorf("with rewind_count alone: %+v, %v; want rewind_count 3", got, err)
	}
	page, err := s.ListSessions(ctx, sessiondb.SessionQuery{})
	if err != nil || len(page.Sessions) != 2 {
		t.Fatalf("list: %+v, %v", page, err)
	}
	for _, r := range page.Sessions {
		if want := map[string]int64{"a": 3, "b": 0}[r.ID]; r.RewindCount != want {
			t.Errorf("listed %s rewind_count %d, want %d", r.ID, r.RewindCount, want)
		}
	}
}
