package sqlite_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// Another writer may number messages as it likes (SQLite takes any integer
// as a rowid): an export, and so a copy or a move, carries every one,
// those at 0 and below included, and ends at the largest id there is. The
// export pages cross the lowest ids (its first page holds 32 rows).
func TestExportCarriesEveryMessageID(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openStore(t, path)
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := 0; i < 40; i++ {
		c := fmt.Sprintf("ours %d", i)
		id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: &c})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	// The other writer's rows: the lowest id there is, a run below 1, and
	// the highest id there is.
	others := []int64{math.MinInt64, -40, 0, math.MaxInt64}
	for i := int64(-39); i < 0; i++ {
		others = append(others, i)
	}
	for _, id := range others {
		sqlitetest.ExecFile(t, path, "INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 's1', 'user', ?, 1)", id, fmt.Sprint("theirs ", id))
		want = append(want, id)
	}
	slices.Sort(want)

	var got []int64
	err := s.ExportSessionPages(ctx, "s1", func(map[string]any) error { return nil }, func(page []map[string]any) error {
		for _, m := range page {
			got = append(got, m["id"].(int64))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("exported ids %v\nstored ids %v", got, want)
	}
	rec, err := s.ExportSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec["messages"].([]map[string]any)); n != len(want) {
		t.Fatalf("ExportSession: %d messages, the file holds %d", n, len(want))
	}
}
