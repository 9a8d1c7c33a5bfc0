package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// A source whose sessions name a parent it lacks (deleted with the
// foreign keys off) or name themselves copies whole but for those links,
// which the target cannot hold: the report names the sessions, the copy
// succeeds, and a second run changes nothing. The check still finds a
// link the target lost that the source holds.
func TestCopyNamesParentsTheSourceLacks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "from.db")
	from := openTestStore(t, src, Options{})
	var recs []map[string]any
	for i, id := range []string{"root", "child", "dangling", "self"} {
		recs = append(recs, map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(i),
			"messages": []any{map[string]any{"role": "user", "content": "hello " + id, "timestamp": 2000.0 + float64(i)}}})
	}
	recs[1]["parent_session_id"] = "root"
	if _, err := from.ImportSessions(ctx, recs, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	sqlitetest.ExecFile(t, src, "UPDATE sessions SET parent_session_id = 'gone' WHERE id = 'dangling'")
	sqlitetest.ExecFile(t, src, "UPDATE sessions SET parent_session_id = 'self' WHERE id = 'self'")

	for _, jobs := range []int{1, 2} {
		dst := filepath.Join(t.TempDir(), "to.db")
		to := openTestStore(t, dst, Options{})
		rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: jobs})
		if err != nil {
			t.Fatalf("--jobs %d: copy: %v", jobs, err)
		}
		if rep.Copied != 4 || fmt.Sprint(rep.Unparented) != "[dangling self]" {
			t.Errorf("--jobs %d: report %+v; want 4 copied, dangling and self unparented", jobs, rep)
		}
		for id, want := range map[string]string{"root": "", "child": "root", "dangling": "", "self": ""} {
			s, err := to.GetSession(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s.ParentSessionID != nil {
				got = *s.ParentSessionID
			}
			if got != want {
				t.Errorf("--jobs %d: %s has parent %q in the target, want %q", jobs, id, got, want)
			}
		}
		again, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: jobs})
		if err != nil || again.Skipped != 4 || again.Checksum != rep.Checksum {
			t.Errorf("--jobs %d: copy again: %+v, %v; want all skipped, checksum %s", jobs, again, err, rep.Checksum)
		}
		sqlitetest.ExecFile(t, dst, "UPDATE sessions SET parent_session_id = NULL WHERE id = 'child'")
		c, err := sessiondb.CompareCopies(ctx, from, to, []string{"child", "dangling", "root", "self"})
		if err != nil || strings.Join(c.Differ, ",") != "child" {
			t.Errorf("--jobs %d: compared once the child lost its parent: %+v, %v; want child differing", jobs, c, err)
		}
	}
}
