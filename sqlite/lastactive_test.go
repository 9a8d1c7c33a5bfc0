package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// lastActiveRows is sessiondb_last_active as "id parent source key" lines,
// sorted by id.
func lastActiveRows(t *testing.T, path string) []string {
	t.Helper()
	return rowLines(sqlitetest.QueryFile(t, path, "SELECT session_id, parent_session_id, source, last_active FROM "+lastActiveTable+" ORDER BY session_id"))
}

// definedRows is what sessiondb_last_active must hold, computed from the
// session and message rows by the definition of last activity (the newest
// message's timestamp, else started_at) and of a chain's (the newest over
// the session and every session reached from it through a parent ended by
// compression to a child that is no branch, no delegate and not of source
// tool: Hermes' order_by_last_active), written out here independently.
func definedRows(t *testing.T, path string) []string {
	t.Helper()
	return rowLines(sqlitetest.QueryFile(t, path, `WITH RECURSIVE own(id, active) AS (
        SELECT s.id, CASE WHEN EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
             THEN (SELECT m.timestamp FROM messages m WHERE m.session_id = s.id ORDER BY m.timestamp DESC LIMIT 1)
             ELSE s.started_at END FROM sessions s),
    reach(top, id) AS (
        SELECT id, id FROM sessions
        UNION
        SELECT r.top, c.id FROM reach r JOIN sessions p ON p.id = r.id JOIN sessions c ON c.parent_session_id = p.id
        WHERE p.end_reason = 'compression' AND COALESCE(c.source, '') <> 'tool'
          AND NOT (json_valid(c.model_config) AND (json_extract(c.model_config, '$._branched_from') IS NOT NULL
                                                OR json_extract(c.model_config, '$._delegate_from') IS NOT NULL)))
    SELECT s.id, s.parent_session_id, s.source, (SELECT MAX(o.active) FROM reach r JOIN own o ON o.id = r.id WHERE r.top = s.id)
    FROM sessions s ORDER BY s.id`))
}

func rowLines(rows [][]any) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, strings.TrimSuffix(fmt.Sprintln(r...), "\n"))
	}
	return out
}

// checkLastActive fails unless the table equals the definition and every
// listing by last activity (roots, children, a source, a parent, both
// ways, page by page) returns through the table what the computed query
// returns.
func checkLastActive(t *testing.T, s *Store, step string) {
	t.Helper()
	// The table is exact once caught up: every listing by last activity
	// catches it up first (appends do not write it).
	if current, err := s.syncLastActive(context.Background()); err != nil || !current {
		t.Fatalf("after %s, catching %s up: current %v, %v", step, lastActiveTable, current, err)
	}
	got, want := lastActiveRows(t, s.path), definedRows(t, s.path)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after %s, %s holds\n    %s\nwant\n    %s", step, lastActiveTable, strings.Join(got, "\n    "), strings.Join(want, "\n    "))
	}
	if !s.q.lastActive {
		t.Fatalf("after %s, listings do not read %s", step, lastActiveTable)
	}
	for _, q := range []sessiondb.SessionQuery{{}, {Ascending: true}, {IncludeChildren: true}, {Source: "cli"}, {Source: "telegram", Ascending: true},
		{ParentID: "root"}, {Model: "gpt"}, {Text: "o"}} {
		q.Sort = sessiondb.SortLastActive
		viaTable := walkLastActive(t, s, q)
		s.q.lastActive = false
		computed := walkLastActive(t, s, q)
		s.q.lastActive = true
		if !reflect.DeepEqual(viaTable, computed) {
			t.Errorf("after %s, listing %+v through the table\n    %v\ncomputed\n    %v", step, q, viaTable, computed)
		}
	}
}

// walkLastActive lists q two rows a page, as "id@last_active" strings.
func walkLastActive(t *testing.T, s *Store, q sessiondb.SessionQuery) []string {
	t.Helper()
	q.Limit = 2
	out := []string{}
	for range 100 {
		p, err := s.ListSessions(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Sessions {
			out = append(out, fmt.Sprintf("%s@%v", r.ID, r.LastActive))
		}
		if p.Next == "" {
			return out
		}
		q.After = p.Next
	}
	t.Fatalf("listing %+v did not end", q)
	return nil
}

// TestLastActiveTable: sessiondb_last_active equals the definition of last
// activity, and listings through it equal the computed ones, after every
// kind of write: ours (appends, a compression child, clearing, deleting,
// pruning) and Hermes' own raw SQL on the file, including rows no API of
// ours makes (a message older than its session, a session id renamed).
func TestLastActiveTable(t *testing.T) {
	ctx := context.Background()
	c := testkit.NewClock(time.Unix(1_000_000, 0))
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{Now: c.Now})
	create := func(n sessiondb.NewSession) {
		t.Helper()
		if _, err := s.CreateSession(ctx, n); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	appendTo := func(id string) {
		t.Helper()
		mustAppend(t, s, sessiondb.NewMessage{SessionID: id, Role: "user", Content: str("hello " + id)})
		c.Advance(time.Second)
	}
	create(sessiondb.NewSession{ID: "root", Source: "cli", Model: "gpt"})
	create(sessiondb.NewSession{ID: "quiet", Source: "telegram"})
	create(sessiondb.NewSession{ID: "other", Source: "cli", Model: "gpt"})
	create(sessiondb.NewSession{ID: "tie", Source: "telegram"})
	checkLastActive(t, s, "creating sessions without messages")

	// Appends write nothing to the table: it falls behind its mark, and
	// the next listing by last activity catches it up.
	before := lastActiveRows(t, path)
	for _, id := range []string{"root", "other", "root", "tie"} {
		appendTo(id)
	}
	if got := lastActiveRows(t, path); !reflect.DeepEqual(got, before) {
		t.Errorf("appends wrote the table: %v, was %v", got, before)
	}
	if behind, err := s.lastActiveBehind(ctx); err != nil || !behind {
		t.Errorf("after appends the table is behind: %v, %v; want true", behind, err)
	}
	checkLastActive(t, s, "appends")

	// A compression child: the root ends, its continuation carries on.
	if err := s.EndSession(ctx, "root", "compression"); err != nil {
		t.Fatal(err)
	}
	create(sessiondb.NewSession{ID: "root-2", Source: "cli", ParentSessionID: "root"})
	appendTo("root-2")
	checkLastActive(t, s, "a compression child")

	if err := s.ClearMessages(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	checkLastActive(t, s, "clearing a session's messages")

	// Hermes' own writes (v6 SQL shapes), through another connection.
	hermes := func(q string, args ...any) { t.Helper(); sqlitetest.ExecFile(t, path, q, args...) }
	hermes("INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at) VALUES ('h1', 'cli', NULL, 'gpt', NULL, NULL, NULL, ?)", 1_000_500.0)
	hermes("INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES ('h1', 'unknown', NULL, ?)", 1_000_900.0)
	checkLastActive(t, s, "Hermes' INSERT OR IGNORE of a session, twice")
	for i, ts := range []float64{1_000_600, 1_000_550} {
		hermes(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
            VALUES ('h1', 'assistant', ?, NULL, NULL, NULL, ?, NULL, NULL, NULL, NULL, NULL)`, fmt.Sprint("answer ", i), ts)
		hermes("UPDATE sessions SET message_count = message_count + 1 WHERE id = 'h1'")
	}
	// A clock stepped back: the message is older than the session started.
	hermes("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('quiet', 'user', 'from the past', 10)")
	checkLastActive(t, s, "Hermes' appends, one older than its session")
	// A message inserted with an id below the mark (an import keeping
	// ids): the catch-up would not see it, the trigger does.
	hermes("INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (2, 'other', 'user', 'an old id', 1_000_650)")
	if behind, err := s.lastActiveBehind(ctx); err != nil || behind {
		t.Errorf("after an insert below the mark the table is behind: %v, %v; want false", behind, err)
	}
	checkLastActive(t, s, "an insert with an id below the mark")
	// Two sessions with the same last activity: ties go by id.
	hermes("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('tie', 'user', 'same time', 1_000_600)")
	checkLastActive(t, s, "a tie in last activity")
	hermes("UPDATE sessions SET ended_at = 5, end_reason = 'user_exit' WHERE id = 'h1'")
	hermes("UPDATE messages SET timestamp = 2_000_000 WHERE session_id = 'quiet'")
	checkLastActive(t, s, "a message's timestamp changed")
	hermes("UPDATE messages SET session_id = 'other' WHERE content = 'answer 0'")
	checkLastActive(t, s, "a message moved to another session")
	hermes("DELETE FROM messages WHERE content = 'answer 1'")
	checkLastActive(t, s, "the newest message of a session deleted")
	hermes("UPDATE sessions SET started_at = 3_000_000, source = 'telegram' WHERE id = 'h1'")
	hermes("UPDATE sessions SET parent_session_id = 'root' WHERE id = 'tie'")
	checkLastActive(t, s, "a session's start, source and parent changed")
	hermes("UPDATE sessions SET id = 'h1-renamed' WHERE id = 'h1'")
	checkLastActive(t, s, "a session's id changed")
	hermes("DELETE FROM messages WHERE session_id = 'root'")
	hermes("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = 'root'")
	hermes("DELETE FROM sessions WHERE id = 'root'")
	checkLastActive(t, s, "Hermes' delete of a session")

	if _, err := s.DeleteSession(ctx, "tie"); err != nil {
		t.Fatal(err)
	}
	checkLastActive(t, s, "DeleteSession")
	for _, id := range []string{"quiet", "other"} {
		if err := s.EndSession(ctx, id, "done"); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(3 * 24 * time.Hour)
	if n, err := s.PruneSessions(ctx, 1, "telegram"); err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want the one ended telegram session", n, err)
	}
	checkLastActive(t, s, "prune")
	if got := lastActiveRows(t, path); len(got) != 3 {
		t.Errorf("rows left %v, want other, root-2 and h1-renamed", got)
	}
}

// TestLastActiveMigration: a writable open of a v6 file Hermes wrote adds
// the table filled from its rows; a read-only open of such a file changes
// nothing and lists by the computed query; a partial table (a trigger
// dropped) is made again whole; a newer Hermes' file is never given one.
func TestLastActiveMigration(t *testing.T) {
	ctx := context.Background()
	byLastActive := sessiondb.SessionQuery{Sort: sessiondb.SortLastActive}
	list := func(s *Store) []string {
		t.Helper()
		return walkLastActive(t, s, byLastActive)
	}
	want := []string{"old2@2001", "old1@1002"}

	t.Run("read-only keeps the computed query", func(t *testing.T) {
		path := buildFixture(t, 6, true)
		before := masterSQL(t, path)
		s := openTestStore(t, path, Options{ReadOnly: true})
		if s.q.lastActive {
			t.Fatal("a read-only open of a file without the table reads it")
		}
		if got := list(s); !reflect.DeepEqual(got, want) {
			t.Errorf("listing %v, want %v", got, want)
		}
		if !sameStrings(masterSQL(t, path), before) {
			t.Error("a read-only open changed the schema")
		}
	})
	t.Run("a writable open backfills", func(t *testing.T) {
		path := buildFixture(t, 6, true)
		s := openTestStore(t, path, Options{})
		if got, want := lastActiveRows(t, path), []string{"old1 <nil> cli 1002", "old2 <nil> telegram 2001"}; !reflect.DeepEqual(got, want) {
			t.Errorf("backfilled %v, want %v", got, want)
		}
		if got := list(s); !reflect.DeepEqual(got, want) {
			t.Errorf("listing %v, want %v", got, want)
		}
		if v, err := s.SchemaVersion(ctx); err != nil || v != 6 {
			t.Errorf("version %d, %v; want 6", v, err)
		}
		checkLastActive(t, s, "the migration")
	})
	t.Run("a partial table is made again", func(t *testing.T) {
		path := buildFixture(t, 6, true)
		openTestStore(t, path, Options{}).Close()
		sqlitetest.ExecFile(t, path, "DROP TRIGGER sessiondb_last_active_message_below")
		sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old1', 'user', 'unseen', 9000)")
		ro := openTestStore(t, path, Options{ReadOnly: true})
		if ro.q.lastActive {
			t.Error("a read-only open reads a table missing a trigger")
		}
		if got, want := list(ro), []string{"old1@9000", "old2@2001"}; !reflect.DeepEqual(got, want) {
			t.Errorf("read-only listing %v, want %v", got, want)
		}
		ro.Close()
		s := openTestStore(t, path, Options{})
		checkLastActive(t, s, "the remake")
	})
	t.Run("an earlier sessiondb's table is made again", func(t *testing.T) {
		// sessiondb before issue 20 kept the table in every append's
		// transaction through this trigger; its files lose it at the next
		// writable open.
		path := buildFixture(t, 6, true)
		openTestStore(t, path, Options{}).Close()
		sqlitetest.ExecFile(t, path, "CREATE TRIGGER sessiondb_last_active_message_insert AFTER INSERT ON messages BEGIN "+
			lastActiveRecompute(lastActiveTable, "session_id = new.session_id")+" END")
		s := openTestStore(t, path, Options{})
		if strings.Contains(strings.Join(masterSQL(t, path), "\n"), "sessiondb_last_active_message_insert") {
			t.Error("the earlier trigger is still there")
		}
		checkLastActive(t, s, "the upgrade")
	})
	t.Run("a newer Hermes' file", func(t *testing.T) {
		path := buildNewer(t, "")
		s := openTestStore(t, path, Options{})
		if s.q.lastActive || strings.Contains(strings.Join(masterSQL(t, path), "\n"), lastActiveTable) {
			t.Error("a newer Hermes' file was given the table")
		}
		// Every row counts, hidden ones too, as in Hermes' listing.
		if got, want := list(s), []string{"n2@5002", "n1@1003"}; !reflect.DeepEqual(got, want) {
			t.Errorf("listing %v, want %v", got, want)
		}
	})
	t.Run("a v6 file a newer Hermes upgrades", func(t *testing.T) {
		// Our file, then a newer Hermes adds its visibility columns and
		// rewinds the newest message, which still counts, as in Hermes'
		// listing; the table of a newer Hermes' file is not read.
		path := buildFixture(t, 6, true)
		openTestStore(t, path, Options{}).Close()
		for _, q := range []string{"ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1",
			"ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0",
			"UPDATE messages SET active = 0 WHERE timestamp = 1002",
			"UPDATE schema_version SET version = 21"} {
			sqlitetest.ExecFile(t, path, q)
		}
		s := openTestStore(t, path, Options{})
		if s.q.lastActive {
			t.Error("listings read the table on a file whose messages can be hidden")
		}
		if got, want := list(s), []string{"old2@2001", "old1@1002"}; !reflect.DeepEqual(got, want) {
			t.Errorf("listing %v, want %v", got, want)
		}
		// Hermes' writes still succeed under our triggers.
		sqlitetest.ExecFile(t, path, "INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES ('old1', 'user', 'later', 3000, 1, 0)")
		sqlitetest.ExecFile(t, path, "DELETE FROM messages WHERE session_id = 'old2'")
		sqlitetest.ExecFile(t, path, "DELETE FROM sessions WHERE id = 'old2'")
	})
}
