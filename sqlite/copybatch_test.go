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

// batchCounter is a real store that records the sessions and messages of
// each ImportSessions call Copy makes on it.
type batchCounter struct {
	sessiondb.Store
	batches [][2]int // sessions, messages
}

func (b *batchCounter) ImportSessions(ctx context.Context, recs []map[string]any, o sessiondb.ImportOptions) ([]sessiondb.ImportResult, error) {
	n := 0
	for _, r := range recs {
		n += sessiondb.RecordMessages(r)
	}
	b.batches = append(b.batches, [2]int{len(recs), n})
	return b.Store.ImportSessions(ctx, recs, o)
}

// Copy cuts its batches as an import does: a batch of long sessions is
// committed once it holds ImportBatchMessages messages, not after
// CopyBatch sessions, so a copy never holds more than one batch of
// messages in memory; short sessions still go CopyBatch at a time.
func TestCopyBatchesBoundMessages(t *testing.T) {
	ctx := context.Background()
	from := openTestStore(t, filepath.Join(t.TempDir(), "from.db"), Options{})
	long := sessiondb.ImportBatchMessages*2/5 + 1 // three of them pass the bound
	var recs []map[string]any
	add := func(id string, started float64, n int) {
		msgs := make([]any, n)
		for i := range msgs {
			msgs[i] = map[string]any{"role": "user", "content": fmt.Sprintf("%s message %d", id, i), "timestamp": started + float64(i)}
		}
		recs = append(recs, map[string]any{"id": id, "source": "cli", "started_at": started, "messages": msgs})
	}
	for i := range 4 {
		add(fmt.Sprintf("long%d", i), float64(1000+i*100000), long)
	}
	for i := range sessiondb.CopyBatch + 10 {
		add(fmt.Sprintf("short%02d", i), float64(10_000_000+i), 2)
	}
	if _, err := from.ImportSessions(ctx, recs, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}

	to := &batchCounter{Store: openTestStore(t, filepath.Join(t.TempDir(), "to.db"), Options{})}
	var progress []int
	rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Progress: func(done, total int) { progress = append(progress, done) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != len(recs) || rep.Messages != int64(4*long+2*(sessiondb.CopyBatch+10)) {
		t.Fatalf("copied %d sessions, %d messages; want %d, %d", rep.Copied, rep.Messages, len(recs), 4*long+2*(sessiondb.CopyBatch+10))
	}
	sessions := 0
	for i, b := range to.batches {
		sessions += b[0]
		if b[0] > sessiondb.CopyBatch || b[1]-long >= sessiondb.ImportBatchMessages {
			t.Errorf("batch %d holds %d sessions and %d messages: more than one session past the bounds (%d sessions, %d messages)",
				i, b[0], b[1], sessiondb.CopyBatch, sessiondb.ImportBatchMessages)
		}
	}
	// Oldest first: the bound is crossed at the third long session; the
	// fourth opens a batch that CopyBatch sessions close; the rest follow.
	want := [][2]int{{3, 3 * long}, {sessiondb.CopyBatch, long + 2*(sessiondb.CopyBatch-1)}, {11, 22}}
	if fmt.Sprint(to.batches) != fmt.Sprint(want) {
		t.Errorf("batches (sessions, messages) %v, want %v", to.batches, want)
	}
	if sessions != len(recs) || len(progress) != len(to.batches) || progress[len(progress)-1] != len(recs) {
		t.Errorf("batches %v, progress %v: want every session once and a progress report per batch ending at %d", to.batches, progress, len(recs))
	}
}

// A copy is checked at the end: a session the target held before with
// other content is skipped, and the copy fails with conflict naming it;
// a message changed in the target afterwards is found by CompareCopies,
// wherever it falls among the sessions compared at once, and the sum
// over the source does not depend on the target.
func TestCopyFindsCopiesThatDiffer(t *testing.T) {
	ctx := context.Background()
	dir, from, to := copyStores(t)
	rec := func(id, text string) map[string]any { return oneMessage(id, text, 1000) }
	var ids []string
	var src []map[string]any
	for i := range 10 {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		src = append(src, rec(id, "the source's "+id))
	}
	if _, err := from.ImportSessions(ctx, src, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := to.ImportSessions(ctx, []map[string]any{rec("s03", "other"), rec("s07", "other")}, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: 2})
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || !strings.Contains(fmt.Sprint(err), "s03: in the target before, with other content; s07: in the target before") {
		t.Fatalf("copy over two sessions held with other content: %v; want conflict naming s03, s07", err)
	}
	if rep.Copied != 8 || rep.Skipped != 2 {
		t.Errorf("report %+v: want 8 copied, 2 skipped", rep)
	}

	same, err := sessiondb.CompareCopies(ctx, from, from, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Differ) != 0 || same.Messages != 10 || len(same.Sum) != 64 {
		t.Fatalf("a store against itself: %+v", same)
	}
	for _, id := range []string{"s03", "s07"} {
		if _, err := to.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err = sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{}); err != nil || rep.Copied != 2 || rep.Checksum != same.Sum {
		t.Fatalf("copy again: %+v, %v; want 2 copied and checksum %s", rep, err, same.Sum)
	}
	for _, id := range []string{"s00", "s05", "s09"} {
		sqlitetest.ExecFile(t, filepath.Join(dir, "to.db"), "UPDATE messages SET content = 'changed' WHERE session_id = ?", id)
	}
	c, err := sessiondb.CompareCopies(ctx, from, to, ids)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Differ, ",") != "s00,s05,s09" || c.Sum != same.Sum {
		t.Errorf("compared after three changes: differ %v, sum %s; want s00,s05,s09 and %s", c.Differ, c.Sum, same.Sum)
	}
}

// copyStores opens two stores in one temporary folder, from.db and to.db,
// a copy's source and target.
func copyStores(t *testing.T) (dir string, from, to *Store) {
	t.Helper()
	dir = t.TempDir()
	return dir, openTestStore(t, filepath.Join(dir, "from.db"), Options{}), openTestStore(t, filepath.Join(dir, "to.db"), Options{})
}

// oneMessage is an import record of a cli session started at started
// holding one user message, text, a second later.
func oneMessage(id, text string, started float64) map[string]any {
	return map[string]any{"id": id, "source": "cli", "started_at": started,
		"messages": []any{map[string]any{"role": "user", "content": text, "timestamp": started + 1}}}
}
