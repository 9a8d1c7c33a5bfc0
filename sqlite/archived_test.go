package sqlite

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestArchivedSessionsHidden: on a newer Hermes file with sessions.archived,
// ListSessionsRich leaves archived sessions out unless asked, marks them
// when listed, and changes nothing in the file; a file without the column
// lists everything.
func TestArchivedSessionsHidden(t *testing.T) {
	ctx := context.Background()
	path := buildNewer(t, "", "ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0",
		"INSERT INTO sessions (id, source, started_at, archived) VALUES ('a1', 'cli', 9000, 1)")
	before := masterSQL(t, path)
	s := openTestStore(t, path, Options{})
	ids := func(f sessiondb.RichFilter) map[string]bool {
		t.Helper()
		rows, err := s.ListSessionsRich(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, r := range rows {
			out[r.ID] = r.Archived != 0
		}
		return out
	}
	if got := ids(sessiondb.RichFilter{}); len(got) != 2 || got["n1"] || got["n2"] {
		t.Errorf("default listing = %v; want n1 and n2, not archived, and no a1", got)
	}
	if got := ids(sessiondb.RichFilter{IncludeArchived: true}); len(got) != 3 || !got["a1"] || got["n1"] {
		t.Errorf("with IncludeArchived = %v; want a1 marked archived beside n1 and n2", got)
	}
	if got := ids(sessiondb.RichFilter{IncludeChildren: true}); len(got) != 2 {
		t.Errorf("IncludeChildren alone = %v; archived stays hidden", got)
	}
	if !sameStrings(masterSQL(t, path), before) {
		t.Error("listing changed the newer file's schema")
	}
	// A v6 file has no such column: nothing is hidden, nothing is marked.
	v6 := openTestStore(t, buildFixture(t, 6, true), Options{})
	rows, err := v6.ListSessionsRich(ctx, sessiondb.RichFilter{})
	if err != nil || len(rows) != 2 || rows[0].Archived != 0 || rows[1].Archived != 0 {
		t.Errorf("v6 listing = %+v, %v", rows, err)
	}
}
