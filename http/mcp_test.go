package http_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

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
