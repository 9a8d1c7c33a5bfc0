package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/storetest"
)

// newTestClock is a settable clock stopped where the conformance suite's
// clocks start.
func newTestClock() *testkit.Clock { return testkit.NewClock(storetest.Epoch) }

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
