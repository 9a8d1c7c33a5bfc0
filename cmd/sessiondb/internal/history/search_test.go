package history

import (
	"fmt"
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

// searchJSON is search's --json output as the tests read it.
type searchJSON struct {
	Query struct {
		Text, Ran string
		Changes   []struct{ Change, Text, Why string }
	}
	Hits []struct {
		ID        int64  `json:"id"`
		SessionID string `json:"session_id"`
		Role      string `json:"role"`
	}
	Matches *int
}

// TestSearchSaysWhatRan: search never runs another query than the one
// typed without saying so: what the sanitizer (Hermes v6's, unchanged)
// did is printed beside the results, on stderr and in --json's query; a
// query left empty, an unknown role and a page past the last match are
// said as such, not as "no messages match".
func TestSearchSaysWhatRan(t *testing.T) {
	db := exampleDB(t)

	r := mustCLI(t, "--db", db, "search", "NOT docker")
	if !strings.Contains(r.Stderr, `search: "NOT docker" ran as "docker":`) || !strings.Contains(r.Stderr, `the leading "NOT" was dropped`) ||
		!strings.Contains(r.Stderr, "deploy NOT docker") {
		t.Errorf("NOT docker: stderr does not say the NOT was dropped:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stdout, dockerID) {
		t.Errorf("NOT docker: the docker hits are not shown:\n%s", r.Stdout)
	}
	var js searchJSON
	mustCLI(t, "--db", db, "--json", "search", "NOT docker").Decode(t, &js)
	if js.Query.Text != "NOT docker" || js.Query.Ran != "docker" || len(js.Query.Changes) != 1 ||
		js.Query.Changes[0].Change != "dropped_leading_operator" || js.Query.Changes[0].Text != "NOT" || len(js.Hits) == 0 {
		t.Errorf("NOT docker --json: %+v", js)
	}
	if r := mustCLI(t, "--db", db, "search", "docker"); r.Stderr != "" {
		t.Errorf("a query run as typed has notes: %q", r.Stderr)
	}
	js = searchJSON{}
	mustCLI(t, "--db", db, "--json", "search", "my-app.config", "C++").Decode(t, &js)
	if js.Query.Ran != `"my-app.config" C` || len(js.Query.Changes) != 2 {
		t.Errorf("compound and plus: %+v", js.Query)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown role", []string{"search", "docker", "--role", "bogus"}, `--role "bogus": want one of user, assistant, tool, system`},
		{"a role in capitals", []string{"search", "docker", "--role", "Assistant"}, `--role "Assistant": want one of`},
		{"nothing left", []string{"search", "NOT"}, `the query "NOT" leaves nothing to search for: the leading "NOT" was dropped`},
		{"only syntax", []string{"search", "()"}, `leaves nothing to search for: ( ) became spaces`},
	} {
		r := runCLI(t, "", append([]string{"--db", db}, tc.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q", tc.name, r.Code, r.Stderr, tc.want)
		}
	}
	if r := mustCLI(t, "--db", db, "search", "docker", "--role", "user", "--role", "assistant"); !strings.Contains(r.Stdout, dockerID) {
		t.Errorf("valid roles: %s", r.Stdout)
	}

	var all searchJSON
	mustCLI(t, "--db", db, "--json", "search", "docker", "--limit", "100").Decode(t, &all)
	n := len(all.Hits)
	if n == 0 || n >= 50 {
		t.Fatalf("%d docker hits in the examples", n)
	}
	r = mustCLI(t, "--db", db, "search", "docker", "--offset", "50")
	if want := "no more matches: " + strconv.Itoa(n) + " match(es) in all, offset 50\n"; r.Stdout != want {
		t.Errorf("offset past the end: %q, want %q", r.Stdout, want)
	}
	js = searchJSON{}
	mustCLI(t, "--db", db, "--json", "search", "docker", "--offset", "50").Decode(t, &js)
	if js.Matches == nil || *js.Matches != n || len(js.Hits) != 0 {
		t.Errorf("offset past the end --json: %+v", js)
	}
	js = searchJSON{}
	mustCLI(t, "--db", db, "--json", "search", "docker").Decode(t, &js)
	if js.Matches != nil {
		t.Errorf("matches given on a page that has hits: %+v", js)
	}
	if r := mustCLI(t, "--db", db, "search", "zzyzx"); r.Stdout != "no messages match \"zzyzx\"\n" {
		t.Errorf("no match: %q", r.Stdout)
	}
}

// TestShowNumbersInTheSession: show numbers a session's messages 1..n
// (its ids count every session's messages) and keeps the id beside, in
// text and in --json; --last numbers from the end; a title typed in
// another case is found, a close one offered.
func TestShowNumbersInTheSession(t *testing.T) {
	db := exampleDB(t)
	const lisbonID = "20260509_081244_a3f9e0"
	var js struct {
		HasEarlier bool `json:"has_earlier"`
		Messages   []struct {
			Position int64  `json:"position"`
			ID       int64  `json:"id"`
			Role     string `json:"role"`
		}
	}
	mustCLI(t, "--db", db, "--json", "show", lisbonID).Decode(t, &js)
	if len(js.Messages) != 8 || js.Messages[0].ID == 1 {
		t.Fatalf("the Lisbon session holds %d messages from id %d: the test wants 8, not the first of the store", len(js.Messages), js.Messages[0].ID)
	}
	text := mustCLI(t, "--db", db, "show", lisbonID).Stdout
	for i, m := range js.Messages {
		if m.Position != int64(i+1) {
			t.Errorf("message %d (id %d) has position %d", i+1, m.ID, m.Position)
		}
		if head := fmt.Sprintf("\n#%d (id %d) %s ", i+1, m.ID, m.Role); !strings.Contains(text, head) {
			t.Errorf("the transcript lacks %q:\n%s", head, text)
		}
		if strings.Contains(text, fmt.Sprintf("\n#%d ", m.ID)) {
			t.Errorf("the transcript numbers a message by its id %d", m.ID)
		}
	}

	var last struct {
		HasEarlier bool `json:"has_earlier"`
		Messages   []struct {
			Position int64 `json:"position"`
			ID       int64 `json:"id"`
		}
	}
	mustCLI(t, "--db", db, "--json", "show", lisbonID, "--last", "3").Decode(t, &last)
	if !last.HasEarlier || len(last.Messages) < 3 {
		t.Fatalf("--last 3: %+v", last)
	}
	for i, m := range last.Messages {
		if want := int64(8 - len(last.Messages) + 1 + i); m.Position != want || m.ID != js.Messages[want-1].ID {
			t.Errorf("--last 3, message %d: position %d id %d, want position %d id %d", i, m.Position, m.ID, want, js.Messages[want-1].ID)
		}
	}
	lastText := mustCLI(t, "--db", db, "show", lisbonID, "--last", "3").Stdout
	if !strings.Contains(lastText, fmt.Sprintf("\n#8 (id %d) ", js.Messages[7].ID)) || strings.Contains(lastText, "\n#1 ") {
		t.Errorf("--last 3 text:\n%s", lastText)
	}

	if r := mustCLI(t, "--db", db, "--json", "show", "lisbon WEEKEND"); !strings.Contains(r.Stdout, `"id": "`+lisbonID+`"`) {
		t.Errorf("a title in another case did not find the session: %s", r.Stdout)
	}
	r := runCLI(t, "", "--db", db, "show", "lisbon")
	if r.Code != 3 || !strings.Contains(r.Stderr, `no session has the id, id prefix or title "lisbon"; did you mean: "Lisbon weekend"`) {
		t.Errorf("show lisbon: exit %d, %q", r.Code, r.Stderr)
	}
}
