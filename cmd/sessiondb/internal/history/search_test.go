package history

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
)

// appendRaw adds n messages to session dockerID of the store at path, as
// another program writing it would (Hermes), in one statement.
func appendRaw(t *testing.T, path string, n int, text string) {
	t.Helper()
	sqlitetest.ExecFile(t, path, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
INSERT INTO messages (session_id, role, content, timestamp) SELECT ?, 'user', ? || ' ' || i, 1800000000 + i FROM k`, n, dockerID, text)
}

// recentWindow reads the recent search index's marks, and the newest
// message id, from the store at path: zeros for marks it does not have.
func recentWindow(t *testing.T, path string) (low, high, newest int64) {
	t.Helper()
	newest = sqlitetest.QueryFile(t, path, "SELECT max(id) FROM messages")[0][0].(int64)
	if len(sqlitetest.QueryFile(t, path, "SELECT 1 FROM sqlite_master WHERE name = 'state_meta'")) == 0 {
		return 0, 0, newest
	}
	rows := sqlitetest.QueryFile(t, path, `SELECT
    coalesce((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = 'sessiondb.recent.low'), 0),
    coalesce((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = 'sessiondb.recent.high'), 0)`)
	return rows[0][0].(int64), rows[0][1].(int64), newest
}

// TestSearchKeepsTheRecentIndex: on a store beyond the search window
// (200,000 messages), `search` opens the file read-only and still brings
// its recent index up to date (the newest 100,000 messages) before it
// searches, so the newest messages are found through it; with --read-only
// it writes nothing, the index stays behind, and the search still finds
// the newest messages (ranked over the whole index).
func TestSearchKeepsTheRecentIndex(t *testing.T) {
	db := exampleDB(t)
	appendRaw(t, db, 205_000, "filler words about docker")
	if low, high, _ := recentWindow(t, db); low != 0 || high != 0 {
		t.Fatalf("a recent index before any search: %d..%d", low, high)
	}

	hits := mustCLI(t, "--db", db, "--json", "search", "filler", "--limit", "3")
	low, high, newest := recentWindow(t, db)
	if high != newest || low != newest-100_000+1 {
		t.Fatalf("after a search, the recent index holds %d..%d; the newest message is %d", low, high, newest)
	}
	if !strings.Contains(hits.Stdout, `"session_id": "`+dockerID+`"`) && !strings.Contains(hits.Stdout, `"session_id":"`+dockerID+`"`) {
		t.Errorf("search found none of the appended messages: %s", hits.Stdout)
	}

	appendRaw(t, db, 10, "zeppelin arrived later")
	ro := mustCLI(t, "--db", db, "--read-only", "search", "zeppelin")
	if l, h, _ := recentWindow(t, db); l != low || h != high {
		t.Errorf("--read-only moved the recent index from %d..%d to %d..%d", low, high, l, h)
	}
	for i := 1; i <= 10; i++ {
		if !strings.Contains(ro.Stdout, "zeppelin arrived later "+strconv.Itoa(i)) {
			t.Errorf("--read-only search misses appended message %d:\n%s", i, ro.Stdout)
			break
		}
	}
	mustCLI(t, "--db", db, "search", "zeppelin")
	if l, h, n := recentWindow(t, db); h != n || l != n-100_000+1 {
		t.Errorf("a later search left the recent index at %d..%d; the newest message is %d", l, h, n)
	}
}
