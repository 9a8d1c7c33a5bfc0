package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// withRecentIndex opens a store on a new file with o, fills it with
// fillSearchCorpus's sessions and searches it once, which makes its recent
// index.
func withRecentIndex(t *testing.T, o Options, sessions, perSession int) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, o)
	fillSearchCorpus(t, s, sessions, perSession)
	if _, err := s.SearchMessages(context.Background(), "docker", sessiondb.SearchFilter{}); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// oracleIDs ranks the matches of match (passing f) among the messages with
// ids from low to high by bm25, as a fresh FTS5 table holding only those
// messages ranks them: what a search through the recent index must give
// for that window. It is built in a database of its own, from the store's
// rows, with none of the store's code.
func oracleIDs(t *testing.T, s *Store, match string, f sessiondb.SearchFilter, low, high int64) []int64 {
	t.Helper()
	ctx := context.Background()
	db := sqlitetest.Open(t, filepath.Join(t.TempDir(), "oracle.db"))
	sqlitetest.ExecAll(t, db, `CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT);
CREATE VIRTUAL TABLE oracle USING fts5(content);`)
	rows, err := sqlitedb.Append(ctx, s.db, "SELECT m.id, m.session_id, m.role, m.content, s.source FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id >= ? AND m.id <= ?",
		[]any{low, high}, nil, sqlitedb.Values)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"INSERT OR IGNORE INTO sessions (id, source) VALUES (?, ?)", []any{r[1], r[4]}},
			{"INSERT INTO messages (id, session_id, role) VALUES (?, ?, ?)", []any{r[0], r[1], r[2]}},
			{"INSERT INTO oracle (rowid, content) VALUES (?, ?)", []any{r[0], r[3]}},
		} {
			if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	filters, args := s.searchFilters(f)
	ids, err := sqlitedb.Append(ctx, db, "SELECT m.id FROM oracle JOIN messages m ON m.id = oracle.rowid JOIN sessions s ON s.id = m.session_id WHERE oracle MATCH ?"+
		filters+" ORDER BY oracle.rank", append([]any{match}, args...), []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// olderNewestFirst keeps the ids under low, newest first.
func olderNewestFirst(ids []int64, low int64) []int64 {
	out := []int64{}
	for _, id := range ids {
		if id < low {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) })
	return out
}

// hitIDs is the ids of hits, in order.
func hitIDs(hits []sessiondb.SearchHit) []int64 {
	out := []int64{}
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// recentMarks reads the recent index's window from the file.
func recentMarks(t *testing.T, path string) (low, high int64) {
	t.Helper()
	rows := sqlitetest.QueryFile(t, path, "SELECT key, CAST(value AS INTEGER) FROM state_meta WHERE key IN (?, ?)", metaRecentLow, metaRecentHigh)
	if len(rows) != 2 {
		t.Fatalf("recent index marks: %v", rows)
	}
	for _, r := range rows {
		if r[0] == metaRecentLow {
			low = r[1].(int64)
		} else {
			high = r[1].(int64)
		}
	}
	return low, high
}

// checkRecentMirrors checks the recent index of the store at path against
// messages: it holds exactly the ids of the messages inside its window, the
// window reaches the newest message and at least window ids down, nothing
// waits in the change log, FTS5 finds it sound, and it ranks the queries
// exactly as a fresh index of the window's messages as they are now does,
// which proves it holds their present words.
func checkRecentMirrors(t *testing.T, s *Store, window int64, when string, queries ...string) {
	t.Helper()
	ctx := context.Background()
	low, high := recentMarks(t, s.path)
	var newest int64
	if err := s.queryRow(ctx, "SELECT max(id) FROM messages").Scan(&newest); err != nil {
		t.Fatal(err)
	}
	if high != newest || low > newest-window+1 {
		t.Fatalf("%s: window %d..%d, newest message %d, window size %d", when, low, high, newest, window)
	}
	indexed, err := sqlitedb.Append(ctx, s.db, "SELECT rowid FROM "+recentTable+" ORDER BY rowid", nil, []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	live, err := sqlitedb.Append(ctx, s.db, "SELECT id FROM messages WHERE id >= ? AND id <= ? ORDER BY id", []any{low, high}, []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(indexed, live) {
		t.Errorf("%s: the recent index holds %v\nthe window's messages are %v", when, indexed, live)
	}
	if n := sqlitetest.QueryFile(t, s.path, "SELECT count(*) FROM "+recentChanged)[0][0].(int64); n != 0 {
		t.Errorf("%s: %d ids wait in the change log", when, n)
	}
	// FTS5 checks inside a write statement: through a connection of its
	// own, so a read-only store can be checked too.
	sqlitetest.ExecFile(t, s.path, "INSERT INTO "+recentTable+"("+recentTable+", rank) VALUES('integrity-check', 0)")
	for _, q := range queries {
		got, err := sqlitedb.Append(ctx, s.db, "SELECT rowid FROM "+recentTable+" WHERE "+recentTable+" MATCH ? ORDER BY rank", []any{q}, []int64{}, sqlitedb.Value[int64])
		if err != nil {
			t.Fatal(err)
		}
		if want := oracleIDs(t, s, q, sessiondb.SearchFilter{}, low, high); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q through the recent index ranks %v\na fresh index of the window ranks %v", when, q, got, want)
		}
	}
}

// TestSearchRecentIndex: a store of more than SearchWindowMessages
// messages is searched through the recent index: its matches among the
// newest messages come first, ranked by bm25 as an index of just those
// messages ranks them, then the older matches, newest first; pages are cut
// from that one order. A store within the window is ranked
// whole, as Hermes ranks it.
func TestSearchRecentIndex(t *testing.T) {
	ctx := context.Background()
	path := corpusFile(t, 30, 40) // 1,200 messages, ids 1 to 1200
	cli := sessiondb.SearchFilter{Sources: []string{"cli"}}
	for _, tc := range []struct {
		name   string
		window int
		query  string
		f      sessiondb.SearchFilter
		recent int // the recent index's size, when smaller than the window
	}{
		{"the newest 600 messages hold more than a page", 600, "docker", sessiondb.SearchFilter{}, 0},
		{"a recent index smaller than the window", 600, "docker", sessiondb.SearchFilter{}, 250},
		{"with a filter", 600, "docker", cli, 0},
		{"with a role filter", 600, "docker", sessiondb.SearchFilter{Roles: []string{"user"}}, 0},
		{"two words", 600, "alpha omega", sessiondb.SearchFilter{}, 0},
		{"a phrase", 600, `"alpha beta"`, sessiondb.SearchFilter{}, 0},
		{"a prefix", 600, "ep*", sessiondb.SearchFilter{}, 0},
		{"the newest 5 messages hold fewer than a page", 5, "docker", sessiondb.SearchFilter{}, 0},
		{"a page straddling the two", 100, "docker", sessiondb.SearchFilter{Offset: 40, Limit: 30}, 0},
		{"a page past the recent matches", 100, "docker", sessiondb.SearchFilter{Offset: 80, Limit: 20}, 0},
		{"a page past the recent matches, filtered", 100, "docker", sessiondb.SearchFilter{Sources: []string{"cli"}, Offset: 30, Limit: 10}, 0},
		{"the store is within the window", 1200, "docker", sessiondb.SearchFilter{}, 0},
		{"the store is within the window, a smaller recent index", 1200, "docker", sessiondb.SearchFilter{}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := openTestStore(t, path, Options{SearchWindowMessages: tc.window, SearchRecentMessages: tc.recent, SearchWindow: 100_000})
			hits, err := w.SearchMessages(ctx, tc.query, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			match := fts.Sanitize(tc.query)
			all := naiveAllIDs(t, w, match, tc.f)
			limit := tc.f.Limit
			if limit == 0 {
				limit = 20
			}
			page := func(ids []int64) []int64 { return ids[min(tc.f.Offset, len(ids)):min(tc.f.Offset+limit, len(ids))] }
			if tc.window >= 1200 {
				if got, want := hitIDs(hits), page(all); !reflect.DeepEqual(got, want) {
					t.Errorf("a store within the window: ids = %v\nwant Hermes' order %v", got, want)
				}
				return
			}
			held := tc.window
			if tc.recent > 0 {
				held = tc.recent
			}
			low := int64(1200 - held + 1)
			recent := oracleIDs(t, w, match, tc.f, low, 1200)
			order := append(slices.Clone(recent), olderNewestFirst(all, low)...)
			want := page(order)
			if reflect.DeepEqual(want, page(all)) {
				t.Fatalf("the recent index changes nothing for %q: the test proves nothing", tc.query)
			}
			if tc.f.Offset > 0 && tc.f.Offset+limit > len(recent) && len(want) < limit {
				t.Fatalf("the page is not full: %d of %d", len(want), limit)
			}
			if got := hitIDs(hits); !reflect.DeepEqual(got, want) {
				t.Errorf("ids = %v\nwant %v\n(%d recent matches)", got, want, len(recent))
			}
		})
	}
}

// TestRecentIndexFollowsWrites: the recent index holds exactly the
// messages of its window, with their present words, after every kind of
// write by us and by Hermes: appends, deletes and changed text inside the
// window, a message inserted with an id inside it, the window sliding up
// in small steps, and a store that moved on by more than a window.
func TestRecentIndexFollowsWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{SearchWindowMessages: 100})
	s.recentBatch = 7             // many small steps
	fillSearchCorpus(t, s, 6, 40) // 240 messages
	search := func(when string) {
		t.Helper()
		if _, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		checkRecentMirrors(t, s, 100, when, "docker", "alpha omega", `"beta gamma"`, "zeppelin", "ka*")
	}
	search("the first search builds it")

	for i := range 15 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "s001", Role: "user", Content: str("zeppelin docker " + strconv.Itoa(i))})
	}
	search("appends")

	low, high := recentMarks(t, path)
	hermes := func(q string, args ...any) { t.Helper(); sqlitetest.ExecFile(t, path, q, args...) }
	hermes("DELETE FROM messages WHERE id IN (?, ?)", low+3, high-1)
	hermes("UPDATE messages SET content = 'zeppelin kappa rewritten' WHERE id = ?", low+10)
	hermes("UPDATE messages SET content = 'moved docker' WHERE id = ?", low-5) // below the window: not its business
	hermes("UPDATE messages SET role = 'assistant' WHERE id = ?", low+11)      // not the text
	hermes(`INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 's002', 'user', 'zeppelin imported with its id', 1)`, low+3)
	if n := sqlitetest.QueryFile(t, path, "SELECT count(*) FROM "+recentChanged)[0][0].(int64); n != 3 {
		t.Errorf("Hermes' writes inside the window noted %d ids, want 3 (the deleted, the rewritten, the reinserted)", n)
	}
	search("Hermes' deletes, a changed text and an insert with an id inside the window")

	hermes("DELETE FROM messages WHERE id >= ?", high-2)
	search("Hermes' delete of the newest messages")

	low, _ = recentMarks(t, path)
	hermes("DELETE FROM messages WHERE session_id IN ('s003', 's004') AND id >= ?", low)
	if n := sqlitetest.QueryFile(t, path, "SELECT count(*) FROM "+recentChanged)[0][0].(int64); n <= s.recentBatch {
		t.Fatalf("%d ids noted: the purge needs more than one step of %d to prove anything", n, s.recentBatch)
	}
	search("Hermes' delete of more messages than a step purges")

	if _, err := s.DeleteSession(ctx, "s005"); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearMessages(ctx, "s004"); err != nil {
		t.Fatal(err)
	}
	// Our own deletes purge in their own transaction, before any search.
	left := sqlitetest.QueryFile(t, path, "SELECT count(*) FROM "+recentTable+" r WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.rowid)")
	if n := left[0][0].(int64); n != 0 {
		t.Errorf("after our delete and clear, %d deleted messages are still in the recent index", n)
	}
	for i := range 20 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "s001", Role: "user", Content: str("alpha omega " + strconv.Itoa(i))})
	}
	search("our deletes, then appends")

	// More than a window appended since: it starts again from the top.
	for i := range 150 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "s002", Role: "assistant", Content: str("beta gamma docker " + strconv.Itoa(i))})
	}
	search("more than a window behind")
}

// TestRecentIndexUnderOlderSQLite: Hermes on an SQLite older than
// contentless_delete (Debian 12's Python: 3.40.1) inserts, deletes and
// rewrites messages of a file that has the recent index (its triggers are
// plain SQL), and the next search of ours brings the index up to date.
func TestRecentIndexUnderOlderSQLite(t *testing.T) {
	ctx := context.Background()
	s, path := withRecentIndex(t, Options{SearchWindowMessages: 50}, 3, 40)
	low, _ := recentMarks(t, path)
	s.Close()
	old := requireOldSQLite(t, path)
	if v := strings.TrimSpace(old); versionAtLeast(v, 3, 43) {
		t.Fatalf("python3's SQLite %s has contentless_delete: it cannot play an older Hermes here", v)
	}
	out := oldSQLite(t, path, "c.execute('DELETE FROM messages WHERE id = ?', ("+strconv.FormatInt(low+1, 10)+",))\n"+
		"c.execute(\"UPDATE messages SET content = 'zeppelin rewritten by hermes' WHERE id = ?\", ("+strconv.FormatInt(low+2, 10)+",))\n"+
		"c.execute(\"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s001', 'user', 'zeppelin appended by hermes', 2)\")\n"+
		"print(c.execute('SELECT count(*) FROM "+recentChanged+"').fetchone()[0])\n")
	if strings.TrimSpace(out) != "2" {
		t.Fatalf("SQLite %s's writes: %s (want 2 ids noted: the deleted and the rewritten message)", old, out)
	}
	s = openTestStore(t, path, Options{SearchWindowMessages: 50})
	hits, err := s.SearchMessages(ctx, "zeppelin", sessiondb.SearchFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 {
		t.Errorf("zeppelin found %d times, want the rewritten and the appended message", len(hits))
	}
	checkRecentMirrors(t, s, 50, "after an older SQLite's writes", "zeppelin", "docker")
}

// TestRecentIndexReadOnly: a read-only store uses a current recent index
// and changes no byte of the file; one whose index is behind (another
// program appended since) ranks over the whole index instead, as before,
// and still writes nothing; one opened with KeepSearchIndex brings the
// index up to date and searches through it, and still refuses writes.
func TestRecentIndexReadOnly(t *testing.T) {
	ctx := context.Background()
	s, path := withRecentIndex(t, Options{SearchWindowMessages: 300}, 20, 40) // 800 messages
	s.Close()
	search := func() []int64 {
		t.Helper()
		before := testkit.DigestStore(t, path)
		r := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 300, SearchWindow: 100_000})
		hits, err := r.SearchMessages(ctx, "docker", sessiondb.SearchFilter{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		// A read-only open may leave an empty -wal and -shm; it writes no
		// page.
		if after := testkit.DigestStore(t, path); after.File != before.File {
			t.Error("a read-only search changed the store file")
		}
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
			t.Errorf("a read-only search wrote %d bytes of WAL", fi.Size())
		}
		return hitIDs(hits)
	}
	s = openTestStore(t, path, Options{SearchWindowMessages: 300})
	recent := oracleIDs(t, s, "docker", sessiondb.SearchFilter{}, 501, 800)[:20]
	whole := naiveAllIDs(t, s, "docker", sessiondb.SearchFilter{})[:20]
	s.Close()
	if reflect.DeepEqual(recent, whole) {
		t.Fatal("the recent index changes nothing here: the test proves nothing")
	}
	if got := search(); !reflect.DeepEqual(got, recent) {
		t.Errorf("read-only with a current index: %v\nwant %v", got, recent)
	}
	sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s001', 'user', 'appended by another program', 3)")
	s = openTestStore(t, path, Options{SearchWindowMessages: 300})
	whole = naiveAllIDs(t, s, "docker", sessiondb.SearchFilter{})[:20]
	s.Close()
	if got := search(); !reflect.DeepEqual(got, whole) {
		t.Errorf("read-only with the index behind: %v\nwant the whole index's order %v", got, whole)
	}

	// With KeepSearchIndex, a read-only store brings the index up to
	// date through a writer of its own, and searches through it.
	k := openTestStore(t, path, Options{ReadOnly: true, KeepSearchIndex: true, SearchWindowMessages: 300})
	hits, err := k.SearchMessages(ctx, "docker", sessiondb.SearchFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := oracleIDs(t, k, "docker", sessiondb.SearchFilter{}, 502, 801)[:20]; !reflect.DeepEqual(hitIDs(hits), want) {
		t.Errorf("read-only keeping the index: %v\nwant the new window's order %v", hitIDs(hits), want)
	}
	if _, err := k.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s001", Role: "user", Content: str("no")}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("a read-only store keeping its search index appended: %v", err)
	}
	checkRecentMirrors(t, k, 300, "kept by a read-only store", "docker")
}

// TestRecentIndexNeverAddedTo: a newer Hermes' file, a store within the
// window and a store searched with no messages window get no recent index.
func TestRecentIndexNeverAddedTo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		window int
		newer  bool
	}{
		{"a newer Hermes' file", 10, true},
		{"a store within the window", 1000, false},
		{"no messages window", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s := openTestStore(t, path, Options{})
			fillSearchCorpus(t, s, 3, 40)
			s.Close()
			if tc.newer {
				sqlitetest.ExecFile(t, path, "UPDATE schema_version SET version = 7")
			}
			s = openTestStore(t, path, Options{SearchWindowMessages: tc.window})
			if hits, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil || len(hits) != 20 {
				t.Fatalf("search: %d hits, %v", len(hits), err)
			}
			var n int
			if err := s.queryRow(ctx, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sessiondb_fts_recent%' OR name LIKE 'sessiondb.recent%'").Scan(&n); err != nil && err != sql.ErrNoRows {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d objects of the recent index were made", n)
			}
		})
	}
}

// TestRecentIndexCheckedAndRebuilt: the full-text check covers the recent
// index and finds a damaged one; a rebuild of the full-text index drops it
// (triggers too, so no write to messages can fail on a missing log), and
// the next search makes it again whole.
func TestRecentIndexCheckedAndRebuilt(t *testing.T) {
	ctx := context.Background()
	s, path := withRecentIndex(t, Options{SearchWindowMessages: 100, SearchWindow: 100_000}, 6, 40)
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Fatalf("check of a sound store: %v", err)
	}
	// The recent index's structure record overwritten: every read of it
	// fails.
	sqlitetest.ExecFile(t, path, "UPDATE "+recentTable+"_data SET block = X'0000000102' WHERE id = 10")
	if err := s.FTSIntegrityCheck(ctx); err == nil {
		t.Fatal("the check passed a recent index with its structure record garbled")
	}
	// Meanwhile searches rank over the whole index instead of failing.
	for _, q := range []string{"docker", "alpha omega", "ka*"} {
		hits, err := s.SearchMessages(ctx, q, sessiondb.SearchFilter{})
		if err != nil {
			t.Fatalf("search %q over a damaged recent index: %v", q, err)
		}
		if want := naiveAllIDs(t, s, fts.Sanitize(q), sessiondb.SearchFilter{})[:20]; !reflect.DeepEqual(hitIDs(hits), want) {
			t.Errorf("search %q over a damaged recent index: %v\nwant the whole index's order %v", q, hitIDs(hits), want)
		}
	}
	if err := s.RebuildFTS(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sqlitetest.QueryFile(t, path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sessiondb_fts_recent%'")[0][0].(int64); n != 0 {
		t.Errorf("after a rebuild, %d objects of the recent index are left", n)
	}
	sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s001', 'user', 'written while there is no recent index', 4)")
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Fatalf("check after the rebuild: %v", err)
	}
	if _, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil {
		t.Fatal(err)
	}
	checkRecentMirrors(t, s, 100, "made again after a rebuild", "docker", "written")
}

// TestRecentIndexBehind: what the index owes is counted as the messages to
// add and to delete (a whole window for one to make), nothing once it is
// current, and at least one for a change to purge; SyncRecentIndex pays
// it; a store within the window or opened read-only owes nothing.
func TestRecentIndexBehind(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{SearchWindowMessages: 100})
	fillSearchCorpus(t, s, 6, 40) // 240 messages
	behind := func(want int64, when string) {
		t.Helper()
		if n, err := s.RecentIndexBehind(ctx); err != nil || n != want {
			t.Errorf("%s: behind %d, %v; want %d", when, n, err, want)
		}
	}
	behind(100, "no index yet")
	if err := s.SyncRecentIndex(ctx); err != nil {
		t.Fatal(err)
	}
	behind(0, "made")
	checkRecentMirrors(t, s, 100, "SyncRecentIndex", "docker")
	for i := range 15 {
		mustAppend(t, s, sessiondb.NewMessage{SessionID: "s001", Role: "user", Content: str("more " + strconv.Itoa(i))})
	}
	behind(30, "15 appended: 15 to add, 15 to delete")
	if err := s.SyncRecentIndex(ctx); err != nil {
		t.Fatal(err)
	}
	behind(0, "caught up")
	low, _ := recentMarks(t, path)
	sqlitetest.ExecFile(t, path, "UPDATE messages SET content = 'rewritten' WHERE id = ?", low+1)
	behind(1, "a rewritten message to purge")
	s.Close()
	r := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 100})
	if n, err := r.RecentIndexBehind(ctx); err != nil || n != 0 {
		t.Errorf("read-only: behind %d, %v; want 0 (it cannot catch up)", n, err)
	}
	w := openTestStore(t, path, Options{SearchWindowMessages: 1000})
	if n, err := w.RecentIndexBehind(ctx); err != nil || n != 0 {
		t.Errorf("within the window: behind %d, %v; want 0", n, err)
	}
}

// TestRecentIndexSharedByHandles: two handles on one file (as two
// processes would have), each appending and searching at once, keep one
// recent index between them: no search fails, and once both stop the
// index mirrors the messages.
func TestRecentIndexSharedByHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	o := Options{SearchWindowMessages: 150}
	a := openTestStore(t, path, o)
	fillSearchCorpus(t, a, 6, 40)
	b := openTestStore(t, path, o)
	a.recentBatch, b.recentBatch = 9, 9
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i, st := range []*Store{a, b} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 60 {
				c := fmt.Sprintf("docker handle %d message %d", i, j)
				if _, err := st.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s001", Role: "user", Content: &c}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 30 {
				if _, err := st.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := a.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil {
		t.Fatal(err)
	}
	checkRecentMirrors(t, a, 150, "two handles appending and searching", "docker", "handle")
}

// TestRecentIndexImpostor: a file whose sessiondb_fts_recent is a plain
// table (another program made one of that name) is searched as if it had
// no recent index: a read-only store ranks over messages_fts, exactly as a
// store that keeps none, and a writable one replaces the impostor with the
// index and searches through it.
func TestRecentIndexImpostor(t *testing.T) {
	ctx := context.Background()
	s, path := withRecentIndex(t, Options{SearchWindowMessages: 50}, 3, 40)
	s.Close()
	sqlitetest.ExecFile(t, path, "DROP TABLE "+recentTable+"; CREATE TABLE "+recentTable+" (content TEXT, rank INTEGER)")

	none := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 50, SearchRecentMessages: -1})
	want, err := none.SearchMessages(ctx, "docker", sessiondb.SearchFilter{})
	if err != nil || len(want) == 0 {
		t.Fatalf("without a recent index: %d hits, %v", len(want), err)
	}
	ro := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 50})
	got, err := ro.SearchMessages(ctx, "docker", sessiondb.SearchFilter{})
	if err != nil {
		t.Fatalf("read-only search beside the impostor: %v", err)
	}
	if !reflect.DeepEqual(hitIDs(got), hitIDs(want)) {
		t.Errorf("read-only search beside the impostor = %v\nwant the ranking without a recent index %v", hitIDs(got), hitIDs(want))
	}

	s = openTestStore(t, path, Options{SearchWindowMessages: 50})
	if _, err := s.SearchMessages(ctx, "docker", sessiondb.SearchFilter{}); err != nil {
		t.Fatalf("writable search beside the impostor: %v", err)
	}
	var sql string
	if err := s.queryRow(ctx, "SELECT sql FROM sqlite_master WHERE name = ?", recentTable).Scan(&sql); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, "fts5") {
		t.Errorf("after a writable search, %s is still %q", recentTable, sql)
	}
	checkRecentMirrors(t, s, 50, "after replacing the impostor", "docker", "zeppelin")
}

// TestRecentIndexFailureFallsBack: a recent index that fails a query the
// store's own index answers (here FTS5 with detail=none, which refuses
// phrases, put in place with its marks current) does not fail the search:
// it ranks over messages_fts instead, as a store without the index does.
func TestRecentIndexFailureFallsBack(t *testing.T) {
	ctx := context.Background()
	s, path := withRecentIndex(t, Options{SearchWindowMessages: 50}, 3, 40)
	s.Close()
	sqlitetest.ExecFile(t, path, "DROP TABLE "+recentTable+"; CREATE VIRTUAL TABLE "+recentTable+" USING fts5(content, content='', contentless_delete=1, detail=none)")
	const phrase = `"docker alpha"`
	none := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 50, SearchRecentMessages: -1})
	want, err := none.SearchMessages(ctx, phrase, sessiondb.SearchFilter{})
	if err != nil || len(want) == 0 {
		t.Fatalf("without a recent index: %d hits, %v", len(want), err)
	}
	ro := openTestStore(t, path, Options{ReadOnly: true, SearchWindowMessages: 50})
	got, err := ro.SearchMessages(ctx, phrase, sessiondb.SearchFilter{})
	if err != nil {
		t.Fatalf("search through a recent index that refuses phrases: %v", err)
	}
	if !reflect.DeepEqual(hitIDs(got), hitIDs(want)) {
		t.Errorf("search through a failing recent index = %v\nwant the ranking without one %v", hitIDs(got), hitIDs(want))
	}
}
