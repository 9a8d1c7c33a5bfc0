package sqlite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// schemaObjects is a file's sqlite_master (type and name) and the keys of
// its state_meta, as Additions names them.
func schemaObjects(t *testing.T, path string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, r := range sqlitetest.QueryFile(t, path, "SELECT type, name FROM sqlite_master") {
		got[fmt.Sprint(r[0])+" "+fmt.Sprint(r[1])] = true
	}
	if got["table state_meta"] {
		for _, r := range sqlitetest.QueryFile(t, path, "SELECT key FROM state_meta") {
			got[metaKey+" "+fmt.Sprint(r[0])] = true
		}
	}
	return got
}

// TestAdditionsAreWhatAWriteAdds: the additions list is exactly what
// sessiondb's writes add to a file Hermes made: on a schema-6 file (and
// with every option that adds something: the trigram index, the recent
// index of a store beyond its search window, a retention run) each thing
// the writes add is on the list and Store.Additions names it; every entry
// of the list is added by one of them; a schema-21 file Hermes wrote is
// given no object, only our keys in its own state_meta.
func TestAdditionsAreWhatAWriteAdds(t *testing.T) {
	ctx := context.Background()
	listed := map[string]bool{}
	for _, a := range additions {
		listed[a.Kind+" "+a.Name] = true
	}
	seen := map[string]bool{}
	for _, tc := range []struct {
		name string
		file func() string
		o    Options
		adds bool
	}{
		{"v6", func() string { return buildFixture(t, 6, true) }, Options{}, true},
		{"v6 trigram, recent", func() string { return buildFixture(t, 6, true) }, Options{Trigram: true, SearchWindowMessages: 5}, true},
		{"v21", func() string { return hermes21Copy(t) }, Options{Trigram: true, SearchWindowMessages: 5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.file()
			before := schemaObjects(t, path)
			s := openTestStore(t, path, tc.o)
			if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "probe", Source: "cli"}); err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				mustAppend(t, s, sessiondb.NewMessage{SessionID: "probe", Role: "user", Content: str("kubernetes probe " + strconv.Itoa(i))})
			}
			if _, err := s.SearchMessages(ctx, "kubernetes", sessiondb.SearchFilter{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 1e6}); err != nil {
				t.Fatal(err)
			}
			held, err := s.Additions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			var added []string
			for k := range schemaObjects(t, path) {
				if !before[k] {
					added = append(added, k)
				}
			}
			slices.Sort(added)
			var named []string
			for _, a := range held {
				named = append(named, a.Kind+" "+a.Name)
			}
			slices.Sort(named)
			for _, k := range added {
				if !tc.adds && !strings.HasPrefix(k, metaKey+" ") {
					t.Errorf("a newer Hermes' file was given %s (only keys of its state_meta may be added)", k)
				}
				if !listed[k] {
					t.Errorf("added but not on the list: %s", k)
				}
				seen[k] = true
			}
			if !slices.Equal(named, added) {
				t.Errorf("Additions names\n%v\nthe writes added\n%v", named, added)
			}
		})
	}
	for k := range listed {
		if !seen[k] {
			t.Errorf("on the list but never added: %s", k)
		}
	}
}

// TestREADMEListsAdditions: the README's table of what sessiondb adds is
// the additions list, row for row.
func TestREADMEListsAdditions(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, a := range additions {
		row := fmt.Sprintf("| %s | `%s` | %s |\n", a.Kind, a.Name, a.For)
		if !strings.Contains(readme, row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
	if n, want := strings.Count(readme, "| `sessiondb")+strings.Count(readme, "| `sqlite_autoindex_")+strings.Count(readme, "| `state_meta`")+strings.Count(readme, "| `idx_messages_session_id`"), len(additions); n != want {
		t.Errorf("README has %d rows of additions, the list %d", n, want)
	}
}

// schemaText is a file's sqlite_master, every row and its text, and its
// state_meta, in one comparable string.
func schemaText(t *testing.T, path string) string {
	t.Helper()
	text := fmt.Sprint(sqlitetest.QueryFile(t, path, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"))
	if len(sqlitetest.QueryFile(t, path, "SELECT 1 FROM sqlite_master WHERE name = 'state_meta'")) > 0 {
		text += fmt.Sprint(sqlitetest.QueryFile(t, path, "SELECT key, value FROM state_meta ORDER BY key"))
	}
	return text
}

// TestNoAdditions: a store opened with NoAdditions adds nothing to a
// Hermes-made file (schema 6 and 21): after sessions, messages, a search
// beyond the search window, listings by last activity and a retention
// run, sqlite_master and state_meta are as Hermes left them, and each of
// those reads found what was written. With Trigram it is refused.
func TestNoAdditions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		file func() string
	}{
		{"v6", func() string { return buildFixture(t, 6, true) }},
		{"v21", func() string { return hermes21Copy(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.file()
			before := schemaText(t, path)
			s := openTestStore(t, path, Options{NoAdditions: true, SearchWindowMessages: 5})
			for _, id := range []string{"plain1", "plain2"} {
				if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 8 {
				mustAppend(t, s, sessiondb.NewMessage{SessionID: "plain1", Role: "user", Content: str("zeppelin " + strconv.Itoa(i))})
			}
			// plain1 started first but spoke last.
			mustAppend(t, s, sessiondb.NewMessage{SessionID: "plain2", Role: "user", Content: str("earlier")})
			sqlitetest.ExecFile(t, path, "UPDATE messages SET timestamp = 1 WHERE session_id = 'plain2'")
			hits, err := s.SearchMessages(ctx, "zeppelin", sessiondb.SearchFilter{})
			if err != nil || len(hits) != 8 {
				t.Errorf("search: %d hits, %v; want 8", len(hits), err)
			}
			page, err := s.ListSessions(ctx, sessiondb.SessionQuery{Sort: sessiondb.SortLastActive})
			if err != nil || len(page.Sessions) == 0 || page.Sessions[0].ID != "plain1" {
				t.Errorf("listing by last activity: %v; want plain1 first", err)
			}
			if _, err := s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 1e6}); err != nil {
				t.Fatal(err)
			}
			if held, err := s.Additions(ctx); err != nil || len(held) != 0 {
				t.Errorf("Additions = %v, %v; want none", held, err)
			}
			s.Close()
			if after := schemaText(t, path); after != before {
				t.Errorf("the file's schema changed:\n%s\nwas\n%s", after, before)
			}
			if _, err := Open(ctx, path, Options{NoAdditions: true, Trigram: true}); sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "NoAdditions") {
				t.Errorf("NoAdditions with Trigram: %v; want invalid", err)
			}
		})
	}
}

// TestRemoveAdditions: after sessiondb's writes with every addition (the
// trigram and recent indexes, a retention run), RemoveAdditions leaves
// sqlite_master, every row and its text, and state_meta as Hermes made
// them, on a Hermes-made schema-6 file and on the schema-21 fixture; the
// file then passes SQLite 3.40's integrity_check and full-text checks, and
// Hermes' triggers still take writes.
func TestRemoveAdditions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		file func() string
		o    Options
	}{
		{"v6", func() string { return buildFixture(t, 6, true) }, Options{Trigram: true, SearchWindowMessages: 5}},
		{"v21", func() string { return hermes21Copy(t) }, Options{SearchWindowMessages: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.file()
			requireOldSQLite(t, path)
			before := schemaText(t, path)
			s := openTestStore(t, path, tc.o)
			if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "probe", Source: "cli"}); err != nil {
				t.Fatal(err)
			}
			for i := range 8 {
				mustAppend(t, s, sessiondb.NewMessage{SessionID: "probe", Role: "user", Content: str("zeppelin " + strconv.Itoa(i))})
			}
			if _, err := s.SearchMessages(ctx, "zeppelin", sessiondb.SearchFilter{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ApplyRetention(ctx, sessiondb.RetentionPolicy{MaxAgeDays: 1e6}); err != nil {
				t.Fatal(err)
			}
			if schemaText(t, path) == before {
				t.Fatal("the writes added nothing to remove")
			}
			removed, err := s.RemoveAdditions(ctx)
			if err != nil || len(removed) == 0 {
				t.Fatalf("RemoveAdditions = %d, %v", len(removed), err)
			}
			s.Close()
			if after := schemaText(t, path); after != before {
				t.Errorf("after the removal:\n%s\nHermes made:\n%s", after, before)
			}
			// SQLite 3.40's, as the fixture's trigram rows with a NUL are
			// version skew to this one's (TestRebuildFTSOnEveryVersion).
			if got := strings.TrimSpace(oldSQLite(t, path, "print(c.execute('PRAGMA integrity_check').fetchall())")); got != "[('ok',)]" {
				t.Errorf("SQLite 3.40's integrity_check: %v", got)
			}
			oldSQLite(t, path, "c.execute(\"DELETE FROM messages WHERE session_id = 'probe'\")")
			if bad := ftsChecks(t, path, true); len(bad) > 0 {
				t.Errorf("SQLite 3.40's checks after its own delete: %v", bad)
			}
		})
	}
}
