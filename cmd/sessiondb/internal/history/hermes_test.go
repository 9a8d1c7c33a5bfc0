package history

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// newerHermesDB is the example store turned into what a newer Hermes
// (schema 21) leaves: an archived flag on sessions with the Lisbon chat
// archived, and a multimodal message ("\x00json:" + a list of parts) in the
// Docker session.
func newerHermesDB(t *testing.T) string {
	t.Helper()
	db := exampleDB(t)
	for _, q := range []string{
		"UPDATE schema_version SET version = 21",
		"ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0",
		"UPDATE sessions SET archived = 1 WHERE id = '20260509_081244_a3f9e0'",
	} {
		sqlitetest.ExecFile(t, db, q)
	}
	sqlitetest.ExecFile(t, db, "UPDATE messages SET content = ? WHERE id = (SELECT MIN(id) FROM messages WHERE session_id = ?)",
		"\x00json:"+`[{"type": "text", "text": "what is wrong with this build?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]`, dockerID)
	return db
}

// TestNewerHermesFiles: sessions hides what Hermes archived unless
// --archived (then marked), show renders multimodal content as text and
// names its other parts while --json keeps it exact.
func TestNewerHermesFiles(t *testing.T) {
	db := newerHermesDB(t)
	const lisbon = "20260509_081244_a3f9e0"
	var rows []struct {
		ID       string
		Archived int64
	}
	mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100").Decode(t, &rows)
	for _, r := range rows {
		if r.ID == lisbon {
			t.Errorf("sessions lists the archived session %s", lisbon)
		}
	}
	if len(rows) != 6 { // 8 sessions, one archived, one a continuation
		t.Errorf("sessions lists %d rows, want 6", len(rows))
	}
	mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100", "--archived").Decode(t, &rows)
	found := false
	for _, r := range rows {
		found = found || (r.ID == lisbon && r.Archived == 1)
	}
	if !found || len(rows) != 7 {
		t.Errorf("sessions --archived: %+v; want %s among 7, marked archived", rows, lisbon)
	}
	text := mustCLI(t, "--db", db, "sessions", "--archived").Stdout
	if !strings.Contains(text, "[archived] Lisbon weekend") {
		t.Errorf("the table does not mark the archived session:\n%s", text)
	}

	show := mustCLI(t, "--db", db, "show", dockerID).Stdout
	if !strings.Contains(show, "  what is wrong with this build?\n  [image: image/png]\n") || strings.Contains(show, "json:") || strings.Contains(show, "iVBOR") {
		t.Errorf("show does not render the multimodal message:\n%s", show)
	}
	// --json gives the parts, as Hermes' get_messages does, whole.
	var exact struct {
		Messages []struct{ Content any }
	}
	mustCLI(t, "--db", db, "--json", "show", dockerID).Decode(t, &exact)
	want := []any{map[string]any{"type": "text", "text": "what is wrong with this build?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}}}
	if c := exact.Messages[0].Content; !reflect.DeepEqual(c, want) {
		t.Errorf("show --json gives the multimodal content as %#v, want its parts %#v", c, want)
	}
}

// TestDoctorAdvisesOnlyWhatWorks: doctor advises --rebuild-fts where it
// runs, and the rebuild then leaves a file doctor finds sound; a newer
// Hermes' file without a search index is advice (Hermes builds it), and
// the rebuild refuses there, saying what works.
func TestDoctorAdvisesOnlyWhatWorks(t *testing.T) {
	drop := func(db string) {
		for _, q := range []string{"DROP TRIGGER messages_fts_insert", "DROP TRIGGER messages_fts_delete", "DROP TRIGGER messages_fts_update", "DROP TABLE messages_fts"} {
			sqlitetest.ExecFile(t, db, q)
		}
	}
	// Index pages lost: the index's own check fails.
	damage := func(db string) {
		sqlitetest.ExecFile(t, db, "DELETE FROM messages_fts_data WHERE id > 10")
	}
	for _, tc := range []struct {
		name    string
		db      func() string
		doctor  int    // exit status of doctor
		advice  string // in what doctor reports
		rebuild int    // exit status of doctor --rebuild-fts
	}{
		// No index is advice, not a problem: Hermes without FTS5 makes none.
		{"newer file without messages_fts", func() string { db := newerHermesDB(t); drop(db); return db }, 0, "run Hermes once", cli.ExitInvalid},
		{"newer file with a damaged index", func() string { db := newerHermesDB(t); damage(db); return db }, cli.ExitInternal, "sessiondb doctor --rebuild-fts", 0},
		{"our file with a damaged index", func() string { db := exampleDB(t); damage(db); return db }, cli.ExitInternal, "sessiondb doctor --rebuild-fts", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.db()
			r := runCLI(t, "", "--db", db, "doctor")
			if r.Code != tc.doctor || !strings.Contains(r.Stdout, tc.advice) {
				t.Fatalf("doctor: exit %d, want %d and %q\n%s%s", r.Code, tc.doctor, tc.advice, r.Stdout, r.Stderr)
			}
			if tc.rebuild != 0 && strings.Contains(r.Stdout, "--rebuild-fts") {
				t.Errorf("doctor advises --rebuild-fts, which refuses here:\n%s", r.Stdout)
			}
			rb := runCLI(t, "", "--db", db, "doctor", "--rebuild-fts")
			if rb.Code != tc.rebuild {
				t.Fatalf("doctor --rebuild-fts: exit %d, want %d\n%s%s", rb.Code, tc.rebuild, rb.Stdout, rb.Stderr)
			}
			if tc.rebuild != 0 {
				if !strings.Contains(rb.Stderr, tc.advice) {
					t.Errorf("the refusal does not say what works: %s", rb.Stderr)
				}
				return
			}
			// The advice worked: the file checks clean.
			if after := runCLI(t, "", "--db", db, "doctor"); after.Code != 0 || strings.Contains(after.Stdout, "problem: ") {
				t.Errorf("doctor after --rebuild-fts: exit %d\n%s%s", after.Code, after.Stdout, after.Stderr)
			}
		})
	}
}

// TestDoctorListsAdditions: doctor names what sessiondb added to the file
// it checks, in text and --json, as the file holds it: on a file
// sessiondb made, the last-activity table among the rest; after one is
// dropped behind its back, not that one.
func TestDoctorListsAdditions(t *testing.T) {
	db := exampleDB(t)
	var rep struct {
		Additions []sessiondb.Addition `json:"additions"`
	}
	doctorJSON := func(flags ...string) {
		t.Helper()
		r := runCLI(t, "", append(append([]string{"--db", db}, flags...), "doctor", "--json")...)
		rep.Additions = nil
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s%s", err, r.Stdout, r.Stderr)
		}
	}
	doctorJSON()
	has := func(kind, name string) bool {
		for _, a := range rep.Additions {
			if a.Kind == kind && a.Name == name && a.For != "" {
				return true
			}
		}
		return false
	}
	if !has("table", "sessiondb_last_active") || !has("trigger", "sessiondb_last_active_message_delete") || !has("index", "sessiondb_sessions_roots") {
		t.Errorf("doctor --json additions: %+v", rep.Additions)
	}
	if txt := runCLI(t, "", "--db", db, "doctor").Stdout; !strings.Contains(txt, "additions       ") || !strings.Contains(txt, "table sessiondb_last_active: ") {
		t.Errorf("doctor's text does not list the additions:\n%s", txt)
	}
	// A read-only open, as a writable one adds the index again.
	sqlitetest.ExecFile(t, db, "DROP INDEX sessiondb_sessions_roots")
	doctorJSON("--read-only")
	if has("index", "sessiondb_sessions_roots") {
		t.Errorf("doctor lists an index the file no longer holds: %+v", rep.Additions)
	}
}

// TestNoAdditionsFlag: --no-additions on the commands that open a store
// leaves a v6 file holding only Hermes' schema as it was: a title set, a session
// set, a search, a listing and doctor add nothing;
// doctor lists no additions.
func TestNoAdditionsFlag(t *testing.T) {
	db := exampleDB(t)
	stripAdditions(t, db)
	schema := func() string {
		return fmt.Sprint(sqlitetest.QueryFile(t, db, "SELECT type, name, sql FROM sqlite_master ORDER BY name"))
	}
	before := schema()
	for _, args := range [][]string{
		{"title", "20260509_081244_a3f9e0", "Renamed"},
		{"search", "docker"},
		{"sessions"},
		{"doctor", "--json"},
	} {
		r := runCLI(t, "", append([]string{"--db", db, "--no-additions"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
		}
		if args[0] == "doctor" && !strings.Contains(r.Stdout, `"additions": []`) {
			t.Errorf("doctor lists additions:\n%s", r.Stdout)
		}
	}
	if after := schema(); after != before {
		t.Errorf("--no-additions changed the schema:\n%s\nwas\n%s", after, before)
	}
}

// stripAdditions takes sessiondb's additions out of a v6 store by hand,
// leaving what Hermes' v6 schema holds.
func stripAdditions(t *testing.T, db string) {
	t.Helper()
	var names []string
	for _, r := range sqlitetest.QueryFile(t, db, "SELECT type, name FROM sqlite_master WHERE name LIKE 'sessiondb%' AND type IN ('trigger', 'view', 'index') ORDER BY type = 'trigger' DESC") {
		names = append(names, fmt.Sprintf("DROP %s %s", r[0], r[1]))
	}
	for _, r := range sqlitetest.QueryFile(t, db, "SELECT name FROM sqlite_master WHERE name LIKE 'sessiondb%' AND type = 'table' AND sql LIKE 'CREATE TABLE%'") {
		names = append(names, fmt.Sprintf("DROP TABLE %s", r[0]))
	}
	names = append(names, "DROP INDEX idx_messages_session_id", "DROP TABLE IF EXISTS state_meta")
	for _, q := range names {
		sqlitetest.ExecFile(t, db, q)
	}
}

// TestRemoveAdditionsCommand: doctor --remove-additions --yes (with
// --no-additions) leaves a v6 file's schema as Hermes' v6 schema is, after
// a write added sessiondb's objects again, and says what it removed.
func TestRemoveAdditionsCommand(t *testing.T) {
	db := exampleDB(t)
	stripAdditions(t, db)
	schema := func() string {
		return fmt.Sprint(sqlitetest.QueryFile(t, db, "SELECT type, name, sql FROM sqlite_master ORDER BY name"))
	}
	before := schema()
	mustCLI(t, "--db", db, "title", "20260509_081244_a3f9e0", "Renamed")
	if schema() == before {
		t.Fatal("the write added nothing")
	}
	r := runCLI(t, "", "--db", db, "--no-additions", "doctor", "--remove-additions", "--yes", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"removed_additions"`) || !strings.Contains(r.Stdout, `"additions": []`) {
		t.Fatalf("doctor --remove-additions: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if after := schema(); after != before {
		t.Errorf("after --remove-additions:\n%s\nHermes' v6:\n%s", after, before)
	}
}

// TestSessionsNewerFilters: --archived-only, --cwd (a directory and what
// is below it, not a name that merely starts the same) and --min-messages
// keep what they say, and a negative count is refused.
func TestSessionsNewerFilters(t *testing.T) {
	db := newerHermesDB(t)
	const lisbon = "20260509_081244_a3f9e0"
	sqlitetest.ExecFile(t, db, "ALTER TABLE sessions ADD COLUMN cwd TEXT")
	sqlitetest.ExecFile(t, db, "UPDATE sessions SET cwd = '/home/ana/src/api/cmd' WHERE id = ?", dockerID)
	sqlitetest.ExecFile(t, db, "UPDATE sessions SET cwd = '/home/ana/src/apiary' WHERE id = ?", lisbon)
	ids := func(args ...string) []string {
		var rows []struct{ ID string }
		mustCLI(t, append([]string{"--db", db, "--json", "sessions", "--limit", "100"}, args...)...).Decode(t, &rows)
		out := []string{}
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids("--archived-only"); !reflect.DeepEqual(got, []string{lisbon}) {
		t.Errorf("--archived-only: %v, want [%s]", got, lisbon)
	}
	if got := ids("--cwd", "/home/ana/src/api/", "--archived"); !reflect.DeepEqual(got, []string{dockerID}) {
		t.Errorf("--cwd /home/ana/src/api/: %v, want [%s] (not the apiary session)", got, dockerID)
	}
	var all, many []struct {
		ID           string
		MessageCount int64 `json:"message_count"`
	}
	mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100").Decode(t, &all)
	mustCLI(t, "--db", db, "--json", "sessions", "--limit", "100", "--min-messages", "8").Decode(t, &many)
	want := 0
	for _, r := range all {
		if r.MessageCount >= 8 {
			want++
		}
	}
	if len(many) != want || want == 0 || want == len(all) {
		t.Errorf("--min-messages 8 lists %d of %d sessions, want %d", len(many), len(all), want)
	}
	for _, r := range many {
		if r.MessageCount < 8 {
			t.Errorf("--min-messages 8 lists %s with %d messages", r.ID, r.MessageCount)
		}
	}
	// A /branch child is listed among the roots, and marked.
	sqlitetest.ExecFile(t, db, "UPDATE sessions SET model_config = '{\"_branched_from\": \"x\"}', parent_session_id = ? WHERE id = ?", lisbon, dockerID)
	if text := mustCLI(t, "--db", db, "sessions", "--archived").Stdout; !strings.Contains(text, "[branch] ") {
		t.Errorf("the table does not mark the branch:\n%s", text)
	}
	if r := runCLI(t, "", "--db", db, "sessions", "--min-messages", "-1"); r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "--min-messages") {
		t.Errorf("--min-messages -1: exit %d, %q", r.Code, r.Stderr)
	}
}
