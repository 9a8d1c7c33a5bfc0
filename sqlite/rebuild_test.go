package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// versionFile makes a state.db of schema version v whose full-text index is
// damaged (a row it holds that no message has, or a stored copy edited
// behind it), with the words "kubernetes" (v1 to 10) or "flamingo" (11 on)
// in its messages: v1 to 6 as Hermes at that version left it
// (buildFixture); 7 to 9 the same tables under the newer number; 10 with
// schema 10's external-content trigram table and its triggers; 11 to 21
// the schema-21 fixture Hermes wrote, under each number (the full-text
// tables have had that shape since 11). It returns the path and the word.
func versionFile(t *testing.T, v int) (string, string) {
	t.Helper()
	if v >= 11 {
		path := hermes21Copy(t)
		sqlitetest.ExecFile(t, path, fmt.Sprintf("UPDATE schema_version SET version = %d", v))
		for _, tbl := range hermesFTSTables {
			sqlitetest.ExecFile(t, path, "UPDATE "+tbl+"_content SET c0 = 'edited behind the index' WHERE id = (SELECT min(id) FROM "+tbl+"_content)")
		}
		return path, "flamingo"
	}
	path := buildFixture(t, min(v, 6), true)
	db := sqlitetest.Open(t, path)
	defer db.Close()
	stmts := []string{"INSERT INTO messages_fts(rowid, content) VALUES (424242, 'phantom words')"}
	if v >= 7 {
		stmts = append(stmts, fmt.Sprintf("UPDATE schema_version SET version = %d", v))
	}
	if v == 10 {
		stmts = append(stmts,
			"CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, content=messages, content_rowid=id, tokenize='trigram')",
			"INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('rebuild')",
			"CREATE TRIGGER messages_fts_trigram_insert AFTER INSERT ON messages BEGIN INSERT INTO messages_fts_trigram(rowid, content) VALUES (new.id, new.content); END",
			"CREATE TRIGGER messages_fts_trigram_delete AFTER DELETE ON messages BEGIN INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content) VALUES('delete', old.id, old.content); END",
			"INSERT INTO messages_fts_trigram(rowid, content) VALUES (424242, 'phantom words')")
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	return path, "kubernetes"
}

// ftsTablesSQL lists a file's FTS5 tables.
const ftsTablesSQL = "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"

// ftsChecks runs FTS5's integrity-check of each full-text table of the
// file, against its text too (rank 1: an external-content table's index
// is checked against the messages), with Python's SQLite (3.40) when old,
// else with this one, and returns the failures.
func ftsChecks(t *testing.T, path string, old bool) []string {
	t.Helper()
	if old {
		out := oldSQLite(t, path, `for (t,) in c.execute("`+ftsTablesSQL+`").fetchall():
    try:
        c.execute(f"INSERT INTO {t}({t}, rank) VALUES('integrity-check', 1)")
    except sqlite3.DatabaseError as e:
        print(t + ":", e)`)
		if out = strings.TrimSpace(out); out != "" {
			return strings.Split(out, "\n")
		}
		return nil
	}
	var bad []string
	for _, r := range sqlitetest.QueryFile(t, path, ftsTablesSQL) {
		tbl := r[0].(string)
		db := sqlitetest.Open(t, path)
		if _, err := db.Exec("INSERT INTO " + tbl + "(" + tbl + ", rank) VALUES('integrity-check', 1)"); err != nil {
			bad = append(bad, tbl+": "+err.Error())
		}
		db.Close()
	}
	return bad
}

// TestRebuildFTSOnEveryVersion: doctor --rebuild-fts's rebuild works on a
// file of every schema version from 1 to 21: a damaged index comes out
// whole for this SQLite and for SQLite 3.40 (Python's), each full-text
// table keeps its definition, and search finds the messages' words and
// not what the damage added. On 21, the multimodal rows Hermes indexed
// with 3.40 are indexed without their NUL byte, so both SQLites read them
// alike, and Hermes' own delete of them (3.40, through its triggers)
// leaves the index whole.
func TestRebuildFTSOnEveryVersion(t *testing.T) {
	for v := 1; v <= 21; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			ctx := context.Background()
			path, word := versionFile(t, v)
			requireOldSQLite(t, path)
			if bad := ftsChecks(t, path, false); len(bad) == 0 {
				t.Fatal("the damage did not show")
			}
			defs := func() string {
				return fmt.Sprint(sqlitetest.QueryFile(t, path, "SELECT name, sql FROM sqlite_master WHERE name IN ('messages_fts', 'messages_fts_trigram') OR type = 'trigger' AND name LIKE 'messages_fts%' ORDER BY name"))
			}
			before := defs()
			s := openTestStore(t, path, Options{})
			if err := s.CanRebuildFTS(); err != nil {
				t.Fatalf("CanRebuildFTS: %v", err)
			}
			if err := s.RebuildFTS(ctx); err != nil {
				t.Fatalf("RebuildFTS: %v", err)
			}
			if bad := ftsChecks(t, path, false); len(bad) > 0 {
				t.Errorf("this SQLite's checks after the rebuild: %v", bad)
			}
			if got := sqlitetest.QueryFile(t, path, "PRAGMA integrity_check"); fmt.Sprint(got) != "[[ok]]" {
				t.Errorf("integrity_check after the rebuild: %v", got)
			}
			if err := s.FTSIntegrityCheck(ctx); err != nil {
				t.Errorf("FTSIntegrityCheck after the rebuild: %v", err)
			}
			if after := defs(); v > 6 && after != before {
				t.Errorf("definitions changed:\n%s\nwere\n%s", after, before)
			}
			hits, err := s.SearchMessages(ctx, word, sessiondb.SearchFilter{})
			if err != nil || len(hits) == 0 {
				t.Errorf("search %q after the rebuild: %v, %v", word, hits, err)
			}
			if hits, err := s.SearchMessages(ctx, "phantom", sessiondb.SearchFilter{}); err != nil || len(hits) != 0 {
				t.Errorf("search of the damage's word: %v, %v", hits, err)
			}
			s.Close()
			if bad := ftsChecks(t, path, true); len(bad) > 0 {
				t.Errorf("SQLite 3.40's checks after the rebuild: %v", bad)
			}
			if v == 21 {
				oldSQLite(t, path, "c.execute(\"DELETE FROM messages WHERE session_id = 'h21-multimodal'\")")
				if bad := ftsChecks(t, path, true); len(bad) > 0 {
					t.Errorf("SQLite 3.40's checks after its own delete of the multimodal rows: %v", bad)
				}
				if bad := ftsChecks(t, path, false); len(bad) > 0 {
					t.Errorf("this SQLite's checks after SQLite 3.40's delete: %v", bad)
				}
			}
		})
	}
}

// TestRebuildFTSRefusesWhatItCannotMakeAlike: schema 10's trigram table
// indexes the messages' own text, so with a message holding a NUL byte no
// rebuild suits both SQLites; it is refused, invalid, and the index is
// left as it was.
func TestRebuildFTSRefusesWhatItCannotMakeAlike(t *testing.T) {
	ctx := context.Background()
	path, _ := versionFile(t, 10)
	sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old1', 'user', char(0) || 'json:[]', 1003)")
	s := openTestStore(t, path, Options{})
	err := s.RebuildFTS(ctx)
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "3.49.2") || !strings.Contains(err.Error(), "nothing was rebuilt") {
		t.Fatalf("RebuildFTS = %v; want invalid, naming the SQLite versions", err)
	}
	if bad := ftsChecks(t, path, false); len(bad) == 0 {
		t.Error("the refused rebuild repaired the index")
	}
}
