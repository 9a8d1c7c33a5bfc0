package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// fillOld writes n ended sessions with bulky messages, then moves the
// clock 10 days on.
func fillOld(t *testing.T, s *Store, c *testkit.Clock, n int) {
	t.Helper()
	ctx := context.Background()
	big := strings.Repeat("retention payload words ", 400)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("old%02d", i)
		mustCreate(t, s, id, "cli")
		for j := 0; j < 5; j++ {
			mustAppend(t, s, sessiondb.NewMessage{SessionID: id, Role: "user", Content: &big})
		}
		if err := s.EndSession(ctx, id, "done"); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(10 * 24 * time.Hour)
}

func TestApplyRetention(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{Now: c.Now})
	fillOld(t, s, c, 20)
	mustCreate(t, s, "fresh", "cli")
	_, before, _, _ := s.pageStats(ctx)

	rep, err := s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pruned != 20 || rep.Skipped || rep.FreedPages == 0 || rep.NeedsVacuumInto {
		t.Fatalf("report = %+v; want 20 pruned and pages freed in place", rep)
	}
	free, after, _, _ := s.pageStats(ctx)
	if after >= before || float64(free)/float64(after) >= reclaimThreshold {
		t.Errorf("pages %d -> %d with %d free; want the file to shrink", before, after, free)
	}
	if res, err := s.IntegrityCheck(ctx); err != nil || res[0] != "ok" {
		t.Errorf("integrity = %v, %v", res, err)
	}
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	// Within MinInterval the next run is skipped.
	rep, err = s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: time.Hour})
	if err != nil || !rep.Skipped {
		t.Errorf("second run = %+v, %v; want skipped", rep, err)
	}
	if _, err := s.GetSession(ctx, "fresh"); err != nil {
		t.Errorf("fresh session lost: %v", err)
	}
}

func TestRetentionOnFileWithoutIncrementalVacuum(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	path := buildFixture(t, 6, true) // made by "Hermes": auto_vacuum NONE
	s := openTestStore(t, path, Options{Now: c.Now})
	fillOld(t, s, c, 20)
	rep, err := s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 5, Sources: []string{"cli", "telegram"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pruned != 20 || rep.FreedPages != 0 || !rep.NeedsVacuumInto {
		t.Fatalf("report = %+v; want 20 pruned and a VacuumInto hint", rep)
	}
	copyPath := filepath.Join(t.TempDir(), "new", "compact.db")
	if err := s.VacuumInto(ctx, copyPath); err != nil {
		t.Fatal(err)
	}
	checkMode(t, copyPath, 0o600)
	checkMode(t, filepath.Dir(copyPath), 0o700)
	cp := openTestStore(t, copyPath, Options{ReadOnly: true})
	if n, err := cp.SessionCount(ctx, ""); err != nil || n != 2 {
		t.Errorf("copy has %d sessions, %v; want the 2 unpruned", n, err)
	}
	if err := s.VacuumInto(ctx, copyPath); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Errorf("vacuum into an existing file = %v; want conflict", err)
	}
	// A link planted at the target, even to an empty file, is refused:
	// the copy must not land in whatever it points to.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(copyPath), "link.db")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := s.VacuumInto(ctx, link); sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("vacuum into a link = %v; want invalid naming the link", err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Size() != 0 {
		t.Errorf("the link's target was written: %v, %v", fi.Size(), err)
	}
	if des, _ := os.ReadDir(filepath.Dir(copyPath)); len(des) != 2 {
		t.Errorf("the copy folder holds %d entries, want the copy and the link", len(des))
	}
}
