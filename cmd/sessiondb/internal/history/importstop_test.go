package history

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

// stopAfterBatch is a real store whose import is stopped (as Ctrl-C
// would) the moment a batch's ImportSessions returns.
type stopAfterBatch struct {
	sessiondb.Store
	stop context.CancelFunc
}

func (s stopAfterBatch) ImportSessions(ctx context.Context, recs []map[string]any, opts sessiondb.ImportOptions) ([]sessiondb.ImportResult, error) {
	res, err := s.Store.ImportSessions(ctx, recs, opts)
	s.stop()
	return res, err
}

// TestImportStoppedCountsWhatCommitted: an import stopped as a batch that
// stopped at a bad record returns counts the sessions that batch
// committed: "stopped after importing N" names what the store holds. It
// counted none of them, as if the batch had not committed.
func TestImportStoppedCountsWhatCommitted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file := `{"id":"a","source":"cli","started_at":1,"messages":[]}
{"id":"b","source":"cli","started_at":2,"messages":[]}
{"id":"c","source":"cli","started_at":3,"messages":[{"id":0,"role":"user","content":"x","timestamp":3}]}
{"id":"d","source":"cli","started_at":4,"messages":[]}
`
	h := &group{Factory: cli.New(strings.NewReader(""), io.Discard, io.Discard)}
	res, err := h.importRecords(ctx, stopAfterBatch{st, cancel}, strings.NewReader(file), int64(len(file)), true, "f.jsonl", false, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the import stopped", err)
	}
	stored := 0
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := st.GetSession(context.Background(), id); err == nil {
			stored++
		}
	}
	if stored != 2 || res.Imported != stored {
		t.Errorf("the report counts %d imported; the store holds %d (want a and b)", res.Imported, stored)
	}
}
