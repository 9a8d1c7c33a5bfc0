package sessiondb_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// sqlDelete runs DeleteSessionsWhere's steps on a real SQLite file,
// recording them; a step named in failAt fails.
type sqlDelete struct {
	db     *sql.DB
	steps  []sessiondb.DeleteStep
	failAt sessiondb.DeleteStep
}

func (d *sqlDelete) Exec(step sessiondb.DeleteStep, q string, args ...any) (int64, error) {
	d.steps = append(d.steps, step)
	if step == d.failAt {
		return 0, sessiondb.Errorf(sessiondb.ECONFLICT, "step %d refused", step)
	}
	res, err := d.db.Exec(q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deleteFixture is a store with foreign keys on: a and b ended long ago
// (b a child of a), c ended long ago but of another source, d open, e a
// recent child of b; each has one message.
func deleteFixture(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: filepath.Join(t.TempDir(), "d.db"), MaxConns: 1, Pragmas: []string{"PRAGMA foreign_keys=ON"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL, ended_at REAL, parent_session_id TEXT REFERENCES sessions(id))`,
		`CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id))`,
		`INSERT INTO sessions VALUES ('a', 'cli', 10, 11, NULL), ('b', 'cli', 12, 13, 'a'), ('c', 'tg', 10, 11, NULL),
			('d', 'cli', 10, NULL, NULL), ('e', 'cli', 500, 501, 'b')`,
		`INSERT INTO messages (session_id) VALUES ('a'), ('b'), ('c'), ('d'), ('e')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func column(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.String)
	}
	return strings.Join(out, ",")
}

func TestDeleteSessionsWherePrunesReferencingSessions(t *testing.T) {
	db := deleteFixture(t)
	cond, args := sessiondb.PruneCondition(100, "cli", func(int) string { return "?" })
	d := &sqlDelete{db: db, failAt: -1}
	n, err := sessiondb.DeleteSessionsWhere(d, cond, args)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("deleted %d sessions, want 2 (a and b)", n)
	}
	if got := column(t, db, "SELECT id || ':' || COALESCE(parent_session_id, '-') FROM sessions ORDER BY id"); got != "c:-,d:-,e:-" {
		t.Fatalf("sessions left %s, want c, d and e orphaned", got)
	}
	if got := column(t, db, "SELECT session_id FROM messages ORDER BY session_id"); got != "c,d,e" {
		t.Fatalf("messages left of %s, want c,d,e", got)
	}
	want := []sessiondb.DeleteStep{sessiondb.DeleteOrphanChildren, sessiondb.DeleteMessages, sessiondb.DeleteSessionRows}
	if !reflect.DeepEqual(d.steps, want) {
		t.Fatalf("steps %v, want %v", d.steps, want)
	}
}

func TestDeleteSessionsWhereOneIDAndEverySource(t *testing.T) {
	db := deleteFixture(t)
	n, err := sessiondb.DeleteSessionsWhere(&sqlDelete{db: db, failAt: -1}, "id = ?", []any{"b"})
	if err != nil || n != 1 {
		t.Fatalf("delete b: %d, %v; want 1", n, err)
	}
	if got := column(t, db, "SELECT id || ':' || COALESCE(parent_session_id, '-') FROM sessions ORDER BY id"); got != "a:-,c:-,d:-,e:-" {
		t.Fatalf("after deleting b: %s", got)
	}
	cond, args := sessiondb.PruneCondition(100, "", func(n int) string { return "$" + string(rune('0'+n)) })
	if cond != "started_at < $1 AND ended_at IS NOT NULL" || !reflect.DeepEqual(args, []any{100.0}) {
		t.Fatalf("every source: %q %v", cond, args)
	}
	cond, args = sessiondb.PruneCondition(100, "", func(int) string { return "?" })
	if n, err := sessiondb.DeleteSessionsWhere(&sqlDelete{db: db, failAt: -1}, cond, args); err != nil || n != 2 {
		t.Fatalf("prune every source: %d, %v; want 2 (a and c; d is open, e recent)", n, err)
	}
}

func TestDeleteSessionsWhereStopsAtAFailedStep(t *testing.T) {
	db := deleteFixture(t)
	d := &sqlDelete{db: db, failAt: sessiondb.DeleteMessages}
	n, err := sessiondb.DeleteSessionsWhere(d, "id = ?", []any{"a"})
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || n != 0 {
		t.Fatalf("got %d, %v; want 0 and the step's conflict", n, err)
	}
	if len(d.steps) != 2 {
		t.Fatalf("ran steps %v, want the orphaning and the failed one only", d.steps)
	}
	if got := column(t, db, "SELECT id FROM sessions ORDER BY id"); got != "a,b,c,d,e" {
		t.Fatalf("sessions %s, want all five still there", got)
	}
}
