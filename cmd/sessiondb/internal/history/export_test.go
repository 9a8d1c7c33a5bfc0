package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestExportTargetIsReplacedWholeOrNotAtAll: export -o never writes
// through a link or into a folder, and an export that stops part way
// leaves the old file as it was, with no temporary file behind.
func TestExportTargetIsReplacedWholeOrNotAtAll(t *testing.T) {
	db := exampleDB(t)
	dir := t.TempDir()
	planted := testkit.PlantLink(t, dir, "backup.jsonl")
	clitest.Fails(t, []clitest.Failure{
		{Name: "a link at the target", Args: []string{"--db", db, "export", "-o", planted.Link}, Code: cli.ExitInvalid, Want: "symbolic link"},
		{Name: "a folder at the target", Args: []string{"--db", db, "export", "-o", dir}, Code: cli.ExitInvalid, Want: "is a folder"},
		{Name: "a missing folder", Args: []string{"--db", db, "export", "-o", filepath.Join(dir, "none", "x.jsonl")}, Code: cli.ExitInvalid, Want: "cannot write"},
	}, Commands)
	planted.Untouched(t)

	// An export that fails part way (here: the oldest session, written
	// last, holds an infinite cost, which JSON cannot encode) leaves the
	// old file as it was.
	bad := exampleDB(t)
	sqlitetest.ExecFile(t, bad, "UPDATE sessions SET estimated_cost_usd = 9e999 WHERE id = ?", dockerID)
	out := filepath.Join(t.TempDir(), "backup.jsonl")
	old := "old export\n"
	if err := os.WriteFile(out, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "--db", bad, "export", "-o", out)
	if r.Code == 0 {
		t.Fatalf("an export that cannot encode a session exited 0")
	}
	if b, _ := os.ReadFile(out); string(b) != old {
		t.Fatalf("a failed export left %d bytes: %.200q", len(b), b)
	}
	if des, _ := os.ReadDir(filepath.Dir(out)); len(des) != 1 {
		t.Fatalf("a failed export left %d files beside the target", len(des))
	}
	// A complete export replaces the file whole, and leaves nothing else.
	mustCLI(t, "--db", db, "export", "-o", out)
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "\n"); n != exampleSessions || strings.Contains(string(b), old) {
		t.Fatalf("export wrote %d lines (old content kept: %v)", n, strings.Contains(string(b), old))
	}
	if des, _ := os.ReadDir(filepath.Dir(out)); len(des) != 1 {
		t.Fatalf("export left %d files beside the target", len(des))
	}
}
