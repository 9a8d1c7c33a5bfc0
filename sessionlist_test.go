package sessiondb

import (
	"encoding/json"
	"testing"
)

// TestSessionQueryPage holds the page cut both backends share: no rows is
// an empty list (JSON [], not null), a full page without a row over has no
// next cursor, and a row over is dropped and named by Next as the place
// after the page's last row, a cursor the same query accepts.
func TestSessionQueryPage(t *testing.T) {
	rows := func(ids ...string) []RichSession {
		var out []RichSession
		for _, id := range ids {
			out = append(out, RichSession{Session: Session{ID: id}})
		}
		return out
	}
	q := SessionQuery{Limit: 2, Source: "cli"}

	empty := q.Page(nil, nil)
	if b, _ := json.Marshal(empty); string(b) != `{"sessions":[]}` {
		t.Errorf("empty page = %s", b)
	}
	full := q.Page(rows("a", "b"), []float64{2, 1})
	if len(full.Sessions) != 2 || full.Next != "" {
		t.Errorf("full page without a row over = %+v", full)
	}

	over := q.Page(rows("a", "b", "c"), []float64{3, 2, 1})
	if len(over.Sessions) != 2 || over.Sessions[1].ID != "b" || over.Next == "" {
		t.Fatalf("page with a row over = %+v", over)
	}
	next := q
	next.After = over.Next
	cur, err := next.Cursor()
	if err != nil {
		t.Fatal(err)
	}
	if cur.ID != "b" || cur.Key != 2 {
		t.Errorf("next cursor = %+v, want after b at key 2", cur)
	}
}

// TestShowTip holds the projection of a compression chain's tip onto its
// root: the tip's id, end, counts, title, activity, preview, model and
// prompt, the root's start, and LineageRootID naming the root.
func TestShowTip(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	root := RichSession{Session: Session{ID: "root", StartedAt: 1, EndedAt: num(2), EndReason: str("compression"), Source: "cli",
		MessageCount: 4, Title: str("first")}, Preview: "hello", LastActive: 2}
	tip := RichSession{Session: Session{ID: "tip", StartedAt: 3, EndedAt: num(9), EndReason: str("user_exit"), Source: "cli",
		MessageCount: 7, ToolCallCount: 2, Title: str("first #2"), Model: str("m2"), SystemPrompt: str("p2")}, Preview: "again", LastActive: 8}
	root.ShowTip(&tip)
	if root.ID != "tip" || root.LineageRootID != "root" || root.StartedAt != 1 {
		t.Errorf("ids and start = %q %q %v, want tip, root, 1", root.ID, root.LineageRootID, root.StartedAt)
	}
	if *root.EndedAt != 9 || *root.EndReason != "user_exit" || root.MessageCount != 7 || root.ToolCallCount != 2 ||
		*root.Title != "first #2" || root.LastActive != 8 || root.Preview != "again" || *root.Model != "m2" || *root.SystemPrompt != "p2" {
		t.Errorf("projected row = %+v", root)
	}
}
