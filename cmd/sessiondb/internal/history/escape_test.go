package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// hostileDB is the example store with hostile text planted where another
// program (a Hermes, an agent, an attacker with write access) could put
// it: the Docker session's title, model and end reason, its first user
// message, the first answer and its reasoning, a tool name and a tool call.
func hostileDB(t *testing.T) string {
	t.Helper()
	db := exampleDB(t)
	sqlitetest.ExecFile(t, db, "UPDATE sessions SET title = ?, model = ?, end_reason = ? WHERE id = ?", "Docker "+clitest.Hostile, "model"+clitest.Hostile, "reason"+clitest.Hostile, dockerID)
	first := "(SELECT MIN(id) FROM messages WHERE session_id = ? AND role = ?)"
	sqlitetest.ExecFile(t, db, "UPDATE messages SET content = ? WHERE id = "+first, "pwnedword "+clitest.Hostile+"\r\nsecond line\ttabbed", dockerID, "user")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET reasoning = ?, content = ? WHERE id = "+first, "thinking "+clitest.Hostile, "context "+clitest.Hostile, dockerID, "assistant")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET tool_name = ? WHERE id = "+first, "tool"+clitest.Hostile, dockerID, "tool")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET tool_calls = ? WHERE id = (SELECT MIN(id) FROM messages WHERE session_id = ? AND tool_calls IS NOT NULL)",
		`[{"id": "call`+strings.ReplaceAll(strings.ReplaceAll(clitest.Hostile, "\x1b", `\u001b`), "\x07", `\u0007`)+`", "type": "function", "function": {"name": "fn\u001b[2J", "arguments": "{\"a\": \"\u001b]0;x\u0007\"}"}}]`, dockerID)
	return db
}

// TestHumanOutputEscapesStoredText runs every history command that prints
// stored text on a store holding terminal escapes and bidi overrides: the
// human output shows them escaped, --json keeps them exact.
func TestHumanOutputEscapesStoredText(t *testing.T) {
	db := hostileDB(t)
	commands := []struct {
		name string
		args []string
		want string // the escaped form that must show (stdout or stderr)
	}{
		{"sessions", []string{"sessions"}, "Docker " + clitest.Plain},
		{"sessions --children", []string{"sessions", "--children"}, "model" + clitest.Plain},
		{"show", []string{"show", dockerID}, clitest.Plain},
		{"show --last", []string{"show", dockerID, "--last", "50", "--full"}, "tool" + clitest.Plain},
		{"search", []string{"search", "pwnedword"}, clitest.Plain},
		{"search context", []string{"search", "WORKDIR"}, "context " + clitest.Plain},
		{"title", []string{"title", dockerID}, clitest.Plain},
		{"lineage", []string{"lineage", dockerID}, clitest.Plain},
		{"stats", []string{"stats"}, "model" + clitest.Plain},
		{"stats top sessions' titles", []string{"stats"}, "Docker " + clitest.Plain + "  " + dockerID},
		{"prune --dry-run", []string{"prune", "--older-than", "1", "--dry-run"}, clitest.Plain},
		{"end (already ended)", []string{"end", dockerID}, "reason" + clitest.Plain},
	}
	for _, tc := range commands {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"--db", db}, tc.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			clitest.AssertInert(t, "stdout", r.Stdout)
			clitest.AssertInert(t, "stderr", r.Stderr)
			if !strings.Contains(r.Stdout+r.Stderr, tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, r.Stdout, r.Stderr)
			}
		})
	}
	t.Run("show keeps lines and tabs, drops the CR of CRLF", func(t *testing.T) {
		out := mustCLI(t, "--db", db, "show", dockerID).Stdout
		if !strings.Contains(out, "pwnedword "+clitest.Plain+"\n  second line\ttabbed") {
			t.Errorf("transcript:\n%s", out)
		}
	})
	t.Run("--json is exact", func(t *testing.T) {
		var shown struct {
			Session  struct{ Title string }
			Messages []struct {
				Content  *string
				ToolName *string `json:"tool_name"`
			}
		}
		mustCLI(t, "--db", db, "--json", "show", dockerID).Decode(t, &shown)
		if shown.Session.Title != "Docker "+clitest.Hostile || deref(shown.Messages[0].Content) != "pwnedword "+clitest.Hostile+"\r\nsecond line\ttabbed" {
			t.Errorf("JSON changed the stored text: %q / %q", shown.Session.Title, deref(shown.Messages[0].Content))
		}
		var rows []listed
		mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100").Decode(t, &rows)
		found := false
		for _, r := range rows {
			found = found || deref(r.Title) == "Docker "+clitest.Hostile
		}
		if !found {
			t.Errorf("sessions --json lost the exact title: %+v", rows)
		}
	})
}

// TestErrorsAndPathsAreEscaped covers text that reaches the terminal by
// other ways than a listing: an error quoting stored or given text, a
// store path, an import line's session id.
func TestErrorsAndPathsAreEscaped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x"+clitest.Hostile)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "state.db")
	r := runCLI(t, "", "--db", db, "sessions")
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "x"+clitest.Plain) {
		t.Errorf("missing store: exit %d, stderr %q", r.Code, r.Stderr)
	}
	clitest.AssertInert(t, "missing store error", r.Stderr)

	mustCLI(t, "--db", db, "import", examplesFile)
	for _, args := range [][]string{{"doctor"}, {"--read-only", "doctor"}} {
		r := runCLI(t, "", append([]string{"--db", db}, args...)...)
		clitest.AssertInert(t, "doctor", r.Stdout+r.Stderr)
		if !strings.Contains(r.Stdout, "x"+clitest.Plain) {
			t.Errorf("doctor does not name the store:\n%s", r.Stdout)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	line := `{"id": "id\u001b]0;PWNED\u0007", "source": "cli", "parent_session_id": 7}` + "\n"
	if err := os.WriteFile(bad, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(context.Background(), clitest.Options{}, []string{"--db", db, "import", bad}, Commands)
	if r.Code != cli.ExitInvalid {
		t.Fatalf("import of a bad line: exit %d: %s", r.Code, r.Stderr)
	}
	clitest.AssertInert(t, "import errors", r.Stderr)
}
