package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// onTerminal runs bench with a terminal as stdout (what a person at a
// shell has) and returns what reached the screen and stderr.
func onTerminal(t *testing.T, args ...string) (code int, screen, errOut string) {
	t.Helper()
	tty, master := testkit.Terminal(t)
	read := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil || bytes.Contains(b.Bytes(), []byte("\x04END")) {
				break
			}
		}
		read <- b.String()
	}()
	var e testkit.Buffer
	code = cli.Run(context.Background(), cli.New(strings.NewReader(""), tty, &e), args, Commands)
	tty.WriteString("\x04END\n")
	select {
	case screen = <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output never ended")
	}
	screen = strings.ReplaceAll(strings.TrimSuffix(screen, "\x04END\r\n"), "\r\n", "\n")
	return code, screen, e.String()
}

// TestBenchOnATerminal: on a terminal bench prints a readable summary and
// writes the JSON to a file it names; --json, a pipe or a file as stdout
// get the JSON itself; --output writes the file in every case.
func TestBenchOnATerminal(t *testing.T) {
	wl := tinyWorkload(t)
	here := t.TempDir()
	t.Chdir(here)
	base := []string{"bench", "--workload", wl, "--dir", t.TempDir(), "--quiet", "--group-commit-messages", "32"}

	code, screen, errOut := onTerminal(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(here, "sessiondb-bench-*.json"))
	if len(files) != 1 {
		t.Fatalf("JSON files in the current folder: %v, want one\n%s", files, screen)
	}
	for _, want := range []string{"sessiondb bench on sqlite", "append", "40 messages one call at a time", "search", "6 queries (1 found nothing)",
		"concurrent", "2 processes", "the full result (JSON, every query's figures): " + files[0] + "\n"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the summary lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "{") || strings.Count(screen, "\n") > 20 {
		t.Errorf("the terminal got JSON, or more than a summary:\n%s", screen)
	}
	checkResultFile(t, files[0])
	os.Remove(files[0])

	code, screen, _ = onTerminal(t, append(base, "--json")...)
	var res map[string]any
	if err := json.Unmarshal([]byte(screen), &res); code != 0 || err != nil || res["impl"] != "sessiondb" {
		t.Errorf("--json on a terminal: exit %d, %v:\n%.300s", code, err, screen)
	}
	if files, _ := filepath.Glob(filepath.Join(here, "*.json")); len(files) != 0 {
		t.Errorf("--json wrote %v as well", files)
	}

	out := filepath.Join(t.TempDir(), "result.json")
	code, stdout, _ := benchRunCLI(t, append(base, "--output", out)...)
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil {
		t.Errorf("--output with stdout a pipe: exit %d, stdout not the JSON (%v)", code, err)
	}
	checkResultFile(t, out)
}

// checkResultFile checks that path holds bench's JSON result, private.
func checkResultFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var res map[string]any
	b, _ := io.ReadAll(f)
	if err := json.Unmarshal(b, &res); err != nil || res["impl"] != "sessiondb" || res["search"] == nil {
		t.Errorf("%s is not the result: %v", path, err)
	}
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode %v, want 0600", path, fi.Mode().Perm())
	}
}
