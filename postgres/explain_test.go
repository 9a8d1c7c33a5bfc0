package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
)

// recorder is a tracer that keeps every statement a store sends, and
// counts its round trips: a statement alone, a pipeline or a COPY.
type recorder struct {
	mu    sync.Mutex
	on    bool
	got   []traced
	trips int
}

type traced struct {
	sql  string
	args []any
}

// start records from now on; stop stops and returns what was recorded.
func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.got, r.trips = true, nil, 0
}

// roundTrips is how many round trips were recorded since start.
func (r *recorder) roundTrips() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trips
}

func (r *recorder) trip() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.trips++
	}
}

func (r *recorder) stop() []traced {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.got
}

// openTraced opens a store on a fresh schema with a recorder of its
// statements (not yet recording) and the schema's URL.
func openTraced(t *testing.T, maxConns int32) (*Store, *recorder, string) {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	rec := &recorder{}
	s, err := Open(context.Background(), url, Options{Schema: schema, Tracer: rec, MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rec, pgtest.WithSearchPath(url, schema)
}

func (r *recorder) add(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.got = append(r.got, traced{sql, args})
	}
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL, d.Args)
	r.trip()
	return ctx
}
func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.trip()
	return ctx
}
func (r *recorder) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	r.add("COPY "+d.TableName.Sanitize(), nil)
	r.trip()
	return ctx
}
func (r *recorder) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL, d.Args)
}
func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// seedSQL fills a store with 20,000 sessions (four sources, every tenth a
// child, every third titled) and 120,000 messages, enough that the planner
// prefers an index wherever one serves.
const seedSQL = `
INSERT INTO sessions (id, source, started_at, ended_at, end_reason, title)
SELECT 's' || lpad(g::text, 6, '0'), (ARRAY['cli', 'telegram', 'cron', 'discord'])[1 + g % 4], 1e9 + g,
       CASE WHEN g % 2 = 0 THEN 1e9 + g + 10 END, CASE WHEN g % 2 = 0 THEN 'user_exit' END,
       CASE WHEN g % 3 = 0 THEN 'topic ' || (g % 997) || ' #' || g END
FROM generate_series(1, 20000) g;
UPDATE sessions SET parent_session_id = 's' || lpad((substr(id, 2)::int - 1)::text, 6, '0') WHERE substr(id, 2)::int % 10 = 0;
INSERT INTO messages (session_id, role, content, "timestamp")
SELECT 's' || lpad((1 + g % 20000)::text, 6, '0'), (ARRAY['user', 'assistant', 'tool'])[1 + g % 3],
       'word' || (g % 7919) || ' about deploying container number ' || g || CASE WHEN g % 50 = 0 THEN ' 长江大桥' ELSE '' END,
       1e9 + g
FROM generate_series(1, 120000) g;
UPDATE sessions s SET message_count = c.n FROM (SELECT session_id, count(*) AS n FROM messages GROUP BY 1) c WHERE c.session_id = s.id;
ANALYZE sessions;
ANALYZE messages;`

// wholeTable are statements that read every row by their nature (a count
// of everything, the usage report's sums): a sequential scan is right.
var wholeTable = []string{
	"SELECT count(*) FROM messages",
	"SELECT count(*) FROM sessions",
	"COALESCE(SUM(message_count), 0)",
	"ORDER BY COALESCE(actual_cost_usd",
}

// TestIndexesServeEveryQuery runs the store's reads and writes on a seeded
// schema, records every statement it sends, and EXPLAINs each with its
// arguments: none may scan the sessions or messages table whole.
func TestIndexesServeEveryQuery(t *testing.T) {
	s, rec, schemaURL := openTraced(t, 2)
	var err error
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, seedSQL); err != nil {
		t.Fatalf("seed: %v", err)
	}
	rec.start()

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = s.SearchSessions(ctx, "", 20, 0)
	must("SearchSessions", err)
	_, err = s.SearchSessions(ctx, "cron", 20, 40)
	must("SearchSessions(cron)", err)
	for _, f := range []sessiondb.RichFilter{{}, {Source: "telegram"}, {IncludeChildren: true}, {ExcludeSources: []string{"cron"}, Offset: 20}} {
		_, err = s.ListSessionsRich(ctx, f)
		must("ListSessionsRich", err)
	}
	_, err = s.GetSession(ctx, "s000042")
	must("GetSession", err)
	_, err = s.GetMessages(ctx, "s000042")
	must("GetMessages", err)
	_, err = s.GetMessagesPage(ctx, "s000042", sessiondb.Page{Limit: 2})
	must("GetMessagesPage", err)
	_, err = s.GetMessagesPage(ctx, "s000042", sessiondb.Page{AfterID: 100, Limit: 2})
	must("GetMessagesPage after", err)
	_, err = s.GetMessagesAsConversation(ctx, "s000042", 3)
	must("GetMessagesAsConversation", err)
	_, err = s.MessageCount(ctx, "s000042")
	must("MessageCount", err)
	_, err = s.ResolveSessionID(ctx, "s00004")
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Fatalf("ResolveSessionID(prefix of several) = %v, want conflict", err)
	}
	_, err = s.ResolveSessionByTitle(ctx, "topic 5")
	must("ResolveSessionByTitle", err)
	_, err = s.NextTitleInLineage(ctx, "topic 5")
	must("NextTitleInLineage", err)
	_, err = s.GetSessionByTitle(ctx, "topic 5 #1000")
	if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		must("GetSessionByTitle", err)
	}
	_, err = s.CompressionTip(ctx, "s000009")
	must("CompressionTip", err)
	_, err = s.SearchMessages(ctx, "word42", sessiondb.SearchFilter{})
	must("SearchMessages", err)
	_, err = s.SearchMessages(ctx, "word42 OR word43", sessiondb.SearchFilter{Sources: []string{"cli"}, Roles: []string{"user"}})
	must("SearchMessages filtered", err)
	_, err = s.SearchMessages(ctx, "长江大桥", sessiondb.SearchFilter{})
	must("SearchMessages CJK", err)
	_, err = s.SearchMessages(ctx, "江大桥", sessiondb.SearchFilter{}) // a substring: the word search finds nothing
	must("SearchMessages CJK substring", err)
	_, err = s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s000042", Role: "user", Content: strPtr("hello")})
	must("AppendMessage", err)
	_, err = s.SetSessionTitle(ctx, "s000043", "a new title")
	must("SetSessionTitle", err)
	_, err = s.DeleteSession(ctx, "s000044")
	must("DeleteSession", err)
	must("ClearMessages", s.ClearMessages(ctx, "s000046"))
	_, err = s.PruneSessions(ctx, 365*1000, "")
	must("PruneSessions", err)
	_, err = s.WaitForMessages(ctx, "s000042", 0)
	must("WaitForMessages", err)
	_, err = s.ExportSession(ctx, "s000048")
	must("ExportSession", err)

	got := rec.stop()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	checked := 0
	for _, q := range got {
		head := strings.ToUpper(strings.Fields(q.sql)[0])
		if head != "SELECT" && head != "WITH" && head != "UPDATE" && head != "DELETE" {
			continue
		}
		if strings.Contains(q.sql, "pg_advisory") || strings.Contains(q.sql, "to_regclass") || strings.Contains(q.sql, "sessiondb_migrations") ||
			strings.Contains(q.sql, "current_schema") || strings.Contains(q.sql, "pg_notify") {
			continue
		}
		whole := false
		for _, w := range wholeTable {
			whole = whole || strings.Contains(q.sql, w)
		}
		if whole {
			continue
		}
		var plan string
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q.sql, q.args...).Scan(&plan); err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.sql, err)
		}
		checked++
		var nodes []map[string]any
		if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
			t.Fatal(err)
		}
		if scan := seqScan(nodes[0]["Plan"]); scan != "" {
			t.Errorf("sequential scan of %s for:\n%s\nargs %v\nplan %s", scan, q.sql, q.args, plan)
		}
	}
	if checked < 25 {
		t.Fatalf("only %d statements were checked: the recorder missed the store's queries", checked)
	}
}

// seqScan returns the table a plan node (or one below it) scans
// sequentially, among sessions and messages; "" when none.
func seqScan(n any) string {
	m, ok := n.(map[string]any)
	if !ok {
		return ""
	}
	if m["Node Type"] == "Seq Scan" {
		if r, _ := m["Relation Name"].(string); r == "sessions" || r == "messages" {
			return r
		}
	}
	kids, _ := m["Plans"].([]any)
	for _, k := range kids {
		if r := seqScan(k); r != "" {
			return r
		}
	}
	return ""
}

func strPtr(s string) *string { return &s }

// TestSearchReadsTheNewestMatches holds a search for a phrase every message
// holds to the newest matches it ranks: the rows of messages the store's
// own statements fetch (idx_tup_fetch, which counts what a bitmap reads
// too) stay near rankWindow a search, where reading every match fetched
// all 120,000, and still after the runs that turn a cached statement's
// plan generic.
func TestSearchReadsTheNewestMatches(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	// One connection, so the statistics flushed below are the searches'.
	s, err := Open(ctx, url, Options{Schema: schema, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.pool.Exec(ctx, seedSQL); err != nil {
		t.Fatalf("seed: %v", err)
	}
	fetched := func() int64 {
		t.Helper()
		// The backend sends its counts at once when asked, at its next idle.
		if _, err := s.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := s.pool.QueryRow(ctx, "SELECT idx_tup_fetch FROM pg_stat_user_tables WHERE relid = 'messages'::regclass").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const runs = 8
	before := fetched()
	for i := 0; i < runs; i++ {
		hits, err := s.SearchMessages(ctx, `"about deploying"`, sessiondb.SearchFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 20 {
			t.Fatalf("run %d: %d hits, want 20", i, len(hits))
		}
	}
	per := (fetched() - before) / runs
	// The newest rankWindow matches, each read again to rank it, the page
	// and its neighbours: about 2,100 rows.
	if per > 3*rankWindow {
		t.Errorf("a search fetched %d rows of messages, want at most %d (the phrase is in all 120,000)", per, 3*rankWindow)
	}
}
