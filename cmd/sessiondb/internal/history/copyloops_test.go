package history

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// TestCopyChainsAndLoops copies a file holding a chain of 200
// continuations (across four batches), parents in loops of two and three
// (written around the import, as damaged data), a session that is its own
// parent and one whose parent is gone, into PostgreSQL with --jobs 1, 2
// and 8, and back into a file: each copy succeeds, the last two are named
// in a warning (and under "unparented" with --json) and copied without a
// parent, and every other link is as the source holds it.
func TestCopyChainsAndLoops(t *testing.T) {
	var b strings.Builder
	const n = 230
	for s := range n {
		id := fmt.Sprintf("c%03d", s)
		rec := map[string]any{"id": id, "source": "cli", "started_at": 1000.0 + float64(s)}
		if s > 0 && s < 200 {
			rec["parent_session_id"] = fmt.Sprintf("c%03d", s-1)
		}
		var msgs []any
		for j := range 3 {
			msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("%s line %d", id, j), "timestamp": 2000.0 + float64(s) + float64(j)/10})
		}
		rec["messages"] = msgs
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	jsonl := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(jsonl, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "from.db")
	mustCLI(t, "--db", db, "import", jsonl)
	for child, parent := range map[string]string{"c200": "c201", "c201": "c200", "c202": "c202", "c203": "c204", "c204": "c205", "c205": "c203", "c206": "gone"} {
		sqlitetest.ExecFile(t, db, "UPDATE sessions SET parent_session_id = ? WHERE id = ?", parent, child)
	}
	parents := func(loc string) map[string]string {
		var list []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent_session_id"`
		}
		mustCLI(t, "--db", loc, "--json", "sessions", "--children", "--limit", "1000").Decode(t, &list)
		out := map[string]string{}
		for _, s := range list {
			if s.Parent != nil {
				out[s.ID] = *s.Parent
			}
		}
		return out
	}
	want := parents(db)
	delete(want, "c202")
	delete(want, "c206")
	if len(want) != 199+5 {
		t.Fatalf("the source holds %d links, want %d", len(want), 199+5)
	}
	for _, jobs := range []string{"1", "2", "8"} {
		url := pgURL(t)
		back := filepath.Join(t.TempDir(), "back.db")
		r := mustCLI(t, "copy", "--from", db, "--to", url, "--jobs", jobs)
		if !strings.Contains(r.Stderr, "2 sessions name a parent the source lacks, or themselves, and were copied without it: c202, c206") {
			t.Errorf("--jobs %s: stderr %q; want a warning naming c202 and c206", jobs, r.Stderr)
		}
		var rep struct {
			Copied     int
			Unparented []string
		}
		mustCLI(t, "--json", "copy", "--from", url, "--to", back, "--jobs", jobs).Decode(t, &rep)
		if rep.Copied != n || len(rep.Unparented) != 0 {
			t.Errorf("--jobs %s: copy back: %+v, want %d copied, none unparented", jobs, rep, n)
		}
		for _, loc := range []string{url, back} {
			if got := parents(loc); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("--jobs %s: links in the copy differ from the source's:\n got %v\nwant %v", jobs, got, want)
			}
		}
	}
}
