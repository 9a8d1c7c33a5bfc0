package history

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// TestCopyInterrupted: a copy stopped by Ctrl-C once sessions are in the
// target exits as interrupted and says, as an import does, how many
// sessions it copied (they stay; running it again resumes), which is what
// the target holds.
func TestCopyInterrupted(t *testing.T) {
	var b strings.Builder
	for i := range 600 {
		var msgs []any
		for j := range 10 {
			msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("line %d", j), "timestamp": 2000.0 + float64(i) + float64(j)/100})
		}
		line, err := json.Marshal(map[string]any{"id": fmt.Sprintf("s%04d", i), "source": "cli", "started_at": 1000.0 + float64(i), "messages": msgs})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	from, to := filepath.Join(t.TempDir(), "from.db"), filepath.Join(t.TempDir(), "to.db")
	mustCLI(t, "--db", from, "import", in)
	mustCLI(t, "--db", to, "import", os.DevNull)

	// Ctrl-C once the first batch is in the target.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	raw := sqlitetest.Open(t, to)
	go func() {
		for ctx.Err() == nil {
			var n int
			if err := raw.QueryRow("SELECT count(*) FROM sessions").Scan(&n); err == nil && n > 0 {
				cancel()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	r := clitest.Run(ctx, clitest.Options{}, []string{"copy", "--from", from, "--to", to, "--jobs", "1"}, Commands)
	m := regexp.MustCompile(`stopped after copying (\d+) sessions, which stay; running the copy again resumes it`).FindStringSubmatch(r.Stderr)
	if r.Code != 130 || m == nil {
		t.Fatalf("exit %d, stderr %q; want 130 and what was copied", r.Code, r.Stderr)
	}
	var rows []listed
	mustCLI(t, "--db", to, "--json", "sessions", "--limit", "5000").Decode(t, &rows)
	if n, _ := strconv.Atoi(m[1]); n != len(rows) || n == 600 {
		t.Errorf("the copy says it copied %s sessions; the target holds %d (of 600)", m[1], len(rows))
	}
}
