package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/history"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/serve"
	cmdstore "github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// store makes a state.db with the example conversations.
func store(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "state.db")
	clitest.Must(t, []string{"--db", db, "quickstart"}, history.Commands)
	return db
}

var servingLine = regexp.MustCompile(`serving on (http://[^/\s]+)/`)

// start runs serve in the background and returns its base URL and the
// lines it printed. The server stops when the test ends.
func start(t *testing.T, args ...string) (base string, out *testkit.Buffer) {
	t.Helper()
	base, out, _ = startStoppable(t, args...)
	return base, out
}

// startStoppable is start that also returns a stop the test may call
// before it ends (the cleanup then does nothing more).
func startStoppable(t *testing.T, args ...string) (base string, out *testkit.Buffer, stop func()) {
	t.Helper()
	out, errOut, stopRun := clitest.Start(clitest.Options{}, args, serve.Commands)
	stop = sync.OnceFunc(func() {
		if code := stopRun(); code != 0 && code != 130 {
			t.Errorf("serve exited %d: %s", code, errOut)
		}
	})
	t.Cleanup(stop)
	testkit.WaitFor(t, "serve to print its address", func() bool {
		return servingLine.MatchString(out.String()) || errOut.String() != ""
	})
	m := servingLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("serve did not start: %s", errOut)
	}
	return m[1], out, stop
}

// A read-only server prints the address to open without a token: it has
// no write a token would allow, and its reads need none on loopback.
func TestServeReadOnlyPrintsNoToken(t *testing.T) {
	db := store(t)
	base, out := start(t, "--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0")
	testkit.WaitFor(t, "serve to print the address to open", func() bool { return strings.Contains(out.String(), "open http://") })
	if strings.Contains(out.String(), "token=") {
		t.Errorf("a read-only server prints a token:\n%s", out)
	}
	if !strings.Contains(out.String(), "open "+base+"/\n") {
		t.Errorf("the address to open is not the bare %s/:\n%s", base, out)
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the list answers %d without a token", resp.StatusCode)
	}
}

func TestServeOnLoopbackMakesAToken(t *testing.T) {
	db := store(t)
	base, out := start(t, "--db", db, "serve", "--listen", "127.0.0.1:0")
	tok := regexp.MustCompile(`\?token=([0-9a-f]{48})`).FindStringSubmatch(out.String())
	if tok == nil {
		t.Fatalf("no token URL printed: %s", out)
	}
	resp, err := http.Get(base + "/api/v1/sessions?limit=3")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Sessions []struct{ ID string }
		Next     string
	}
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(page.Sessions) != 3 || page.Next == "" {
		t.Fatalf("status %d, page %+v", resp.StatusCode, page)
	}
	// The printed token writes; none does not.
	id := page.Sessions[0].ID
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {tok[1], 200}} {
		req, _ := http.NewRequest("POST", base+"/api/v1/sessions/"+id+"/end", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("end with token %q: %d, want %d", c.token, resp.StatusCode, c.want)
		}
	}
}

func TestServeRefuses(t *testing.T) {
	db := store(t)
	t.Setenv("SESSIONDB_TOKEN", "")
	clitest.Fails(t, []clitest.Failure{
		{Name: "beyond loopback without a token", Args: []string{"--db", db, "serve", "--listen", "0.0.0.0:0"}, Code: 2, Want: "without a token"},
		{Name: "not host:port", Args: []string{"--db", db, "serve", "--listen", "8321"}, Code: 2, Want: "host:port"},
		{Name: "missing store", Args: []string{"--db", filepath.Join(t.TempDir(), "none.db"), "serve", "--listen", "127.0.0.1:0"}, Code: 3, Want: "no history store"},
		{Name: "missing registry", Args: []string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--central", filepath.Join(t.TempDir(), "v2.db")}, Code: 3, Want: "no central registry"},
		{Name: "missing subagent store", Args: []string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--subagents", filepath.Join(t.TempDir(), "state.sqlite")}, Code: 3, Want: "nothing at"},
		{Name: "subagents read-only", Args: []string{"--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0", "--subagents", db}, Code: 2, Want: "read-only"},
		{Name: "data is not a folder", Args: []string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--data", db}, Code: 3, Want: "not a folder"},
	}, serve.Commands)
}

// --read-only hides the writes: they answer 404 even with the token. The
// store is live (a writer holds it open, its last commit still in the
// WAL, as a running agent's state.db): serving reads of every kind
// leaves the bytes of the file and of its WAL as they were.
func TestServeReadOnly(t *testing.T) {
	db := store(t)
	w, err := cmdstore.Open(context.Background(), db, cmdstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	live, err := w.CreateSession(context.Background(), sessiondb.NewSession{ID: "live_0001", Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	text := "only the WAL holds this"
	if _, err := w.AppendMessage(context.Background(), sessiondb.NewMessage{SessionID: live, Role: "user", Content: &text}); err != nil {
		t.Fatal(err)
	}
	before := testkit.DigestStore(t, db)
	if before.WAL == ([32]byte{}) {
		t.Fatal("the writer left no WAL: the test needs frames in it")
	}

	base, out, stop := startStoppable(t, "--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0", "--token", "tok")
	if !strings.Contains(out.String(), "read-only") {
		t.Fatalf("no read-only notice: %s", out)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/prune", strings.NewReader(`{"older_than_days":1}`))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("prune on a read-only server: %d", resp.StatusCode)
	}
	for _, p := range []string{"/api/v1/sessions", "/api/v1/sessions/live_0001/messages", "/api/v1/search?q=docker",
		"/api/v1/usage", "/api/v1/export", "/", "/s/live_0001", "/analytics", "/search?q=docker"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, b)
		}
		if p == "/s/live_0001" && !strings.Contains(string(b), text) {
			t.Errorf("the read-only server does not show what only the WAL holds")
		}
	}
	stop()
	after := testkit.DigestStore(t, db)
	if after.File != before.File {
		t.Error("the file's bytes changed under serve --read-only")
	}
	if after.WAL != before.WAL {
		t.Error("the WAL's bytes changed under serve --read-only")
	}
}

// TestMCPOverStdio runs `sessiondb mcp` with its stdin and stdout on
// pipes and drives it with the SDK's own client.
func TestMCPOverStdio(t *testing.T) {
	db := store(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errOut := &testkit.Buffer{}
	f := cli.New(inR, outW, errOut)
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(context.Background(), f, []string{"--db", db, "--read-only", "mcp"}, serve.Commands)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkQuickstartTools(t, cs)
	// Closing stdin ends the server cleanly.
	cs.Close()
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("mcp exited %d: %s", code, errOut)
	}
}

// TestMCPOverServe drives /mcp of a running `sessiondb serve` with the
// SDK's streamable HTTP client: the same tools answer the same.
func TestMCPOverServe(t *testing.T) {
	db := store(t)
	base, _ := start(t, "--db", db, "serve", "--listen", "127.0.0.1:0")
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkQuickstartTools(t, cs)
}

// continuation is the example conversation that continues another
// ("proj #2", after a compression).
const continuation = "20260402_141202_d07a13"

// checkQuickstartTools calls each of the four tools on the quickstart
// store, and one with bad input.
func checkQuickstartTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools %v, %v", tools, err)
	}
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	var hits struct {
		Hits []struct {
			SessionID string `json:"session_id"`
			Snippet   string
		}
	}
	call("search_sessions", map[string]any{"query": "docker", "limit": 3}, &hits)
	if len(hits.Hits) == 0 || !strings.Contains(hits.Hits[0].Snippet, ">>>") {
		t.Fatalf("search %+v", hits)
	}
	var page struct {
		SessionID string `json:"session_id"`
		Messages  []struct{ ID int64 }
		HasAfter  bool `json:"has_after"`
	}
	call("read_session", map[string]any{"session_id": hits.Hits[0].SessionID, "limit": 1}, &page)
	if page.SessionID != hits.Hits[0].SessionID || len(page.Messages) == 0 || !page.HasAfter {
		t.Fatalf("read %+v", page)
	}
	var list struct{ Sessions []struct{ ID string } }
	call("list_sessions", map[string]any{"limit": 2}, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("list %+v", list)
	}
	var tree struct {
		Sessions []struct {
			ID       string
			ParentID string `json:"parent_id"`
			Depth    int
			Selected bool
		}
	}
	call("session_lineage", map[string]any{"session_id": continuation}, &tree)
	if len(tree.Sessions) != 2 || tree.Sessions[1].ID != continuation || !tree.Sessions[1].Selected ||
		tree.Sessions[1].Depth != 1 || tree.Sessions[1].ParentID != tree.Sessions[0].ID {
		t.Fatalf("lineage %+v", tree)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_session", Arguments: map[string]any{"session_id": "no_such_session"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.Content); !res.IsError || !strings.Contains(string(b), "no_such_session") {
		t.Fatalf("unknown session: IsError %v, %s", res.IsError, b)
	}
}

// TestServeBuildsTheRecentIndex: serve brings a large store's recent
// search index up to date as it starts, before anyone searches (the first
// search would otherwise wait for it); with --read-only it writes nothing.
func TestServeBuildsTheRecentIndex(t *testing.T) {
	db := store(t)
	sqlitetest.ExecFile(t, db, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 205000)
INSERT INTO messages (session_id, role, content, timestamp) SELECT (SELECT id FROM sessions LIMIT 1), 'user', 'filler ' || i, 1800000000 + i FROM k`)
	marks := func() []any {
		if len(sqlitetest.QueryFile(t, db, "SELECT 1 FROM sqlite_master WHERE name = 'state_meta'")) == 0 {
			return nil
		}
		return sqlitetest.QueryFile(t, db, `SELECT (SELECT max(id) FROM messages) - 99999, (SELECT max(id) FROM messages),
    (SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = 'sessiondb.recent.low'),
    (SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = 'sessiondb.recent.high')`)[0]
	}
	_, _, stop := startStoppable(t, "--db", db, "--read-only", "serve", "--listen", "127.0.0.1:0")
	time.Sleep(300 * time.Millisecond)
	stop()
	if m := marks(); m != nil && m[2] != nil {
		t.Fatalf("serve --read-only made a recent index: %v", m)
	}
	start(t, "--db", db, "serve", "--listen", "127.0.0.1:0")
	testkit.WaitFor(t, "the recent index to cover the newest 100,000 messages", func() bool {
		m := marks()
		return m != nil && m[0] == m[2] && m[1] == m[3]
	})
}
