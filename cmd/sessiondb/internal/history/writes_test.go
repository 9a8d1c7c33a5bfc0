package history

import (
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// archivedFlags returns the archived flag of each session of the file at
// db, read past every store.
func archivedFlags(t *testing.T, db string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range sqlitetest.QueryFile(t, db, "SELECT id, archived FROM sessions") {
		out[r[0].(string)] = r[1].(int64)
	}
	return out
}

// archive and unarchive set Hermes' archived flag on a session's whole
// compression lineage, named by id, prefix or title; a schema-6 file has
// no such column and is refused whole.
func TestArchiveCommands(t *testing.T) {
	db := hermes21File(t, "state.db")
	var a struct {
		ID       string
		Archived bool
		Sessions int64
	}
	mustCLI(t, "--db", db, "--json", "archive", "Refactor parser #2").Decode(t, &a)
	if a.ID != "h21-lineage-mid" || !a.Archived || a.Sessions != 3 {
		t.Fatalf("archive by title: %+v, want h21-lineage-mid and its lineage of 3", a)
	}
	flags := archivedFlags(t, db)
	for _, id := range []string{"h21-lineage-root", "h21-lineage-mid", "h21-lineage-tip"} {
		if flags[id] != 1 {
			t.Errorf("%s archived = %d, want 1", id, flags[id])
		}
	}
	if flags["h21-main"] != 0 || flags["h21-archived-root"] != 1 {
		t.Errorf("other sessions changed: %v", flags)
	}
	r := mustCLI(t, "--db", db, "unarchive", "h21-lineage-t")
	if !strings.Contains(r.Stdout, "unarchived h21-lineage-tip with its compression lineage (3 sessions)") {
		t.Errorf("unarchive said %q", r.Stdout)
	}
	for _, id := range []string{"h21-lineage-root", "h21-lineage-mid", "h21-lineage-tip"} {
		if archivedFlags(t, db)[id] != 0 {
			t.Errorf("%s still archived", id)
		}
	}

	v6 := exampleDB(t)
	before := sqlitetest.QueryFile(t, v6, "SELECT sql FROM sqlite_master ORDER BY name")
	r = runCLI(t, "", "--db", v6, "archive", dockerID)
	if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "no archived column") {
		t.Errorf("archive on schema 6: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if after := sqlitetest.QueryFile(t, v6, "SELECT sql FROM sqlite_master ORDER BY name"); len(after) != len(before) {
		t.Errorf("the refused archive changed the schema: %d objects, had %d", len(after), len(before))
	}
	if r := runCLI(t, "", "--db", db, "--read-only", "archive", "h21-main"); r.Code != cli.ExitInvalid {
		t.Errorf("archive --read-only: exit %d, want %d", r.Code, cli.ExitInvalid)
	}
}

// delete takes a session's delegate subagents with it, names them when it
// asks and when it is done, and orphans its other children.
func TestDeleteTakesDelegates(t *testing.T) {
	db := hermes21File(t, "state.db")
	r := onTerminal(t, "no\n", "--db", db, "delete", "h21-main")
	if r.Code != cli.ExitCancelled || !strings.Contains(r.Stderr, "its 2 delegate subagent session(s)") || !strings.Contains(r.Stderr, "h21-delegate, h21-delegate-nested") {
		t.Fatalf("answer no: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if n := len(archivedFlags(t, db)); n != 19 {
		t.Fatalf("%d sessions after a no, want the 19", n)
	}
	var del struct {
		ID        string
		Deleted   bool
		Delegates []string
	}
	mustCLI(t, "--db", db, "--json", "delete", "h21-main").Decode(t, &del)
	if !del.Deleted || !slices.Equal(del.Delegates, []string{"h21-delegate", "h21-delegate-nested"}) {
		t.Errorf("delete --json: %+v", del)
	}
	left := archivedFlags(t, db)
	for _, id := range []string{"h21-main", "h21-delegate", "h21-delegate-nested"} {
		if _, ok := left[id]; ok {
			t.Errorf("%s left", id)
		}
	}
	for _, r := range sqlitetest.QueryFile(t, db, "SELECT id FROM sessions WHERE id IN ('h21-branch', 'h21-branch-legacy', 'h21-untagged-child') AND parent_session_id IS NULL") {
		delete(left, r[0].(string))
	}
	for _, id := range []string{"h21-branch", "h21-branch-legacy", "h21-untagged-child"} {
		if _, ok := left[id]; ok {
			t.Errorf("%s not orphaned", id)
		}
	}
	r = mustCLI(t, "--db", db, "delete", "h21-lineage-root")
	if strings.Contains(r.Stdout, "delegate") {
		t.Errorf("a delete without delegates names some: %q", r.Stdout)
	}
}
