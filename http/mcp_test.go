package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// mcpCall calls a tool and decodes its structured output into out; it
// returns the result for error checks.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctxb, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return res
}

// mcpSession connects the MCP SDK's own client to the fixture's /mcp,
// over streamable HTTP; the session is closed when the test ends.
func (f *fixture) mcpSession() *mcp.ClientSession {
	f.t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctxb,
		&mcp.StreamableClientTransport{Endpoint: f.ts.URL + "/mcp", HTTPClient: f.ts.Client()}, nil)
	return testkit.Opened(f.t, cs, err)
}

// TestMCPOverHTTP drives the four tools with the SDK's own client over
// streamable HTTP at /mcp.
func TestMCPOverHTTP(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("sess-a", "cli", "gpt")
	f.msg("sess-a", "user", "how do I restart docker")
	f.toolCall("sess-a", "c1", "shell", "docker restarted")
	for i := range 5 {
		f.msg("sess-a", "user", "more "+strings.Repeat("x", i))
	}
	f.session("sess-b", "telegram", "claude")
	f.msg("sess-b", "user", "unrelated")
	checkMCPTools(t, f.mcpSession())

	// A page of another site may not call the tools through the
	// visitor's browser.
	f.do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Sec-Fetch-Site", "cross-site",
		"Accept", "application/json, text/event-stream").apiError(t, 403, "forbidden")
}

// checkMCPTools is what the tools must give: the tool list and each
// tool's answer on the fixture data of TestMCPOverHTTP. (The serve
// command's tests call the same tools over stdio and through a running
// `sessiondb serve`.)
func checkMCPTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	tools, err := cs.ListTools(ctxb, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "list_sessions,read_session,search_sessions,session_lineage" {
		t.Fatalf("tools %v", names)
	}

	var hits sdbhttp.SearchOutput
	mcpCall(t, cs, "search_sessions", map[string]any{"query": "docker"}, &hits)
	if len(hits.Hits) != 2 || hits.Hits[0].SessionID != "sess-a" || !strings.Contains(hits.Hits[0].Snippet, ">>>docker<<<") {
		t.Fatalf("search %+v", hits)
	}

	var list sdbhttp.ListOutput
	mcpCall(t, cs, "list_sessions", map[string]any{"limit": 1}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != "sess-b" || list.NextCursor == "" {
		t.Fatalf("list %+v", list)
	}
	next := list.NextCursor
	list = sdbhttp.ListOutput{}
	mcpCall(t, cs, "list_sessions", map[string]any{"limit": 1, "cursor": next}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != "sess-a" || list.Sessions[0].MessageCount != 8 || list.NextCursor != "" {
		t.Fatalf("second page %+v", list)
	}

	// Pages of 2 from the start: the tool call and its result stay together.
	var page sdbhttp.ReadOutput
	mcpCall(t, cs, "read_session", map[string]any{"session_id": "sess-a", "limit": 2}, &page)
	if len(page.Messages) != 3 || page.Messages[1].Role != "assistant" || page.Messages[1].ToolCalls == nil ||
		page.Messages[2].Content != "docker restarted" || !page.HasAfter || page.HasBefore {
		t.Fatalf("first page %+v", page)
	}
	seen := len(page.Messages)
	for page.HasAfter {
		after := page.After
		page = sdbhttp.ReadOutput{}
		mcpCall(t, cs, "read_session", map[string]any{"session_id": "sess-a", "limit": 2, "after_id": after}, &page)
		seen += len(page.Messages)
	}
	if seen != 8 {
		t.Fatalf("pages held %d messages, want 8", seen)
	}

	var tree sdbhttp.LineageOutput
	mcpCall(t, cs, "session_lineage", map[string]any{"session_id": "sess-b"}, &tree)
	if len(tree.Sessions) != 1 || tree.Sessions[0].ID != "sess-b" || !tree.Sessions[0].Selected {
		t.Fatalf("lineage %+v", tree)
	}

	// Bad input is a tool error naming the problem, not a broken session.
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_session", map[string]any{"session_id": "nope"}, "nope"},
		{"read_session", map[string]any{"session_id": "sess-a", "limit": 500}, "limit"},
		{"search_sessions", map[string]any{"query": ""}, "query"},
		{"list_sessions", map[string]any{"sort": "size"}, "sort"},
	} {
		res := mcpCall(t, cs, c.tool, c.args, nil)
		b, _ := json.Marshal(res.Content)
		if !res.IsError || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %v: IsError %v, content %s", c.tool, c.args, res.IsError, b)
		}
	}
}

// TestMCPListCost: a listed session's cost is the provider's actual
// figure when there is one, else the estimate, and absent when neither
// is known (not a cost of 0).
func TestMCPListCost(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("est", "cli", "gpt")
	f.session("act", "cli", "gpt")
	f.session("none", "cli", "gpt")
	f.st.UpdateTokenCounts(ctxb, "est", sessiondb.TokenUpdate{Input: 1, EstimatedCostUSD: ptr(0.25)})
	f.st.UpdateTokenCounts(ctxb, "act", sessiondb.TokenUpdate{Input: 1, EstimatedCostUSD: ptr(0.5), ActualCostUSD: ptr(0.75)})
	var list sdbhttp.ListOutput
	mcpCall(t, f.mcpSession(), "list_sessions", map[string]any{}, &list)
	got := map[string]string{}
	for _, s := range list.Sessions {
		got[s.ID] = "nil"
		if s.CostUSD != nil {
			got[s.ID] = strconv.FormatFloat(*s.CostUSD, 'f', -1, 64)
		}
	}
	if got["est"] != "0.25" || got["act"] != "0.75" || got["none"] != "nil" || len(got) != 3 {
		t.Fatalf("costs %v, want est 0.25, act 0.75 (actual over estimate), none nil", got)
	}
}

// What /mcp cannot take at all (a wrong method, content type or Accept,
// a body that is not JSON or too large, an empty batch) is answered as a
// JSON-RPC error without an id, with the HTTP status of the refusal: the
// SDK's handler said it in plain text.
func TestMCPErrorsAreJSONRPC(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	accept := []string{"Accept", "application/json, text/event-stream"}
	for _, c := range []struct {
		name, method, body string
		hdr                []string
		status             int
		code               int64
	}{
		{"GET", "GET", "", accept, 405, -32600},
		{"not JSON", "POST", `{"jsonrpc":"2.0","id":1,`, accept, 400, -32700},
		{"invalid UTF-8", "POST", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}", accept, 400, -32700},
		{"empty batch", "POST", `[]`, accept, 400, -32600},
		{"jsonrpc 1.0", "POST", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, accept, 400, -32600},
		{"no Accept", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, 400, -32600},
		{"text/plain", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, append([]string{"Content-Type", "text/plain"}, accept...), 415, -32600},
		{"too large", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 2<<20) + `"}}`, accept, 413, -32600},
	} {
		r := f.do(c.method, "/mcp", c.body, c.hdr...)
		var e struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int64
				Message string
			}
		}
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != c.status || r.header.Get("Content-Type") != "application/json" ||
			e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Code != c.code || e.Error.Message == "" {
			t.Errorf("%s: %d %s %q, want %d and a JSON-RPC error %d with id null", c.name, r.status, r.header.Get("Content-Type"), r.body, c.status, c.code)
		}
	}
	// A request it takes is answered as before.
	if r := f.do("POST", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, accept...); r.status != 200 || !strings.Contains(string(r.body), `"id":7`) {
		t.Errorf("tools/list: %d %s", r.status, r.body)
	}
}

// MCPStdio reads a line at a time up to its bound: a longer line is
// answered with a parse error and skipped whole, and the lines after it,
// one of them longer than its read buffer but within the bound, are read
// as they are.
func TestMCPStdioLongLines(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(ctxb)
	done := make(chan error, 1)
	go func() {
		done <- sdbhttp.NewMCPServer(f.st, "", nil).Run(ctx, &sdbhttp.MCPStdio{In: inR, Out: outW, MaxLine: 100 << 10})
		outW.Close()
	}()
	defer func() { cancel(); inW.Close(); <-done }()
	answers := bufio.NewScanner(outR)
	answers.Buffer(nil, 1<<20)
	next := func() string {
		t.Helper()
		if !answers.Scan() {
			t.Fatalf("no answer: %v", answers.Err())
		}
		return answers.Text()
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := next(); !strings.Contains(a, `"id":1,"result"`) {
		t.Fatalf("initialize: %s", a)
	}
	pad := func(n int) string {
		return `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", n) + `"}}}`
	}
	send(pad(300 << 10))
	if a := next(); !strings.Contains(a, `"id":null`) || !strings.Contains(a, `"code":-32700`) || !strings.Contains(a, "longer than 102400 bytes") {
		t.Errorf("a line of 300 KiB: %s", a)
	}
	send(pad(90 << 10))
	if a := next(); !strings.Contains(a, `"id":2,"result"`) {
		t.Errorf("a line of 90 KiB: %s", a)
	}
}

// The end of stdin waits for the answers of the requests read before it:
// a request the client cancelled is answered too (the SDK answers it with
// an error, though MCP lets a server answer nothing), so the session ends.
// Were it left unanswered, the session would wait for ever and this test
// fail.
func TestMCPStdioEndsAfterACancelledRequest(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	started := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		close(started)
		<-ctx.Done()
		return nil, struct{}{}, ctx.Err()
	})
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctxb, &sdbhttp.MCPStdio{In: inR, Out: io.Discard}) }()
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"block","arguments":{}}}`,
	} {
		io.WriteString(inW, l+"\n")
	}
	<-started
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`+"\n")
	inW.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the session did not end within a minute of its stdin's end: it waits for a cancelled request's answer")
	}
}

// TestMCPFindsSessionsByTitle: read_session and session_lineage take what
// the command line takes: a title in any case (the newest of its lineage),
// and a miss offers the close titles.
func TestMCPFindsSessionsByTitle(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("trip-1", "cli", "gpt")
	f.session("other", "cli", "gpt")
	if _, err := f.st.SetSessionTitle(ctxb, "trip-1", "Lisbon weekend"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: "trip-1", Role: "user", Content: ptr("book the tram")}); err != nil {
		t.Fatal(err)
	}
	cs := f.mcpSession()
	var page sdbhttp.ReadOutput
	mcpCall(t, cs, "read_session", map[string]any{"session_id": "lisbon weekend"}, &page)
	if page.SessionID != "trip-1" || len(page.Messages) != 1 || page.Messages[0].Content != "book the tram" {
		t.Fatalf("read_session by title: %+v", page)
	}
	var tree sdbhttp.LineageOutput
	mcpCall(t, cs, "session_lineage", map[string]any{"session_id": "Lisbon weekend"}, &tree)
	if len(tree.Sessions) != 1 || tree.Sessions[0].ID != "trip-1" || !tree.Sessions[0].Selected {
		t.Fatalf("session_lineage by title: %+v", tree)
	}
	res := mcpCall(t, cs, "read_session", map[string]any{"session_id": "Lisbon weekends"}, nil)
	b, _ := json.Marshal(res.Content)
	// The error echoes what was typed, which holds the title too: the
	// offer is what follows "did you mean".
	if _, offer, _ := strings.Cut(string(b), "did you mean"); !res.IsError || !strings.Contains(offer, "Lisbon weekend") {
		t.Errorf("a near miss: IsError %v, content %s; want the close title offered", res.IsError, b)
	}
}

// TestMCPListNewerFilters: list_sessions takes the newer Hermes' filters
// (working directory, at least N messages, archived only) on a file of
// that Hermes, and lists its /branch children but no delegate.
func TestMCPListNewerFilters(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.serve(sdbhttp.Config{History: hermes21Store(t)})
	cs := f.mcpSession()
	ids := func(args map[string]any) []string {
		var list sdbhttp.ListOutput
		args["limit"] = 100
		mcpCall(t, cs, "list_sessions", args, &list)
		out := []string{}
		for _, s := range list.Sessions {
			out = append(out, s.ID)
		}
		sort.Strings(out)
		return out
	}
	all := ids(map[string]any{})
	if !slices.Contains(all, "h21-branch") || slices.Contains(all, "h21-delegate") || slices.Contains(all, "h21-orphan-delegate") {
		t.Errorf("list_sessions: %v; want the branches, no delegate", all)
	}
	if got := ids(map[string]any{"cwd": "/home/dev/project/api"}); !slices.Equal(got, []string{"h21-compacted"}) {
		t.Errorf("cwd: %v", got)
	}
	if got := ids(map[string]any{"archived_only": true}); !slices.Equal(got, []string{"h21-archived-tip"}) {
		t.Errorf("archived_only: %v", got)
	}
	if got := ids(map[string]any{"min_messages": 4}); len(got) == 0 || len(got) >= len(all) {
		t.Errorf("min_messages 4: %v of %v", got, all)
	}
}
