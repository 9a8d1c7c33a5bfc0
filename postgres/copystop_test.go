package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// A copy from a file stopped by its context (Ctrl-C) while batches are being written
// says it was stopped (context.Canceled, which the command line turns into
// the status of an interrupt), whatever the driver made of the query it
// cut short ("conn closed"); its report counts what the target holds; and
// running it again completes it with the source's checksum.
func TestCopyStoppedByContext(t *testing.T) {
	bg := context.Background()
	from, err := sqlite.Open(bg, filepath.Join(t.TempDir(), "from.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	to, _ := openStore(t, postgres.Options{})
	t.Cleanup(func() { from.Close(); to.Close() })
	var recs []map[string]any
	var ids []string
	for i := range 800 {
		id := fmt.Sprintf("s%04d", i)
		ids = append(ids, id)
		var msgs []any
		for j := range 40 {
			msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("%s line %d", id, j), "timestamp": 2000.0 + float64(i) + float64(j)/100})
		}
		recs = append(recs, map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(i), "messages": msgs})
	}
	if _, err := from.ImportSessions(bg, recs, sessiondb.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	want, err := sessiondb.CompareCopies(bg, from, from, ids)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 12 {
		ctx, cancel := context.WithCancel(bg)
		rep, err := sessiondb.Copy(ctx, from, to, sessiondb.CopyOptions{Jobs: 4, Progress: func(done, total int) { cancel() }})
		cancel()
		if err == nil {
			if round == 0 {
				t.Fatal("the first copy was not stopped: the test stopped nothing")
			}
			break // nothing was left to stop
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("round %d: a copy stopped by its context: %v (%s); want context.Canceled", round, err, sessiondb.ErrorCode(err))
		}
		n, err := to.SessionCount(bg, "")
		if err != nil {
			t.Fatal(err)
		}
		if int64(rep.Copied+rep.Skipped) > n {
			t.Errorf("round %d: report %+v, but the target holds %d sessions", round, rep, n)
		}
	}
	rep, err := sessiondb.Copy(bg, from, to, sessiondb.CopyOptions{Jobs: 2})
	if err != nil || rep.Checksum != want.Sum {
		t.Fatalf("copy again: %+v, %v; want checksum %s", rep, err, want.Sum)
	}
}
