package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// janebot files built here from spec B1's DDL and the notes on janebot's
// history: its current v1; its first release, whose v1 named the column
// sprite_name; and a file that ran the short-lived version 2.

const janebotV1 = `
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS subagent_sessions (
  id TEXT PRIMARY KEY, thread_key TEXT NOT NULL UNIQUE, channel_id TEXT NOT NULL, thread_ts TEXT NOT NULL,
  sandbox_name TEXT NOT NULL, pi_session_file TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('idle', 'running', 'error')),
  running_job_id TEXT, last_job_id TEXT, last_error TEXT, turns INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS idx_subagent_sessions_updated_at ON subagent_sessions(updated_at);
INSERT INTO schema_migrations VALUES (1, 'Create subagent sessions table', 1771632000000);
`

// janebotRows are three threads as janebot leaves them: one idle after
// two turns, one failed, one running.
const janebotRows = `
INSERT INTO subagent_sessions VALUES ('sa_627163f749e28451', 'C123:1234.567', 'C123', '1234.567', 'jane-627163f749e2',
  '/home/sprite/sessions/sa_627163f749e28451.jsonl', 'idle', NULL, 'job_aaaaaaaa', NULL, 2, 1771632000100, 1771632000900);
INSERT INTO subagent_sessions VALUES ('sa_1111111111111111', 'C123:2.0', 'C123', '2.0', 'jane-111111111111',
  '/home/sprite/sessions/sa_1111111111111111.jsonl', 'error', NULL, NULL, 'sandbox bootstrap failed', 0, 1771632000200, 1771632000800);
INSERT INTO subagent_sessions VALUES ('sa_2222222222222222', 'C9:3.0', 'C9', '3.0', 'jane-222222222222',
  '/home/sprite/sessions/sa_2222222222222222.jsonl', 'running', 'job_bbbbbbbb', 'job_cccccccc', NULL, 5, 1771632000300, 1771632000700);
`

func buildJanebotFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db := sqlitetest.Open(t, path)
	sqlitetest.ExecAll(t, db, append([]string{"PRAGMA journal_mode=WAL"}, stmts...)...)
	db.Close()
}

// TestSubagentsAdoptJanebotFile: a janebot state.sqlite with rows opens
// with no schema write, reads back as janebot's records (NULL fields absent
// in JSON), and its records move through the status machine.
func TestSubagentsAdoptJanebotFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".janebot", "state.sqlite")
	buildJanebotFile(t, path, janebotV1, janebotRows)
	clock := testkit.NewClock(time.UnixMilli(1771632005000))
	s := openSubagents(t, path, clock.Now)
	defer s.Close()
	ctx := context.Background()

	if got := sqlitetest.QueryFile(t, path, "SELECT version, description, applied_at FROM schema_migrations"); len(got) != 1 || got[0][2] != int64(1771632000000) {
		t.Errorf("ledger = %v, want janebot's one row untouched", got)
	}
	a, err := s.GetSubagentByThread(ctx, "C123", "1234.567")
	noErrT(t, "by thread", err)
	want := sessiondb.NewSubagent("C123", "1234.567", "/home/sprite/sessions", time.UnixMilli(1771632000100))
	want.LastJobID, want.Turns, want.UpdatedAt = "job_aaaaaaaa", 2, 1771632000900
	if a != want {
		t.Errorf("record = %+v\nwant     %+v (our derivation of janebot's ids)", a, want)
	}
	b, _ := json.Marshal(a)
	var m map[string]any
	json.Unmarshal(b, &m)
	if _, ok := m["runningJobId"]; ok || m["lastJobId"] != "job_aaaaaaaa" || m["createdAt"] != float64(1771632000100) {
		t.Errorf("janebot JSON = %s", b)
	}
	page, err := s.ListSubagents(ctx, sessiondb.SubagentFilter{})
	if err != nil || len(page.Subagents) != 3 || page.Subagents[0].ID != "sa_627163f749e28451" {
		t.Errorf("listing = %+v, %v", page, err)
	}
	// The running row's process is gone: dispatching resets and runs.
	r, err := s.DispatchJob(ctx, "sa_2222222222222222", "job_dddddddd", func(sessiondb.Subagent) bool { return false })
	if err != nil || r.RunningJobID != "job_dddddddd" || r.LastJobID != "job_cccccccc" || r.UpdatedAt != 1771632005000 {
		t.Errorf("dispatch on janebot's running row = %+v, %v", r, err)
	}
	r, err = s.DispatchJob(ctx, "sa_1111111111111111", "job_eeeeeeee", nil)
	if err != nil || r.LastError != "sandbox bootstrap failed" {
		t.Errorf("dispatch on janebot's failed row = %+v, %v", r, err)
	}
	r, err = s.CompleteJob(ctx, "sa_1111111111111111", "job_eeeeeeee")
	if err != nil || r.LastError != "" || r.Turns != 1 {
		t.Errorf("complete = %+v, %v", r, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestSubagentsHealSpriteName: a file janebot's first release wrote (v1
// with sprite_name) is healed as janebot's version 2 did, and recorded so;
// a file that ran version 2 opens as it is.
func TestSubagentsHealSpriteName(t *testing.T) {
	firstRelease := strings.Replace(janebotV1, "sandbox_name TEXT NOT NULL", "sprite_name TEXT NOT NULL", 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "v1.sqlite")
	buildJanebotFile(t, path, firstRelease, janebotRows)
	clock := testkit.NewClock(time.UnixMilli(1771650000000))
	s := openSubagents(t, path, clock.Now)
	a, err := s.GetSubagent(context.Background(), "sa_627163f749e28451")
	if err != nil || a.SandboxName != "jane-627163f749e2" {
		t.Errorf("healed record = %+v, %v", a, err)
	}
	s.Close()
	got := sqlitetest.QueryFile(t, path, "SELECT version, description, applied_at FROM schema_migrations ORDER BY version")
	want := [][]any{{int64(1), "Create subagent sessions table", int64(1771632000000)}, {int64(2), "Rename sprite_name column to sandbox_name", int64(1771650000000)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ledger after healing = %v, want %v", got, want)
	}
	cols := flat(sqlitetest.QueryFile(t, path, "SELECT name FROM pragma_table_info('subagent_sessions')"))
	if strings.Contains(strings.Join(cols, ","), "sprite_name") {
		t.Errorf("columns after healing: %v", cols)
	}

	ran2 := filepath.Join(dir, "v2.sqlite")
	buildJanebotFile(t, ran2, janebotV1, janebotRows,
		"INSERT INTO schema_migrations VALUES (2, 'Rename sprite_name column to sandbox_name', 1771633000000)",
		"INSERT INTO schema_migrations VALUES (9, 'A future janebot migration', 1771634000000)")
	before := sqlitetest.QueryFile(t, ran2, "SELECT * FROM schema_migrations ORDER BY version")
	s = openSubagents(t, ran2, nil)
	if n, err := s.CountSubagents(context.Background(), sessiondb.SubagentFilter{}); err != nil || n != 3 {
		t.Errorf("count on a version-2 file = %d, %v", n, err)
	}
	s.Close()
	if after := sqlitetest.QueryFile(t, ran2, "SELECT * FROM schema_migrations ORDER BY version"); !reflect.DeepEqual(after, before) {
		t.Errorf("ledger changed: %v → %v (versions 2 and 9 must be left alone)", before, after)
	}

	// A file we create carries janebot's ledger exactly.
	fresh := filepath.Join(dir, "fresh", "state.sqlite")
	openSubagents(t, fresh, nil).Close()
	if got := sqlitetest.QueryFile(t, fresh, "SELECT version, description FROM schema_migrations"); len(got) != 1 || got[0][1] != "Create subagent sessions table" {
		t.Errorf("fresh ledger = %v", got)
	}
	if fi, err := os.Stat(filepath.Dir(fresh)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created folder mode = %v, %v", fi.Mode().Perm(), err)
	}
	ddl := sqlitetest.QueryFile(t, fresh, "SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info('subagent_sessions') ORDER BY cid")
	spec := filepath.Join(dir, "spec.sqlite")
	buildJanebotFile(t, spec, janebotV1)
	if want := sqlitetest.QueryFile(t, spec, "SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info('subagent_sessions') ORDER BY cid"); !reflect.DeepEqual(ddl, want) {
		t.Errorf("our table %v\nspec's    %v", ddl, want)
	}
}

// TestSubagentsStorageErrorsSurface: a storage failure is returned with its
// code and leaves the row as it was (janebot only logged such failures).
func TestSubagentsStorageErrorsSurface(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.sqlite")
	s := openSubagents(t, path, nil)
	defer s.Close()
	ctx := context.Background()
	a, _, err := s.EnsureSubagent(ctx, "C1", "1.0", "/s")
	noErrT(t, "ensure", err)
	_, err = s.DispatchJob(ctx, a.ID, "job_1", nil)
	noErrT(t, "dispatch", err)
	// Another program holds the write lock: the completion waits its
	// budget, then fails busy, and the row keeps its job.
	release := sqlitetest.HoldWriteLock(t, path)
	short, err := sqlite.OpenSubagents(ctx, path, sqlite.SubagentOptions{WriteBudget: 30 * time.Millisecond})
	noErrT(t, "second handle", err)
	defer short.Close()
	_, err = short.CompleteJob(ctx, a.ID, "job_1")
	wantCodeT(t, "complete under a held lock", err, sessiondb.EBUSY)
	release()
	if cur, _ := s.GetSubagent(ctx, a.ID); cur.Status != sessiondb.SubagentRunning || cur.RunningJobID != "job_1" || cur.Turns != 0 {
		t.Errorf("a failed completion changed the row: %+v", cur)
	}
	// A row another program wrote with a broken status is refused by the
	// file's CHECK, not silently stored.
	err = s.UpsertSubagent(ctx, sessiondb.Subagent{ID: "x", Key: "C:1", ChannelID: "C", ThreadTS: "1", SandboxName: "s", PISessionFile: "f", Status: "done"})
	wantCodeT(t, "stored API word", err, sessiondb.EINVALID)
}
