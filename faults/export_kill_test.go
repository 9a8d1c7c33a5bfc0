package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledExportKeepsTheOldFile runs `export -o` on a store of some
// megabytes over an existing export again and again, and SIGKILLs it once
// its temporary file (or the target itself, were it written in place) has
// grown past a random size, or lets it finish when it is quicker. After every round the target holds either the old export
// byte for byte or a whole new one, never half of either; a kill leaves at
// most the hidden temporary file beside it.
func TestKilledExportKeepsTheOldFile(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	const sessions = 120
	var in bytes.Buffer
	words := strings.Fields("alpha beta gamma delta docker kubernetes deploy rollback sqlite index query retry jitter backoff")
	rng := rand.New(rand.NewPCG(8, 6))
	for i := range sessions {
		msgs := make([]map[string]any, 20)
		for j := range msgs {
			var text strings.Builder
			for range 250 {
				text.WriteString(words[rng.IntN(len(words))] + " ")
			}
			msgs[j] = map[string]any{"role": []string{"user", "assistant"}[j%2], "content": text.String(), "timestamp": 1.77e9 + float64(i*100+j)}
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("s%04d", i), "source": "cli", "started_at": 1.77e9 + float64(i*100), "messages": msgs})
		in.Write(append(line, '\n'))
	}
	src := filepath.Join(e.Home, "in.jsonl")
	if err := os.WriteFile(src, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "--db", db, "import", src)

	folder := filepath.Join(e.Home, "backups")
	os.Mkdir(folder, 0o700)
	target := filepath.Join(folder, "backup.jsonl")
	old := []byte("the previous export\n")
	rounds, killed, atTarget, finished := 12, 0, 0, 0
	for round := range rounds {
		if err := os.WriteFile(target, old, 0o600); err != nil {
			t.Fatal(err)
		}
		threshold := rng.Int64N(int64(in.Len()))
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		cmd := e.command(ctx, "--db", db, "export", "-o", target)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	watch:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("round %d: export failed on its own: %v", round, err)
				}
				finished++
				break watch
			default:
			}
			if tmp := temporaries(t, folder); len(tmp) == 1 {
				if fi, err := os.Stat(tmp[0]); err == nil && fi.Size() >= threshold {
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					killed++
					break watch
				}
			}
			// An export that writes the target itself (as before issue 8)
			// is killed as it passes the threshold there: the target must
			// then still be whole, which in-place writing cannot give.
			if fi, err := os.Stat(target); err == nil && fi.Size() != int64(len(old)) && fi.Size() >= threshold {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				atTarget++
				break watch
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatalf("round %d: the target is gone: %v", round, err)
		}
		if !bytes.Equal(got, old) && !wholeExport(got, sessions) {
			t.Fatalf("round %d: the target holds %d bytes that are neither the old export nor a whole new one", round, len(got))
		}
		for _, tmp := range temporaries(t, folder) {
			os.Remove(tmp) // what a kill leaves: hidden, never the target
		}
	}
	t.Logf("%d rounds: %d killed mid-write, %d killed once the target had changed, %d finished first; the target was whole every time", rounds, killed, atTarget, finished)
	if killed+atTarget == 0 {
		t.Errorf("no round killed the export while it wrote: the test proved nothing")
	}
}

// temporaries lists the paths of the export's temporary files in folder.
func temporaries(t *testing.T, folder string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(folder, ".backup.jsonl.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// wholeExport reports whether b is a complete export of n sessions: n
// lines, each a JSON object with its messages.
func wholeExport(b []byte, n int) bool {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	lines := 0
	for sc.Scan() {
		var rec struct {
			ID       string `json:"id"`
			Messages []any  `json:"messages"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.ID == "" || len(rec.Messages) != 20 {
			return false
		}
		lines++
	}
	return sc.Err() == nil && lines == n && bytes.HasSuffix(b, []byte("\n"))
}
