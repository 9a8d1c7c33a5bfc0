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

// hostile retitles the terminal, clears it, and then reverses what follows
// (a right-to-left override); plain is how human output must show it.
const (
	hostile = "\x1b]0;PWNED\x07\x1b[2J\u202eevil"
	plain   = `\x1b]0;PWNED\x07\x1b[2J\u202eevil`
)

// assertInert fails when out holds anything a terminal would act on
// instead of show: C0 controls other than newline and tab, DEL, C1
// controls, bidi and other format characters.
func assertInert(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u2066' || r == '\u200b' {
			lo, hi := max(0, i-40), min(len(out), i+40)
			t.Errorf("%s prints %U raw: …%q…", what, r, out[lo:hi])
			return
		}
	}
}

// hostileDB is the example store with hostile text planted where another
// program (a Hermes, an agent, an attacker with write access) could put
// it: the Docker session's title, model and end reason, its first user
// message, the first answer and its reasoning, a tool name and a tool call.
func hostileDB(t *testing.T) string {
	t.Helper()
	db := exampleDB(t)
	sqlitetest.ExecFile(t, db, "UPDATE sessions SET title = ?, model = ?, end_reason = ? WHERE id = ?", "Docker "+hostile, "model"+hostile, "reason"+hostile, dockerID)
	first := "(SELECT MIN(id) FROM messages WHERE session_id = ? AND role = ?)"
	sqlitetest.ExecFile(t, db, "UPDATE messages SET content = ? WHERE id = "+first, "pwnedword "+hostile+"\r\nsecond line\ttabbed", dockerID, "user")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET reasoning = ?, content = ? WHERE id = "+first, "thinking "+hostile, "context "+hostile, dockerID, "assistant")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET tool_name = ? WHERE id = "+first, "tool"+hostile, dockerID, "tool")
	sqlitetest.ExecFile(t, db, "UPDATE messages SET tool_calls = ? WHERE id = (SELECT MIN(id) FROM messages WHERE session_id = ? AND tool_calls IS NOT NULL)",
		`[{"id": "call`+strings.ReplaceAll(strings.ReplaceAll(hostile, "\x1b", `\u001b`), "\x07", `\u0007`)+`", "type": "function", "function": {"name": "fn\u001b[2J", "arguments": "{\"a\": \"\u001b]0;x\u0007\"}"}}]`, dockerID)
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
		{"sessions", []string{"sessions"}, "Docker " + plain},
		{"sessions --children", []string{"sessions", "--children"}, "model" + plain},
		{"show", []string{"show", dockerID}, plain},
		{"show --last", []string{"show", dockerID, "--last", "50", "--full"}, "tool" + plain},
		{"search", []string{"search", "pwnedword"}, plain},
		{"search context", []string{"search", "WORKDIR"}, "context " + plain},
		{"title", []string{"title", dockerID}, plain},
		{"lineage", []string{"lineage", dockerID}, plain},
		{"stats", []string{"stats"}, "model" + plain},
		{"prune --dry-run", []string{"prune", "--older-than", "1", "--dry-run"}, plain},
		{"end (already ended)", []string{"end", dockerID}, "reason" + plain},
	}
	for _, tc := range commands {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"--db", db}, tc.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			assertInert(t, "stdout", r.Stdout)
			assertInert(t, "stderr", r.Stderr)
			if !strings.Contains(r.Stdout+r.Stderr, tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, r.Stdout, r.Stderr)
			}
		})
	}
	t.Run("show keeps lines and tabs, drops the CR of CRLF", func(t *testing.T) {
		out := mustCLI(t, "--db", db, "show", dockerID).Stdout
		if !strings.Contains(out, "pwnedword "+plain+"\n  second line\ttabbed") {
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
		decode(t, mustCLI(t, "--db", db, "--json", "show", dockerID), &shown)
		if shown.Session.Title != "Docker "+hostile || deref(shown.Messages[0].Content) != "pwnedword "+hostile+"\r\nsecond line\ttabbed" {
			t.Errorf("JSON changed the stored text: %q / %q", shown.Session.Title, deref(shown.Messages[0].Content))
		}
		var rows []listed
		decode(t, mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100"), &rows)
		found := false
		for _, r := range rows {
			found = found || deref(r.Title) == "Docker "+hostile
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
	dir := filepath.Join(t.TempDir(), "x"+hostile)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "state.db")
	r := runCLI(t, "", "--db", db, "sessions")
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "x"+plain) {
		t.Errorf("missing store: exit %d, stderr %q", r.Code, r.Stderr)
	}
	assertInert(t, "missing store error", r.Stderr)

	mustCLI(t, "--db", db, "import", examplesFile)
	for _, args := range [][]string{{"doctor"}, {"--read-only", "doctor"}} {
		r := runCLI(t, "", append([]string{"--db", db}, args...)...)
		assertInert(t, "doctor", r.Stdout+r.Stderr)
		if !strings.Contains(r.Stdout, "x"+plain) {
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
	assertInert(t, "import errors", r.Stderr)
}
