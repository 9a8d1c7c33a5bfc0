//go:build linux

package faults

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestDestructiveCommandsWithoutATerminal: prune, delete and clear with
// /dev/null as stdin (a systemd unit, cron, `ssh -n`, `nohup`) go ahead
// without asking, as with any stdin that is not a terminal: nobody is there
// to answer. /dev/null is a character device, as a terminal is, so only
// asking the terminal driver tells them apart. On a pseudo-terminal the
// same commands still ask, and a no changes nothing.
func TestDestructiveCommandsWithoutATerminal(t *testing.T) {
	e := newEnv(t)
	good := exampleStore(t, e)
	fresh := func(t *testing.T) string {
		db := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(db, good, 0o600); err != nil {
			t.Fatal(err)
		}
		return db
	}
	devNull := func(t *testing.T) *os.File {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	// onStdin runs args with stdin as the binary's own standard input.
	onStdin := func(t *testing.T, stdin io.Reader, args ...string) result {
		t.Helper()
		_, wait := e.launch(t, stdin, args...)
		return wait()
	}
	decode := func(t *testing.T, r result, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
			t.Fatalf("%v: %s", err, r)
		}
	}
	sessions := func(t *testing.T, db string) int {
		t.Helper()
		var rows []json.RawMessage
		decode(t, e.must(t, "--db", db, "--json", "sessions", "--children", "--limit", "1000"), &rows)
		return len(rows)
	}
	messages := func(t *testing.T, db string) int {
		t.Helper()
		var s struct {
			Session struct {
				MessageCount int `json:"message_count"`
			}
		}
		decode(t, e.must(t, "--db", db, "--json", "show", exampleID), &s)
		return s.Session.MessageCount
	}
	prunable := func(t *testing.T, db string) int {
		t.Helper()
		var d struct {
			WouldPrune int `json:"would_prune"`
		}
		decode(t, e.must(t, "--db", db, "--json", "prune", "--older-than", "1", "--dry-run"), &d)
		return d.WouldPrune
	}

	t.Run("prune </dev/null", func(t *testing.T) {
		db := fresh(t)
		before, doomed := sessions(t, db), prunable(t, db)
		if doomed == 0 {
			t.Fatal("the example store has nothing to prune: the test proves nothing")
		}
		r := onStdin(t, devNull(t), "--db", db, "prune", "--older-than", "1")
		if r.Code != 0 || strings.Contains(r.Stderr, "[y/N]") {
			t.Fatalf("prune </dev/null: %s\nwant it done without a question", r)
		}
		if n := sessions(t, db); n != before-doomed {
			t.Errorf("%d sessions left, want %d", n, before-doomed)
		}
	})
	t.Run("delete </dev/null", func(t *testing.T) {
		db := fresh(t)
		before := sessions(t, db)
		if r := onStdin(t, devNull(t), "--db", db, "delete", exampleID); r.Code != 0 || strings.Contains(r.Stderr, "[y/N]") {
			t.Fatalf("delete </dev/null: %s\nwant it done without a question", r)
		}
		if n := sessions(t, db); n != before-1 {
			t.Errorf("%d sessions left, want %d", n, before-1)
		}
	})
	t.Run("clear </dev/null", func(t *testing.T) {
		db := fresh(t)
		if messages(t, db) == 0 {
			t.Fatal("the example session has no messages: the test proves nothing")
		}
		if r := onStdin(t, devNull(t), "--db", db, "clear", exampleID); r.Code != 0 || strings.Contains(r.Stderr, "[y/N]") {
			t.Fatalf("clear </dev/null: %s\nwant it done without a question", r)
		}
		if n := messages(t, db); n != 0 {
			t.Errorf("%d messages left, want none", n)
		}
	})

	t.Run("a terminal is asked", func(t *testing.T) {
		db := fresh(t)
		before, doomed := sessions(t, db), prunable(t, db)
		cases := []struct {
			args []string
			done func() bool
		}{
			{[]string{"prune", "--older-than", "1"}, func() bool { return sessions(t, db) == before-doomed }},
			{[]string{"clear", exampleID}, func() bool { return messages(t, db) == 0 }},
			{[]string{"delete", exampleID}, func() bool { return sessions(t, db) < before-doomed }},
		}
		for _, c := range cases {
			args := append([]string{"--db", db}, c.args...)
			tty, keyboard := testkit.Terminal(t)
			if _, err := keyboard.WriteString("n\n"); err != nil {
				t.Fatal(err)
			}
			r := onStdin(t, tty, args...)
			if r.Code != 6 /* cancelled */ || !strings.Contains(r.Stderr, "[y/N]") || !strings.Contains(r.Stderr, "not confirmed") || c.done() {
				t.Fatalf("%s answered no on a terminal: %s\nwant the question, a refusal and nothing changed", c.args[0], r)
			}
			if _, err := keyboard.WriteString("y\n"); err != nil {
				t.Fatal(err)
			}
			if r := onStdin(t, tty, args...); r.Code != 0 || !strings.Contains(r.Stderr, "[y/N]") || !c.done() {
				t.Fatalf("%s answered yes on a terminal: %s\nwant the question and the change", c.args[0], r)
			}
		}
	})
}
