package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// A copy that stops (here at a title the target holds; a kill is the
// same) leaves no child in the target whose parent did not come in: a
// batch is written only once the batches holding its sessions' parents
// are committed. Batch one is a long session, a session whose title the
// target holds, and a parent; batch two that parent's child. Once the
// title is freed, copying again (another process, which knows nothing
// of the first's links) completes the copy, the child under its
// parent, with the checksum of the source.
func TestCopyStoppedLeavesNoOrphan(t *testing.T) {
	ctx := context.Background()
	dir, from, to := copyStores(t)
	rec := func(id string, started float64, n int) map[string]any {
		msgs := make([]any, n)
		for i := range msgs {
			msgs[i] = map[string]any{"role": "user", "content": fmt.Sprintf("%s message %d", id, i), "timestamp": started + float64(i)/1000}
		}
		return map[string]any{"id": id, "source": "cli", "started_at": started, "messages": msgs}
	}
	long, taken, parent, child := rec("long", 1000, sessiondb.ImportBatchMessages-1001), rec("taken", 2000, 1), rec("parent", 3000, 1000), rec("child", 4000, 1)
	taken["title"], child["parent_session_id"] = "held", "parent"
	if _, err := from.ImportSessions(ctx, []map[string]any{long, taken, parent, child}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	holder := rec("holder", 500, 0)
	holder["title"] = "held"
	if _, err := to.ImportSessions(ctx, []map[string]any{holder}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"child", "long", "parent", "taken"}
	want, err := sessiondb.CompareCopies(ctx, from, from, ids)
	if err != nil {
		t.Fatal(err)
	}

	for _, jobs := range []int{2, 8} {
		rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: jobs})
		if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || !strings.Contains(fmt.Sprint(err), "taken") {
			t.Fatalf("--jobs %d: copy onto a held title: %v (%s); want conflict naming the session", jobs, err, sessiondb.ErrorCode(err))
		}
		if c, err := to.GetSession(ctx, "child"); err == nil {
			t.Errorf("--jobs %d: the child is in the target (parent %v) while its parent is not", jobs, c.ParentSessionID)
		}
		if rep.Copied > 1 {
			t.Errorf("--jobs %d: report %+v, want at most the long session copied", jobs, rep)
		}
	}
	if _, err := to.DeleteSession(ctx, "holder"); err != nil {
		t.Fatal(err)
	}
	// Run again as another process would: with a store of its own.
	to = openTestStore(t, filepath.Join(dir, "to.db"), Options{})
	rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: 2})
	if err != nil || rep.Checksum != want.Sum {
		t.Fatalf("copy again once the title is free: %+v, %v; want checksum %s", rep, err, want.Sum)
	}
	c, err := to.GetSession(ctx, "child")
	if err != nil || c.ParentSessionID == nil || *c.ParentSessionID != "parent" {
		t.Errorf("the child after the copy: %+v, %v; want it under parent", c, err)
	}
}
