package sqlite

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// oldSQLite runs a Python script with Python's sqlite3 module on db, to
// play a Hermes whose SQLite is older than 3.49.2 (Debian 12's Python has
// 3.40.1), whose trigram tokenizer stops reading a text at a NUL byte. The
// script gets the database path as db and a connection as c, and its
// printed output is returned. A missing Python, or one linking SQLite
// 3.49.2 or later, fails the test: .ci/run installs Debian's python3.
func oldSQLite(t *testing.T, db, script string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 with its sqlite3 module is needed to play an older SQLite (.ci/run installs it)")
	}
	prelude := "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.isolation_level = None\n"
	out, err := exec.Command(py, "-c", prelude+script+"\nc.close()\n", db).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	return string(out)
}

// requireOldSQLite fails t unless Python's SQLite predates 3.49.2.
func requireOldSQLite(t *testing.T, db string) string {
	t.Helper()
	v := strings.TrimSpace(oldSQLite(t, db, "print(sqlite3.sqlite_version)"))
	parts := strings.Split(v, ".")
	n := func(i int) int { x, _ := strconv.Atoi(parts[i]); return x }
	if len(parts) < 3 || n(0) > 3 || n(0) == 3 && (n(1) > 49 || n(1) == 49 && n(2) >= 2) {
		t.Fatalf("python3's SQLite is %s; playing the older tokenizer needs one before 3.49.2 (Debian 12's python3 has 3.40.1)", v)
	}
	return v
}

// multimodal is content as a newer Hermes stores a list of parts: a NUL,
// "json:", then the JSON.
const multimodal = "\x00json:[{\"type\": \"text\", \"text\": \"hello multimodal world\"}, {\"type\": \"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,iVBORw0KGgo\"}}]"

// TestTrigramIndexIsTheSameForEverySQLite: our opt-in trigram index (IMP-10)
// of multimodal content, written by this SQLite, passes the full-text
// integrity check of an SQLite older than 3.49.2, which can delete its rows
// and add some, after which this SQLite's check and deletes pass too.
func TestTrigramIndexIsTheSameForEverySQLite(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	s := openTestStore(t, path, Options{Trigram: true})
	if ok, err := s.BackfillTrigram(ctx); !ok || err != nil {
		t.Fatalf("backfill: %v, %v", ok, err)
	}
	mustCreate(t, s, "mm", "telegram")
	var ids []int64
	for range 3 {
		c := multimodal
		ids = append(ids, mustAppend(t, s, sessiondb.NewMessage{SessionID: "mm", Role: "user", Content: &c}))
	}
	s.Close()
	old := requireOldSQLite(t, path)
	check := "c.execute(\"INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram, rank) VALUES('integrity-check', 1)\")\nprint('ok')\n"
	if out := oldSQLite(t, path, check); strings.TrimSpace(out) != "ok" {
		t.Fatalf("SQLite %s's check of our index: %s", old, out)
	}
	out := oldSQLite(t, path, "c.execute('DELETE FROM messages WHERE id = ?', ("+strconv.FormatInt(ids[0], 10)+",))\n"+
		"c.execute(\"INSERT INTO messages(session_id, role, content, timestamp) VALUES ('mm', 'user', ?, 1)\", ("+strconv.Quote(multimodal)+".encode().decode('unicode_escape'),))\n"+check)
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("SQLite %s's delete and insert, then its check: %s", old, out)
	}
	s = openTestStore(t, path, Options{Trigram: true})
	if _, err := s.DeleteSession(ctx, "mm"); err != nil {
		t.Fatalf("our delete of rows an older SQLite wrote: %v", err)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram, rank) VALUES('integrity-check', 1)"); err != nil {
		t.Errorf("our check after both SQLites wrote: %v", err)
	}
}

// TestVersionSkewIsNotDamage: a newer Hermes' own trigram index over
// multimodal content, written by an SQLite older than 3.49.2, fails this
// SQLite's integrity_check; ExplainIntegrity calls that version skew (it
// holds exactly what that SQLite writes), while the same index with a row
// whose text was changed behind it stays damage.
func TestVersionSkewIsNotDamage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		extra  string // Python run after the index is built
		damage bool
	}{
		{name: "skew only"},
		{name: "damage too", extra: "c.execute(\"UPDATE messages_fts_trigram_content SET c0 = 'edited behind the index' WHERE id = (SELECT min(id) FROM messages_fts_trigram_content)\")\n", damage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/state.db"
			s := openTestStore(t, path, Options{})
			mustCreate(t, s, "mm", "telegram")
			for _, c := range []string{"plain words first", multimodal, "more plain text", multimodal} {
				mustAppend(t, s, sessiondb.NewMessage{SessionID: "mm", Role: "user", Content: &c})
			}
			s.Close()
			old := requireOldSQLite(t, path)
			// What a Hermes v11-v22 adds to a file (an inline trigram
			// table over the messages), with its own SQLite.
			oldSQLite(t, path, "c.execute(\"CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tokenize='trigram')\")\n"+
				"c.execute('INSERT INTO messages_fts_trigram(rowid, content) SELECT id, content FROM messages')\n"+
				"c.execute('UPDATE schema_version SET version = 22')\n"+tc.extra)
			s = openTestStore(t, path, Options{ReadOnly: true})
			lines, err := s.IntegrityCheck(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(lines, "\n"), "messages_fts_trigram") {
				t.Fatalf("integrity_check = %q; this SQLite should reject the older one's trigram index", lines)
			}
			damage, skew, err := s.ExplainIntegrity(ctx, lines)
			if err != nil {
				t.Fatal(err)
			}
			if tc.damage {
				if len(damage) == 0 || len(skew) != 0 {
					t.Errorf("damage %q, skew %q; want the complaint kept as damage", damage, skew)
				}
				return
			}
			v, _ := s.SQLiteVersion(ctx)
			if len(damage) != 0 || len(skew) != 1 || !strings.Contains(skew[0], "messages_fts_trigram") ||
				!strings.Contains(skew[0], "3.49.2") || !strings.Contains(skew[0], v) || !strings.Contains(skew[0], "2 rows") {
				t.Errorf("damage %q, skew %q; want one skew naming the table, 3.49.2, SQLite %s and the 2 rows (written by %s)", damage, skew, v, old)
			}
		})
	}
}

// TestOldTrigramIndexIsRebuilt: a trigram index made before trigramText
// (its view passing NUL bytes through) is rebuilt without them the first
// time the store opens it writable, and then passes an older SQLite's
// check.
func TestOldTrigramIndexIsRebuilt(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	s := openTestStore(t, path, Options{Trigram: true})
	mustCreate(t, s, "mm", "telegram")
	c := multimodal
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "mm", Role: "user", Content: &c})
	s.Close()
	// The definition of before: the content as it is.
	raw, err := sqlitedb.Open(sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"DROP VIEW sessiondb_fts_trigram_src",
		`CREATE VIEW sessiondb_fts_trigram_src AS SELECT m.id AS id, m.content AS content FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.role <> 'tool' AND s.source <> 'cron'`,
		"INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram) VALUES('rebuild')",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()
	old := requireOldSQLite(t, path)
	check := "try:\n  c.execute(\"INSERT INTO sessiondb_fts_trigram(sessiondb_fts_trigram, rank) VALUES('integrity-check', 1)\")\n  print('ok')\nexcept Exception as e:\n  print(e)\n"
	if out := strings.TrimSpace(oldSQLite(t, path, check)); out == "ok" {
		t.Fatalf("SQLite %s accepts the old index; the test cannot show the rebuild", old)
	}
	s = openTestStore(t, path, Options{Trigram: true})
	if !strings.Contains(s.si.trigramView, trigramNULFree) {
		t.Fatalf("view after reopening: %s", s.si.trigramView)
	}
	hits, err := s.SearchMessages(ctx, "multimodal", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 1 {
		t.Errorf("search after the rebuild: %v, %v", hits, err)
	}
	s.Close()
	if out := strings.TrimSpace(oldSQLite(t, path, check)); out != "ok" {
		t.Errorf("SQLite %s's check after the rebuild: %s", old, out)
	}
}

// TestSkewedDeleteIsExact: deleting a session whose multimodal rows a
// newer Hermes indexed with an SQLite older than 3.49.2 (its inline
// trigram table, schema 11 on) takes out exactly what that SQLite put in:
// afterwards its FTS5 integrity-check passes, and so does this SQLite's.
func TestSkewedDeleteIsExact(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	s := openTestStore(t, path, Options{})
	mustCreate(t, s, "mm", "telegram")
	mustCreate(t, s, "other", "telegram")
	for _, c := range []string{"abcdef" + multimodal, multimodal, "ab" + multimodal} {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "mm", Role: "user", Content: &c})
	}
	c := multimodal
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "other", Role: "user", Content: &c})
	s.Close()
	old := requireOldSQLite(t, path)
	oldSQLite(t, path, "c.execute(\"CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tokenize='trigram')\")\n"+
		"c.execute('INSERT INTO messages_fts_trigram(rowid, content) SELECT id, content FROM messages')\n"+
		"c.execute('CREATE TRIGGER messages_fts_trigram_delete AFTER DELETE ON messages BEGIN DELETE FROM messages_fts_trigram WHERE rowid = old.id; END')\n"+
		"c.execute('UPDATE schema_version SET version = 22')\n")
	s = openTestStore(t, path, Options{})
	if _, err := s.DeleteSession(ctx, "mm"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if n, err := s.MessageCount(ctx, ""); err != nil || n != 1 {
		t.Errorf("messages after the delete: %d, %v; want other's one", n, err)
	}
	s.Close()
	check := "try:\n  c.execute(\"INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('integrity-check')\")\n  print('ok')\nexcept Exception as e:\n  print(e)\n"
	if out := strings.TrimSpace(oldSQLite(t, path, check)); out != "ok" {
		t.Errorf("SQLite %s's check after our delete: %s", old, out)
	}
	s = openTestStore(t, path, Options{ReadOnly: true})
	lines, err := s.IntegrityCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if damage, _, err := s.ExplainIntegrity(ctx, lines); err != nil || len(damage) > 0 {
		t.Errorf("our check after the delete: damage %q (%v)", damage, err)
	}
}

// TestSkewedDeleteRefusedWhole: schema 10's trigram index keeps no copy of
// the text (external content, its delete trigger passing the message's
// text), so a delete of multimodal rows an older SQLite indexed cannot be
// made exact: it fails whole, invalid, saying why and what to do, and
// nothing is deleted.
func TestSkewedDeleteRefusedWhole(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	s := openTestStore(t, path, Options{})
	mustCreate(t, s, "mm", "telegram")
	c := multimodal
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "mm", Role: "user", Content: &c})
	s.Close()
	requireOldSQLite(t, path)
	oldSQLite(t, path, "c.execute(\"CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, content=messages, content_rowid=id, tokenize='trigram')\")\n"+
		"c.execute(\"INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('rebuild')\")\n"+
		"c.execute(\"CREATE TRIGGER messages_fts_trigram_delete AFTER DELETE ON messages BEGIN INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content) VALUES('delete', old.id, old.content); END\")\n"+
		"c.execute('UPDATE schema_version SET version = 10')\n")
	s = openTestStore(t, path, Options{})
	for what, err := range map[string]error{
		"DeleteSession": func() error { _, err := s.DeleteSession(ctx, "mm"); return err }(),
		"ClearMessages": s.ClearMessages(ctx, "mm"),
	} {
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "3.49.2") || !strings.Contains(err.Error(), "nothing was deleted") {
			t.Errorf("%s = %v; want invalid, explaining the SQLite versions", what, err)
		}
	}
	if n, err := s.MessageCount(ctx, "mm"); err != nil || n != 1 {
		t.Errorf("messages after the refusals: %d, %v; want the row kept", n, err)
	}
	if _, err := s.GetSession(ctx, "mm"); err != nil {
		t.Errorf("session after the refusal: %v", err)
	}
}
