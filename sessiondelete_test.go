package sessiondb_test

import (
	"database/sql"
	"encoding/json"
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

func (d *sqlDelete) IDs(q string, args ...any) ([]string, error) {
	rows, err := d.db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (d *sqlDelete) Links() ([]sessiondb.SessionLink, error) {
	rows, err := d.db.Query(sessiondb.LinksSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sessiondb.SessionLink
	for rows.Next() {
		var l sessiondb.SessionLink
		if err := rows.Scan(&l.ID, &l.ParentID, &l.ModelConfig); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

func (d *sqlDelete) In(ids []string) (string, any) {
	b, _ := json.Marshal(ids)
	return "(SELECT value FROM json_each(?))", string(b)
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
		`CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL, ended_at REAL, parent_session_id TEXT REFERENCES sessions(id), model_config TEXT)`,
		`CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id))`,
		`INSERT INTO sessions VALUES ('a', 'cli', 10, 11, NULL, NULL), ('b', 'cli', 12, 13, 'a', '{"_delegate_from": "a"}'), ('c', 'tg', 10, 11, NULL, NULL),
			('d', 'cli', 10, NULL, NULL, NULL), ('e', 'cli', 500, 501, 'b', NULL)`,
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
	ids, err := sessiondb.DeleteSessionsWhere(d, cond, args, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("deleted %v, want a and b", ids)
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
	ids, err := sessiondb.DeleteSessionsWhere(&sqlDelete{db: db, failAt: -1}, "id = ?", []any{"b"}, false)
	if err != nil || !reflect.DeepEqual(ids, []string{"b"}) {
		t.Fatalf("delete b: %v, %v; want b", ids, err)
	}
	if got := column(t, db, "SELECT id || ':' || COALESCE(parent_session_id, '-') FROM sessions ORDER BY id"); got != "a:-,c:-,d:-,e:-" {
		t.Fatalf("after deleting b: %s", got)
	}
	cond, args := sessiondb.PruneCondition(100, "", func(n int) string { return "$" + string(rune('0'+n)) })
	if cond != "started_at < $1 AND ended_at IS NOT NULL" || !reflect.DeepEqual(args, []any{100.0}) {
		t.Fatalf("every source: %q %v", cond, args)
	}
	cond, args = sessiondb.PruneCondition(100, "", func(int) string { return "?" })
	if ids, err := sessiondb.DeleteSessionsWhere(&sqlDelete{db: db, failAt: -1}, cond, args, false); err != nil || len(ids) != 2 {
		t.Fatalf("prune every source: %v, %v; want 2 (a and c; d is open, e recent)", ids, err)
	}
}

func TestDeleteSessionsWhereStopsAtAFailedStep(t *testing.T) {
	db := deleteFixture(t)
	d := &sqlDelete{db: db, failAt: sessiondb.DeleteMessages}
	ids, err := sessiondb.DeleteSessionsWhere(d, "id = ?", []any{"a"}, true)
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || ids != nil {
		t.Fatalf("got %v, %v; want none and the step's conflict", ids, err)
	}
	if len(d.steps) != 2 {
		t.Fatalf("ran steps %v, want the orphaning and the failed one only", d.steps)
	}
	if got := column(t, db, "SELECT id FROM sessions ORDER BY id"); got != "a,b,c,d,e" {
		t.Fatalf("sessions %s, want all five still there", got)
	}
}

func TestDeleteSessionsWhereTakesDelegates(t *testing.T) {
	db := deleteFixture(t)
	ids, err := sessiondb.DeleteSessionsWhere(&sqlDelete{db: db, failAt: -1}, "id = ?", []any{"a"}, true)
	if err != nil || !reflect.DeepEqual(ids, []string{"a", "b"}) {
		t.Fatalf("delete a: %v, %v; want a and its delegate b", ids, err)
	}
	if got := column(t, db, "SELECT id || ':' || COALESCE(parent_session_id, '-') FROM sessions ORDER BY id"); got != "c:-,d:-,e:-" {
		t.Fatalf("sessions left %s, want c, d and e (b's untagged child) orphaned", got)
	}
	if got := column(t, db, "SELECT session_id FROM messages ORDER BY session_id"); got != "c,d,e" {
		t.Fatalf("messages left of %s, want c,d,e", got)
	}
}

func TestDelegateMarker(t *testing.T) {
	for _, tc := range []struct {
		config, name string
		ok           bool
	}{
		{`{"_delegate_from": "p"}`, "p", true},
		{`{"model": "x", "_delegate_from": "__orphaned__"}`, "__orphaned__", true},
		{`{"_delegate_from": null}`, "", false},
		{`{"_delegate_from": 7}`, "", true},
		{`{"_branched_from": "p"}`, "", false},
		{`["_delegate_from"]`, "", false},
		{`not json _delegate_from`, "", false},
		{``, "", false},
	} {
		name, ok := sessiondb.DelegateMarker(tc.config)
		if name != tc.name || ok != tc.ok {
			t.Errorf("DelegateMarker(%q) = %q, %v; want %q, %v", tc.config, name, ok, tc.name, tc.ok)
		}
	}
}

// TestDelegates follows Hermes' _collect_delegate_child_ids: a marker
// naming a doomed session, or a marker and a doomed parent, recursively;
// never a parent itself, even through a cycle of markers.
func TestDelegates(t *testing.T) {
	link := func(id, parent, config string) sessiondb.SessionLink {
		l := sessiondb.SessionLink{ID: id}
		if parent != "" {
			l.ParentID = &parent
		}
		if config != "" {
			l.ModelConfig = &config
		}
		return l
	}
	links := []sessiondb.SessionLink{
		link("d1", "p", `{"_delegate_from": "p"}`),
		link("d2", "d1", `{"_delegate_from": "d1"}`),
		link("x", "", `{"_delegate_from": "p"}`),
		link("m", "p", `{"_delegate_from": "somewhere-else"}`),
		link("o", "q", `{"_delegate_from": "__orphaned__"}`),
		link("n", "p", `{"_delegate_from": null}`),
		link("b", "p", `{"_branched_from": "p"}`),
		link("p", "", `{"_delegate_from": "d2"}`),
		link("bad", "p", `{"_delegate_from": "p"`),
	}
	if got, want := sessiondb.Delegates(links, []string{"p"}), []string{"d1", "d2", "m", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Delegates(p) = %v, want %v", got, want)
	}
	if got, want := sessiondb.Delegates(links, []string{"d1", "p"}), []string{"d2", "m", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Delegates(d1, p) = %v, want %v", got, want)
	}
	if got := sessiondb.Delegates(links, []string{"q"}); !reflect.DeepEqual(got, []string{"o"}) {
		t.Errorf("Delegates(q) = %v, want [o]", got)
	}
	if got := sessiondb.Delegates(links, []string{"b"}); len(got) != 0 {
		t.Errorf("Delegates(b) = %v, want none", got)
	}
}
