package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 3, 15, 9, 24, 37, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openTestStore(t testing.TB, path string, o Options) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	s, err := Open(context.Background(), path, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func str(s string) *string { return &s }

func mustCreate(t testing.TB, s *Store, id, source string) {
	t.Helper()
	if _, err := s.CreateSession(context.Background(), sessiondb.NewSession{ID: id, Source: source}); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
}

func mustAppend(t testing.TB, s *Store, m sessiondb.NewMessage) int64 {
	t.Helper()
	id, err := s.AppendMessage(context.Background(), m)
	if err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	return id
}
