package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/storetest"
)

// TestSubagentConformance runs the subagent suite on a fresh janebot
// state.sqlite per case.
func TestSubagentConformance(t *testing.T) {
	storetest.RunSubagents(t, storetest.SubagentHarness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.SubagentService {
			return openSubagents(t, filepath.Join(t.TempDir(), ".janebot", "state.sqlite"), now)
		},
		Reopen: func(t *testing.T, s sessiondb.SubagentService, now sessiondb.Clock) sessiondb.SubagentService {
			return openSubagents(t, s.(*sqlite.Subagents).Path(), now)
		},
	})
}

func openSubagents(t testing.TB, path string, now sessiondb.Clock) *sqlite.Subagents {
	t.Helper()
	s, err := sqlite.OpenSubagents(context.Background(), path, sqlite.SubagentOptions{Now: now})
	if err != nil {
		t.Fatalf("OpenSubagents(%s): %v", path, err)
	}
	return s
}
