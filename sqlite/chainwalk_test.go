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
