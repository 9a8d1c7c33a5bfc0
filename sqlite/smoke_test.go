package sqlite

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	s := openTestStore(t, "", Options{Now: c.Now})
	mustCreate(t, s, "s1", "cli")
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: str("hello docker world")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("use kubernetes"), ToolCalls: []any{map[string]any{"id": "c1"}}})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "s1", Role: "tool", Content: str("ok"), ToolCallID: str("c1")})
	hits, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %+v", err, hits)
	}
	t.Logf("%+v", hits)
	ms, err := s.GetMessages(ctx, "s1")
	if err != nil || len(ms) != 3 {
		t.Fatal(err, ms)
	}
	rich, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{})
	t.Logf("%+v %v", rich, err)
	x, err := s.GetSession(ctx, "s1")
	t.Logf("%+v %v", x, err)
	if x.MessageCount != 3 || x.ToolCallCount != 1 {
		t.Fatal("counts")
	}
	h2, err := s.SearchMessages(ctx, "what's", sessiondb.SearchFilter{})
	t.Log(h2, err)
	h3, err := s.SearchMessages(ctx, "user@example.com", sessiondb.SearchFilter{Roles: []string{"user"}})
	t.Log(h3, err)
}
