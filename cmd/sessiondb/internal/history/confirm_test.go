//go:build linux

package history

import (
	"context"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// onTerminal runs the history commands with a terminal as stdin on which
// answer has been typed, with the clock at pruneNow.
func onTerminal(t *testing.T, answer string, args ...string) clitest.Result {
	t.Helper()
	tty, keyboard := testkit.Terminal(t)
	if answer != "" {
		if _, err := keyboard.WriteString(answer); err != nil {
			t.Fatal(err)
		}
	}
	return clitest.Run(context.Background(), clitest.Options{Stdin: tty, Now: testkit.NewClock(pruneNow).Now}, args, Commands)
}

func sessionCount(t *testing.T, db string) int {
	t.Helper()
	var rows []listed
	mustCLI(t, "--db", db, "--json", "sessions", "--children", "--limit", "100").Decode(t, &rows)
	return len(rows)
}

func messageCount(t *testing.T, db, id string) int64 {
	t.Helper()
	var s struct {
		Session struct {
			MessageCount int64 `json:"message_count"`
		}
	}
	mustCLI(t, "--db", db, "--json", "show", id).Decode(t, &s)
	return s.Session.MessageCount
}

// TestDestructiveCommandsAsk: prune, clear and delete show what they would
// remove on a terminal and act only on a yes; --yes skips the question;
// prune has no default age.
func TestDestructiveCommandsAsk(t *testing.T) {
	t.Run("prune needs --older-than", func(t *testing.T) {
		db := exampleDB(t)
		for _, args := range [][]string{{"prune"}, {"prune", "--yes"}, {"--json", "prune", "--source", "cron"}} {
			r := cliAt(t, pruneNow, append([]string{"--db", db}, args...)...)
			if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "--older-than is required") {
				t.Errorf("%v: exit %d, stderr %q", args, r.Code, r.Stderr)
			}
		}
		if n := sessionCount(t, db); n != exampleSessions {
			t.Errorf("%d sessions left, want all %d", n, exampleSessions)
		}
	})
	t.Run("prune lists and asks", func(t *testing.T) {
		db := exampleDB(t)
		r := onTerminal(t, "n\n", "--db", db, "prune", "--older-than", "90d")
		if r.Code != cli.ExitCancelled || !strings.Contains(r.Stderr, "not confirmed") || !strings.Contains(r.Stderr, "--yes") {
			t.Fatalf("answer no: exit %d, stderr %q", r.Code, r.Stderr)
		}
		for _, want := range []string{dockerID, "Fix Docker build", "Lisbon weekend", "Delete these 6 session(s)", "[y/N]"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("the question does not show %q:\n%s", want, r.Stderr)
			}
		}
		if n := sessionCount(t, db); n != exampleSessions {
			t.Fatalf("%d sessions left after a no, want %d", n, exampleSessions)
		}
		r = onTerminal(t, "y\n", "--db", db, "prune", "--older-than", "90d")
		if r.Code != 0 || !strings.Contains(r.Stdout, "pruned 6 session(s)") {
			t.Fatalf("answer yes: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
		}
		if n := sessionCount(t, db); n != exampleSessions-6 {
			t.Errorf("%d sessions left, want %d", n, exampleSessions-6)
		}
	})
	t.Run("prune --yes on a terminal does not ask", func(t *testing.T) {
		db := exampleDB(t)
		r := onTerminal(t, "", "--db", db, "prune", "--older-than", "90d", "--yes")
		if r.Code != 0 || strings.Contains(r.Stderr, "[y/N]") || sessionCount(t, db) != exampleSessions-6 {
			t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
		}
	})
	t.Run("clear asks", func(t *testing.T) {
		db := exampleDB(t)
		before := messageCount(t, db, cronID)
		r := onTerminal(t, "no\n", "--db", db, "clear", cronID)
		if r.Code != cli.ExitCancelled || !strings.Contains(r.Stderr, "Backup check 2026-07-01") || !strings.Contains(r.Stderr, "Delete the 5 message(s)") {
			t.Fatalf("answer no: exit %d, stderr %q", r.Code, r.Stderr)
		}
		if n := messageCount(t, db, cronID); n != before {
			t.Fatalf("%d messages after a no, want %d", n, before)
		}
		if r := onTerminal(t, "yes\n", "--db", db, "clear", cronID); r.Code != 0 || messageCount(t, db, cronID) != 0 {
			t.Errorf("answer yes: exit %d, stderr %q", r.Code, r.Stderr)
		}
	})
	t.Run("delete asks", func(t *testing.T) {
		db := exampleDB(t)
		if r := onTerminal(t, "\n", "--db", db, "delete", dockerID); r.Code != cli.ExitCancelled || !strings.Contains(r.Stderr, "Fix Docker build") {
			t.Fatalf("no answer: exit %d, stderr %q", r.Code, r.Stderr)
		}
		if r := onTerminal(t, "", "--db", db, "delete", dockerID, "--yes"); r.Code != 0 || sessionCount(t, db) != exampleSessions-1 {
			t.Errorf("--yes: exit %d, stderr %q", r.Code, r.Stderr)
		}
	})
}
