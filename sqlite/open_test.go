package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

func TestOpenFreshFileHasV6Schema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fresh.db")
	s := openTestStore(t, path, Options{})
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != 6 {
		t.Fatalf("SchemaVersion = %d, %v; want 6", v, err)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	var av int
	if err := s.db.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&av); err != nil || av != 2 {
		t.Errorf("auto_vacuum = %d, %v; want 2 (incremental) on a new file", av, err)
	}
	s.Close()
	// The exact DDL of section 2: every statement is in sqlite_master as
	// written (modulo the IF NOT EXISTS SQLite drops).
	master := strings.Join(masterSQL(t, path), "\n")
	for _, stmt := range strings.Split(schemaTables+schemaTitleIndex+"\n"+schemaFTS, ";\n") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" || strings.HasPrefix(stmt, "INSERT") {
			continue
		}
		stmt = strings.Replace(stmt, " IF NOT EXISTS", "", 1)
		if !strings.Contains(master, stmt) {
			t.Errorf("sqlite_master lacks\n%s", stmt)
		}
	}
}

func TestMigrateEachVersionToV6Shape(t *testing.T) {
	want := readShape(t, func() string {
		p := filepath.Join(t.TempDir(), "fresh.db")
		s := openTestStore(t, p, Options{})
		s.Close()
		return p
	}())
	cases := []struct {
		name      string
		version   int
		withFTS   bool
		noVersion bool // tables but no version row
	}{
		{"v1", 1, true, false}, {"v2", 2, true, false}, {"v3", 3, true, false}, {"v4", 4, true, false},
		{"v5", 5, true, false}, {"v6", 6, true, false},
		{"v1 without FTS", 1, false, false}, {"v5 without FTS", 5, false, false},
		{"v4 tables without a version row", 4, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := buildFixture(t, tc.version, tc.withFTS)
			if tc.noVersion {
				db := sqlitetest.Open(t, path)
				sqlitetest.ExecAll(t, db, "DELETE FROM schema_version")
				db.Close()
			}
			s := openTestStore(t, path, Options{})
			// The old rows survive and the FTS index covers them.
			hits, err := s.SearchMessages(ctx, "kubernetes", sessiondb.SearchFilter{})
			if err != nil || len(hits) != 1 || hits[0].SessionID != "old1" {
				t.Fatalf("search after migration = %+v, %v", hits, err)
			}
			if err := s.FTSIntegrityCheck(ctx); err != nil {
				t.Fatalf("FTS integrity: %v", err)
			}
			x, err := s.GetSession(ctx, "old1")
			if err != nil || x.CacheReadTokens != 0 || x.MessageCount != 0 {
				t.Fatalf("GetSession = %+v, %v", x, err)
			}
			if tc.version >= 3 && (x.Title == nil || *x.Title != "first") {
				t.Errorf("title lost: %v", x.Title)
			}
			// New columns are writable.
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "old1", Role: "assistant", Content: str("ok"), Reasoning: str("r"), ReasoningDetails: []any{"x"}}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			got := readShape(t, path)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("migrated shape differs from a fresh file:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMigrateRefusesDuplicateTitles(t *testing.T) {
	path := buildFixture(t, 3, true)
	db := sqlitetest.Open(t, path)
	sqlitetest.ExecAll(t, db, "UPDATE sessions SET title = 'same'")
	db.Close()
	before := masterSQL(t, path)
	_, err := Open(context.Background(), path, Options{})
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || !strings.Contains(err.Error(), "old1") || !strings.Contains(err.Error(), "old2") {
		t.Fatalf("Open = %v; want conflict naming old1 and old2", err)
	}
	// One transaction: nothing of steps 4..6 stayed behind.
	if after := masterSQL(t, path); !sameStrings(before, after) {
		t.Errorf("failed migration changed the schema:\n%v\n%v", before, after)
	}
	var v int
	db = sqlitetest.Open(t, path)
	if err := db.QueryRow("SELECT version FROM schema_version").Scan(&v); err != nil || v != 3 {
		t.Errorf("version = %d, %v; want 3", v, err)
	}
}

func TestNewerHermesFileIsNeverChanged(t *testing.T) {
	ctx := context.Background()
	path := buildNewer(t, "")
	before := masterSQL(t, path)
	c := testkit.NewClock(time.Unix(100*86400, 0))
	s := openTestStore(t, path, Options{Now: c.Now})

	x, err := s.GetSession(ctx, "n1")
	if err != nil || x.SystemPrompt == nil || *x.SystemPrompt != "You are a careful agent." {
		t.Fatalf("system prompt not resolved from system_prompts: %+v, %v", x, err)
	}
	ms, err := s.GetMessages(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range ms {
		contents = append(contents, *m.Content)
	}
	if want := []string{"deploy the zeppelin"}; !reflect.DeepEqual(contents, want) {
		t.Errorf("messages = %q; want the rewound and the compacted row hidden, as Hermes' get_messages hides them: %q", contents, want)
	}
	// Hermes' search finds what a compaction summarised away, not what a
	// rewind took back.
	hits, err := s.SearchMessages(ctx, "zeppelin", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 2 {
		t.Errorf("search = %+v, %v; want 2 hits (the live and the compacted row)", hits, err)
	}
	n2, err := s.GetMessages(ctx, "n2")
	if err != nil || len(n2) != 2 {
		t.Fatalf("n2 messages = %v, %v", n2, err)
	}
	if raw, ok := n2[1].StructuredContent(); !ok || string(raw) != `{"parts":[1,2]}` {
		t.Errorf("structured content = %q, %v", raw, ok)
	}
	rich, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{})
	if err != nil || len(rich) != 2 {
		t.Fatalf("ListSessionsRich = %+v, %v", rich, err)
	}
	if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "n2", Role: "user", Content: str("new zeppelin")}); err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "n3", Source: "cli"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := s.SetSessionTitle(ctx, "n3", "newer title"); err != nil {
		t.Fatalf("title: %v", err)
	}
	n, err := s.PruneSessions(ctx, 1, "")
	if err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want 1", n, err)
	}
	// The rebuild keeps Hermes' full-text tables as they are defined (the
	// schema is compared below) and finds the same rows after it.
	ids := func() []int64 {
		hits, err := s.SearchMessages(ctx, "zeppelin", sessiondb.SearchFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	pre := ids()
	if err := s.RebuildFTS(ctx); err != nil {
		t.Errorf("RebuildFTS on a newer file = %v; want it rebuilt as Hermes rebuilds it", err)
	}
	if post := ids(); len(pre) == 0 || !slices.Equal(pre, post) {
		t.Errorf("search after the rebuild finds %v, before it %v", post, pre)
	}
	if v, _ := s.SchemaVersion(ctx); v != 21 {
		t.Errorf("version = %d; want 21 untouched", v)
	}
	s.Close()
	if after := masterSQL(t, path); !sameStrings(before, after) {
		t.Errorf("schema changed:\nbefore %v\nafter  %v", before, after)
	}
	db := sqlitetest.Open(t, path)
	var active int
	if err := db.QueryRow("SELECT active FROM messages WHERE content = 'new zeppelin'").Scan(&active); err != nil || active != 1 {
		t.Errorf("appended row active = %d, %v; want the newer schema's default 1", active, err)
	}
}

func TestNewerFileMissingV6ColumnFailsInternal(t *testing.T) {
	path := buildNewer(t, "billing_mode")
	before := masterSQL(t, path)
	_, err := Open(context.Background(), path, Options{})
	if sessiondb.ErrorCode(err) != sessiondb.EINTERNAL || !strings.Contains(err.Error(), "sessions.billing_mode") {
		t.Fatalf("Open = %v; want internal naming sessions.billing_mode", err)
	}
	if after := masterSQL(t, path); !sameStrings(before, after) {
		t.Error("schema changed")
	}
}

func TestReadOnlyOpen(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		build func(t *testing.T) string
	}{
		{"v6 written by us", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "state.db")
			s := openTestStore(t, p, Options{})
			mustCreate(t, s, "old1", "cli")
			mustAppend(t, s, sessiondb.NewMessage{SessionID: "old1", Role: "user", Content: str("deploy the kubernetes cluster")})
			s.Close()
			return p
		}},
		{"v5 not migrated", func(t *testing.T) string { return buildFixture(t, 5, true) }},
		{"v1 without FTS", func(t *testing.T) string { return buildFixture(t, 1, false) }},
		{"v21", func(t *testing.T) string { return buildNewer(t, "") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.build(t)
			before := masterSQL(t, path)
			s := openTestStore(t, path, Options{ReadOnly: true})
			q := "kubernetes"
			if tc.name == "v21" {
				q = "zeppelin"
			}
			hits, err := s.SearchMessages(ctx, q, sessiondb.SearchFilter{})
			if err != nil || len(hits) == 0 {
				t.Fatalf("read-only search = %v, %v", hits, err)
			}
			if _, err := s.GetSession(ctx, hits[0].SessionID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ListSessionsRich(ctx, sessiondb.RichFilter{}); err != nil {
				t.Fatal(err)
			}
			_, err = s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: hits[0].SessionID, Role: "user", Content: str("x")})
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "read-only") {
				t.Errorf("append on read-only = %v; want invalid read-only", err)
			}
			s.Close()
			if after := masterSQL(t, path); !sameStrings(before, after) {
				t.Error("read-only open changed the schema")
			}
		})
	}
}

func TestOpenTakesNoWriteLockWhenNothingToMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{})
	mustCreate(t, s, "a", "cli")
	s.Close()

	// Another connection holds the write lock for the whole test.
	sqlitetest.HoldWriteLock(t, path)

	s2, err := Open(ctx, path, Options{WriteBudget: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open while another writer holds the lock: %v", err)
	}
	defer s2.Close()
	if _, err := s2.GetSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// A write, by contrast, waits out its budget and reports busy.
	_, err = s2.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("x")})
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Errorf("append under a held lock = %v; want busy", err)
	}

	// A file that needs migrating does need the lock: busy, not a hang.
	old := buildFixture(t, 5, true)
	sqlitetest.HoldWriteLock(t, old)
	if _, err := Open(ctx, old, Options{WriteBudget: 300 * time.Millisecond}); sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Errorf("migrating open under a held lock = %v; want busy", err)
	}
}

func TestPermissions(t *testing.T) {
	ctx := context.Background()
	t.Run("new folder and file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "home", "sub")
		path := filepath.Join(dir, "state.db")
		s := openTestStore(t, path, Options{})
		mustCreate(t, s, "a", "cli")
		checkMode(t, dir, 0o700)
		checkMode(t, path, 0o600)
		checkMode(t, path+"-wal", 0o600)
		s.Close()
	})
	t.Run("existing world-readable file is tightened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		s := openTestStore(t, path, Options{})
		checkMode(t, path, 0o600)
		if v, err := s.SchemaVersion(ctx); err != nil || v != 6 {
			t.Fatalf("version %d, %v", v, err)
		}
	})
	t.Run("stricter file is not loosened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		s := openTestStore(t, path, Options{})
		s.Close()
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		s = openTestStore(t, path, Options{ReadOnly: true})
		checkMode(t, path, 0o400)
		// A read-only open never touches the mode; the read-write path's
		// CreateFile is what must not loosen it.
		if _, warn, err := sqlitedb.CreateFile(path, 0o700, 0o600); err != nil || warn != nil {
			t.Fatalf("CreateFile on a stricter file: %v, %v", warn, err)
		}
		checkMode(t, path, 0o400)
	})
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode = %v; want %v", filepath.Base(path), got, want)
	}
}

func TestOpenBadInput(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("this is not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		o    Options
		code string
	}{
		{"empty path", "", Options{}, sessiondb.EINVALID},
		{"directory", dir, Options{}, sessiondb.EINVALID},
		{"uri", "file:x.db?mode=rw", Options{}, sessiondb.EINVALID},
		{"bad synchronous", filepath.Join(dir, "a.db"), Options{Synchronous: "OFF"}, sessiondb.EINVALID},
		{"read-only missing file", filepath.Join(dir, "missing.db"), Options{ReadOnly: true}, sessiondb.ENOTFOUND},
		{"not a database", notDB, Options{}, sessiondb.EINVALID},
		{"read-only empty file", func() string {
			p := filepath.Join(dir, "empty.db")
			os.WriteFile(p, nil, 0o600)
			return p
		}(), Options{ReadOnly: true}, sessiondb.EINVALID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.path, tc.o)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if got := sessiondb.ErrorCode(err); got != tc.code {
				t.Errorf("code = %s (%v); want %s", got, err, tc.code)
			}
		})
	}
}

// A table of a newer Hermes that references sessions makes deleting a
// referenced session a conflict, rolled back whole.
func TestDeleteTrippingNewerForeignKeyIsConflict(t *testing.T) {
	ctx := context.Background()
	path := buildNewer(t, "", "CREATE TABLE session_links (session_id TEXT NOT NULL REFERENCES sessions(id))",
		"INSERT INTO session_links VALUES ('n1')")
	c := testkit.NewClock(time.Unix(100*86400, 0))
	s := openTestStore(t, path, Options{Now: c.Now})
	cases := []struct {
		name string
		do   func() error
	}{
		{"delete", func() error { _, err := s.DeleteSession(ctx, "n1"); return err }},
		{"prune", func() error { _, err := s.PruneSessions(ctx, 1, ""); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
				t.Fatalf("err = %v; want conflict", err)
			}
			if n, err := s.MessageCount(ctx, "n1"); err != nil || n != 3 {
				t.Errorf("messages of n1 = %d, %v; want its 3 rows kept", n, err)
			}
		})
	}
}

// readIndexesIn lists which of readIndexes the file at path has.
func readIndexesIn(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	master := strings.Join(masterSQL(t, path), "\n")
	for _, ix := range readIndexes {
		if strings.Contains(master, "index "+ix.name+" ") {
			out = append(out, ix.name)
		}
	}
	return out
}

// TestReadIndexes: a writable open gives a v6 file (Hermes' own, or ours
// from before them) the read indexes, leaving its version at 6; a writer
// holding the lock past the budget only postpones them to a later open.
func TestReadIndexes(t *testing.T) {
	ctx := context.Background()
	all := len(readIndexes)
	t.Run("a v6 file Hermes wrote", func(t *testing.T) {
		path := buildFixture(t, 6, true)
		if got := readIndexesIn(t, path); len(got) != 0 {
			t.Fatalf("the fixture already has %v", got)
		}
		s := openTestStore(t, path, Options{})
		if v, err := s.SchemaVersion(ctx); err != nil || v != 6 {
			t.Errorf("version %d, %v; want 6", v, err)
		}
		s.Close()
		if got := readIndexesIn(t, path); len(got) != all {
			t.Errorf("read indexes %v, want all %d", got, all)
		}
		// Hermes' own DDL for its index finds ours made: the same name and
		// definition, so CREATE INDEX IF NOT EXISTS leaves it.
		master := strings.Join(masterSQL(t, path), "\n")
		if !strings.Contains(master, "CREATE INDEX idx_messages_session_id ON messages(session_id, id)") {
			t.Errorf("idx_messages_session_id is not newer Hermes' definition:\n%s", master)
		}
	})
	t.Run("a file a newer Hermes upgraded after our look is left alone", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		s := openTestStore(t, path, Options{})
		mustCreate(t, s, "a", "cli")
		db := sqlitetest.Open(t, path)
		for _, ix := range readIndexes {
			sqlitetest.ExecAll(t, db, "DROP INDEX "+ix.name)
		}
		sqlitetest.ExecAll(t, db, "UPDATE schema_version SET version = 21")
		db.Close()
		before := masterSQL(t, path)
		// What an open that saw the file as v6 does once it holds the lock.
		if err := s.w.Do(ctx, func(tx *sqlitedb.Tx) error { return addReadIndexes(tx) }); err != nil {
			t.Fatal(err)
		}
		if after := masterSQL(t, path); !sameStrings(before, after) {
			t.Errorf("the newer file's schema changed:\nbefore %v\nafter  %v", before, after)
		}
	})
	t.Run("a writer holding the lock postpones them", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		s := openTestStore(t, path, Options{})
		mustCreate(t, s, "a", "cli")
		s.Close()
		db := sqlitetest.Open(t, path)
		for _, ix := range readIndexes {
			sqlitetest.ExecAll(t, db, "DROP INDEX "+ix.name)
		}
		db.Close()
		release := sqlitetest.HoldWriteLock(t, path)
		s2, err := Open(ctx, path, Options{WriteBudget: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("Open under a held lock = %v; want it to open without the indexes", err)
		}
		if _, err := s2.ListSessionsRich(ctx, sessiondb.RichFilter{}); err != nil {
			t.Errorf("listing without the indexes: %v", err)
		}
		s2.Close()
		release()
		if got := readIndexesIn(t, path); len(got) != 0 {
			t.Fatalf("indexes %v made while another writer held the lock", got)
		}
		openTestStore(t, path, Options{}).Close()
		if got := readIndexesIn(t, path); len(got) != all {
			t.Errorf("after a later open: %v, want all %d", got, all)
		}
	})
}

// The history store's writer waits for the write lock on the yielding
// schedule (sqlitedb.Writer.Yield): several processes append to one
// state.db, and quick steps made the lock change hands at every commit
// (bench's concurrent phase at FULL: 0.48 of one process alone). The
// registry's and the subagent store's writers keep the quick steps.
func TestHistoryWriterYields(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "state.db"), Options{})
	if !s.w.Yield {
		t.Fatal("the history store's writer does not yield the lock between its commits")
	}
}
