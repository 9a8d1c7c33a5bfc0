package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// TestImportCopiesMessages: an imported session whose messages carry their
// ids goes in by COPY, not one INSERT a message, and keeps its ids, its
// content (a NUL-bearing one too) and the id sequence past them; a session
// with a taken id falls back to the rows one by one and gives that message
// a new id.
func TestImportCopiesMessages(t *testing.T) {
	s, rec, _ := openTraced(t, 2)
	ctx := context.Background()
	const n = 40
	msgs := make([]any, n)
	for i := range msgs {
		content := "message " + itoa(i)
		if i == 7 {
			content = "\x00json:[{\"type\":\"text\",\"text\":\"parts\"}]"
		}
		msgs[i] = map[string]any{"id": float64(1000 + i), "role": "user", "content": content, "timestamp": 1000.0 + float64(i)}
	}
	rec.start()
	if _, err := s.ImportSession(ctx, map[string]any{"id": "c1", "source": "cli", "started_at": 1000.0, "messages": msgs}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	inserts := 0
	for _, q := range rec.stop() {
		if strings.HasPrefix(q.sql, "INSERT INTO messages") {
			inserts++
		}
	}
	if inserts != 0 {
		t.Errorf("%d INSERTs into messages for a session whose %d messages carry their ids; want them copied", inserts, n)
	}
	got, err := s.GetMessages(ctx, "c1")
	if err != nil || len(got) != n {
		t.Fatalf("GetMessages = %d, %v", len(got), err)
	}
	for i, m := range got {
		if m.ID != int64(1000+i) {
			t.Errorf("message %d has id %d, want %d", i, m.ID, 1000+i)
		}
	}
	if raw, ok := got[7].StructuredContent(); !ok || !strings.Contains(string(raw), "parts") {
		t.Errorf("the multimodal message came back as %q", *got[7].Content)
	}
	next, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "c1", Role: "user", Content: strPtr("after")})
	if err != nil || next <= 1000+n-1 {
		t.Errorf("the next append took id %d (%v); want one past the copied ids", next, err)
	}

	// A taken id: the copy is rolled back and the rows go in one by one.
	taken := []any{
		map[string]any{"id": float64(1003), "role": "user", "content": "holds a taken id", "timestamp": 2000.0},
		map[string]any{"id": float64(5000), "role": "assistant", "content": "free id", "timestamp": 2001.0},
	}
	if _, err := s.ImportSession(ctx, map[string]any{"id": "c2", "source": "cli", "started_at": 2000.0, "messages": taken}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetMessages(ctx, "c2")
	if err != nil || len(got) != 2 || got[0].ID == 1003 || got[1].ID != 5000 {
		t.Errorf("c2's messages = %+v, %v; want a new id for the taken one and 5000 kept", got, err)
	}
}

// TestPoolSize: the pool holds DefaultMaxConns connections unless the URL's
// pool_max_conns or Options.MaxConns says otherwise, Options first.
func TestPoolSize(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		opt  int32
		want int32
	}{
		{url, 0, DefaultMaxConns},
		{url + "&pool_max_conns=3", 0, 3},
		{url + "&pool_max_conns=3", 5, 5},
	} {
		s, err := Open(ctx, tc.url, Options{Schema: schema, MaxConns: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.pool.Config().MaxConns; got != tc.want {
			t.Errorf("%s, MaxConns %d: pool of %d, want %d", tc.url, tc.opt, got, tc.want)
		}
		s.Close()
	}
}
