package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/version"
)

// MCP: the history store's search and reading as tools for agents, so an
// agent can recall its own past sessions. The same server runs over
// stdio (`sessiondb mcp`) and over streamable HTTP at /mcp on the HTTP
// server. The tools only read.

// MCPName is the server's name in the MCP handshake.
const MCPName = "sessiondb"

// NewMCPServer returns the MCP server over st with the four tools
// search_sessions, list_sessions, read_session and session_lineage.
// onSearch, when set, is called for each search (the HTTP server counts
// them).
func NewMCPServer(st sessiondb.Store, version string, onSearch func()) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: MCPName, Version: version}, &mcp.ServerOptions{
		Instructions: "Search and read the agent sessions in this history store: find past conversations with " +
			"search_sessions, browse with list_sessions, read a transcript page by page with read_session " +
			"(a page never splits a tool call from its result), and see which sessions continue which with session_lineage.",
	})
	t := mcpTools{st: st, onSearch: onSearch}
	mcp.AddTool(srv, &mcp.Tool{Name: "search_sessions", Description: "Full-text search over every message of every session. " +
		"Returns the best hits first, each with its session, a snippet with the matches between >>> and <<<, and the neighbouring messages."}, t.search)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_sessions", Description: "List sessions newest first (or by last activity, cost or tokens), " +
		"filtered by source, model, a time range or text in the title or id. Page with the cursor the previous call returned."}, t.list)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_session", Description: "Read one page of a session's transcript (by id, unique id prefix or title), " +
		"from the start, from the end, or after/before a message id. A page never splits a tool call from its results; it is never the whole transcript of a long session."}, t.read)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_lineage", Description: "The lineage of a session (by id, unique id prefix or title): its ancestors down to it and every session continuing it " +
		"(continuations after compression, forks), as a tree."}, t.lineage)
	return srv
}

type mcpTools struct {
	st       sessiondb.Store
	onSearch func()
}

// SearchInput is search_sessions' input.
type SearchInput struct {
	Query  string `json:"query" jsonschema:"the words or phrase to search for (FTS5 syntax: quotes for phrases, OR, prefix*)"`
	Source string `json:"source,omitempty" jsonschema:"only sessions of this source (cli, telegram, ...)"`
	Role   string `json:"role,omitempty" jsonschema:"only messages of this role (user, assistant, tool)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"hits to return, 1 to 50 (default 10)"`
	Offset int    `json:"offset,omitempty" jsonschema:"hits to skip, for the next page"`
}

// SearchOutput is search_sessions' output.
type SearchOutput struct {
	Hits []MCPHit `json:"hits"`
}

// MCPHit is one search hit as an agent reads it.
type MCPHit struct {
	SessionID string                 `json:"session_id"`
	MessageID int64                  `json:"message_id"`
	Role      string                 `json:"role"`
	Snippet   string                 `json:"snippet"`
	Time      string                 `json:"time"`
	Source    string                 `json:"source"`
	Model     string                 `json:"model,omitempty"`
	Context   []sessiondb.ContextRow `json:"context,omitempty"`
}

func (t mcpTools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	if in.Query == "" {
		return nil, SearchOutput{}, sessiondb.Errorf(sessiondb.EINVALID, "query is empty")
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if in.Limit < 1 || in.Limit > 50 || in.Offset < 0 {
		return nil, SearchOutput{}, sessiondb.Errorf(sessiondb.EINVALID, "limit must be 1 to 50 and offset not negative")
	}
	f := sessiondb.SearchFilter{Limit: in.Limit, Offset: in.Offset}
	if in.Source != "" {
		f.Sources = []string{in.Source}
	}
	if in.Role != "" {
		f.Roles = []string{in.Role}
	}
	if t.onSearch != nil {
		t.onSearch()
	}
	hits, err := t.st.SearchMessages(ctx, in.Query, f)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	out := SearchOutput{Hits: []MCPHit{}}
	for _, h := range hits {
		out.Hits = append(out.Hits, MCPHit{SessionID: h.SessionID, MessageID: h.ID, Role: h.Role, Snippet: h.Snippet,
			Time: isoTime(h.Timestamp), Source: h.Source, Model: deref(h.Model), Context: h.Context})
	}
	return nil, out, nil
}

// ListInput is list_sessions' input.
type ListInput struct {
	Source string `json:"source,omitempty" jsonschema:"only sessions of this source"`
	Model  string `json:"model,omitempty" jsonschema:"only sessions of this model"`
	Text   string `json:"text,omitempty" jsonschema:"only sessions whose title or id contains this text"`
	Since  string `json:"since,omitempty" jsonschema:"only sessions started at or after this time (RFC 3339 or YYYY-MM-DD)"`
	Until  string `json:"until,omitempty" jsonschema:"only sessions started before this time (RFC 3339 or YYYY-MM-DD)"`
	Sort   string `json:"sort,omitempty" jsonschema:"started (default), last_active, cost or tokens; largest first"`
	// The newer Hermes' listing filters.
	Cwd          string `json:"cwd,omitempty" jsonschema:"only sessions that ran in this directory or below it"`
	MinMessages  int64  `json:"min_messages,omitempty" jsonschema:"only sessions with at least this many messages"`
	ArchivedOnly bool   `json:"archived_only,omitempty" jsonschema:"only the sessions archived (hidden otherwise)"`
	Limit        int    `json:"limit,omitempty" jsonschema:"sessions per page, 1 to 100 (default 20)"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// ListOutput is list_sessions' output.
type ListOutput struct {
	Sessions   []MCPSession `json:"sessions"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// MCPSession is one session as an agent reads it in a listing.
type MCPSession struct {
	ID           string   `json:"id"`
	Title        string   `json:"title,omitempty"`
	Source       string   `json:"source"`
	Model        string   `json:"model,omitempty"`
	Started      string   `json:"started"`
	LastActive   string   `json:"last_active"`
	Ended        bool     `json:"ended"`
	MessageCount int64    `json:"message_count"`
	Preview      string   `json:"preview,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	// ChainSessions is set on a compression chain listed as one row: the
	// number of its sessions, MessageCount and CostUSD then being the
	// chain's totals (sessiondb.RichSession's Chain).
	ChainSessions int64 `json:"chain_sessions,omitempty"`
}

func (t mcpTools) list(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	if in.Limit == 0 {
		in.Limit = 20
	}
	if in.Limit < 1 || in.Limit > 100 {
		return nil, ListOutput{}, sessiondb.Errorf(sessiondb.EINVALID, "limit must be 1 to 100")
	}
	p := paramsOf(map[string][]string{"since": {in.Since}, "until": {in.Until}})
	q := sessiondb.SessionQuery{Source: in.Source, Model: in.Model, Text: in.Text, StartedFrom: p.time("since"),
		StartedBefore: p.time("until"), Sort: sessiondb.SessionSort(in.Sort), Limit: in.Limit, After: in.Cursor,
		Cwd: in.Cwd, MinMessages: in.MinMessages, ArchivedOnly: in.ArchivedOnly}
	if p.err != nil {
		return nil, ListOutput{}, p.err
	}
	page, err := t.st.ListSessions(ctx, q)
	if err != nil {
		return nil, ListOutput{}, err
	}
	out := ListOutput{Sessions: []MCPSession{}, NextCursor: page.Next}
	for _, s := range page.Sessions {
		m := MCPSession{ID: s.ID, Title: deref(s.Title), Source: s.Source, Model: deref(s.Model), Started: isoTime(s.StartedAt),
			LastActive: isoTime(s.LastActive), Ended: s.EndedAt != nil, MessageCount: s.MessageCount, Preview: s.Preview}
		if s.ActualCostUSD != nil || s.EstimatedCostUSD != nil {
			c := sessionCost(&s.Session)
			m.CostUSD = &c
		}
		if c := s.Chain; c != nil {
			m.MessageCount, m.CostUSD, m.ChainSessions = c.Messages, &c.CostUSD, c.Sessions
		}
		out.Sessions = append(out.Sessions, m)
	}
	return nil, out, nil
}

// ReadInput is read_session's input.
type ReadInput struct {
	SessionID string `json:"session_id" jsonschema:"the session's id, a unique id prefix or its title"`
	From      string `json:"from,omitempty" jsonschema:"start (default) or end: where a page without a cursor begins"`
	AfterID   int64  `json:"after_id,omitempty" jsonschema:"read the messages after this message id (the after of the previous page)"`
	BeforeID  int64  `json:"before_id,omitempty" jsonschema:"read the messages before this message id (the before of the previous page)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"messages per page, 1 to 200 (default 40); a page grows to keep a tool call with its results"`
}

// ReadOutput is read_session's output: one page.
type ReadOutput struct {
	SessionID string       `json:"session_id"`
	Messages  []MCPMessage `json:"messages"`
	HasBefore bool         `json:"has_before"`
	HasAfter  bool         `json:"has_after"`
	Before    int64        `json:"before,omitempty"`
	After     int64        `json:"after,omitempty"`
	// Models lists, for a session that switched models, each model's
	// usage in the order of its first call (Hermes' session_model_usage).
	Models []sessiondb.ModelRoute `json:"models,omitempty"`
}

// MCPMessage is one message as an agent reads it.
type MCPMessage struct {
	ID         int64  `json:"id"`
	Role       string `json:"role"`
	Content    string `json:"content,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  any    `json:"tool_calls,omitempty"`
	Reasoning  string `json:"reasoning,omitempty"`
	// ReasoningContent is the provider's own reasoning text, when it
	// differs from Reasoning.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Observed marks a group message the agent saw but was not
	// addressed by: context, not a turn of the user.
	Observed          bool   `json:"observed,omitempty"`
	PlatformMessageID string `json:"platform_message_id,omitempty"`
	EffectDisposition string `json:"effect_disposition,omitempty"`
	// ModelSwitch is set on the message before which the session's calls
	// went to another model.
	ModelSwitch *MCPModelSwitch `json:"model_switch,omitempty"`
	Time        string          `json:"time"`
}

// MCPModelSwitch is where a session's calls went from one model to
// another (sessiondb.ReadSessionModels).
type MCPModelSwitch struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (t mcpTools) read(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, ReadOutput, error) {
	if in.Limit == 0 {
		in.Limit = 40
	}
	if in.Limit < 1 || in.Limit > 200 {
		return nil, ReadOutput{}, sessiondb.Errorf(sessiondb.EINVALID, "limit must be 1 to 200")
	}
	pg := sessiondb.Page{AfterID: in.AfterID, BeforeID: in.BeforeID, Limit: in.Limit}
	switch in.From {
	case "", "start":
		pg.FromStart = true
	case "end":
	default:
		return nil, ReadOutput{}, sessiondb.Errorf(sessiondb.EINVALID, "from %q is not start or end", in.From)
	}
	id, err := t.sessionID(ctx, in.SessionID)
	if err != nil {
		return nil, ReadOutput{}, err
	}
	mp, err := t.st.GetMessagesPage(ctx, id, pg)
	if err != nil {
		return nil, ReadOutput{}, err
	}
	models, err := sessiondb.ReadSessionModels(ctx, t.st, id)
	if err != nil {
		return nil, ReadOutput{}, err
	}
	a := toMessagesPage(id, mp)
	out := ReadOutput{SessionID: id, Messages: []MCPMessage{}, HasBefore: a.HasBefore, HasAfter: a.HasAfter, Before: a.Before, After: a.After}
	if models.Switched() {
		out.Models = models.Routes
	}
	for _, m := range mp.Messages {
		x := MCPMessage{ID: m.ID, Role: m.Role, ToolName: deref(m.ToolName), ToolCallID: deref(m.ToolCallID),
			Reasoning: deref(m.Reasoning), Observed: m.Observed != 0, PlatformMessageID: deref(m.PlatformMessageID),
			EffectDisposition: deref(m.EffectDisposition), Time: isoTime(m.Timestamp)}
		if rc := deref(m.ReasoningContent); strings.TrimSpace(rc) != "" && rc != x.Reasoning {
			x.ReasoningContent = rc
		}
		if sw := models.At(m.ID); sw != nil {
			x.ModelSwitch = &MCPModelSwitch{From: sw.From.Model, To: sw.To.Model}
		}
		if m.Content != nil {
			x.Content = sessiondb.ContentText(*m.Content)
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]" {
			var calls any
			if json.Unmarshal(m.ToolCalls, &calls) == nil {
				x.ToolCalls = calls
			}
		}
		out.Messages = append(out.Messages, x)
	}
	return nil, out, nil
}

// LineageInput is session_lineage's input.
type LineageInput struct {
	SessionID string `json:"session_id" jsonschema:"the session's id, a unique id prefix or its title"`
}

// LineageOutput is session_lineage's output: the tree flattened in
// pre-order, each session with its parent and depth (0 for the oldest
// ancestor), since a tool's output schema cannot be recursive.
type LineageOutput struct {
	Sessions []LineageEntry `json:"sessions"`
}

// LineageEntry is one session of a lineage.
type LineageEntry struct {
	ID        string `json:"id"`
	ParentID  string `json:"parent_id,omitempty"`
	Depth     int    `json:"depth"`
	Title     string `json:"title,omitempty"`
	Source    string `json:"source"`
	Started   string `json:"started"`
	EndReason string `json:"end_reason,omitempty"`
	Messages  int64  `json:"message_count"`
	// Selected marks the session asked for.
	Selected bool `json:"selected,omitempty"`
}

func (t mcpTools) lineage(ctx context.Context, _ *mcp.CallToolRequest, in LineageInput) (*mcp.CallToolResult, LineageOutput, error) {
	id, err := t.sessionID(ctx, in.SessionID)
	if err != nil {
		return nil, LineageOutput{}, err
	}
	n, err := sessiondb.Lineage(ctx, t.st, id)
	if err != nil {
		return nil, LineageOutput{}, err
	}
	out := LineageOutput{Sessions: []LineageEntry{}}
	var walk func(n *sessiondb.LineageNode, parent string, depth int)
	walk = func(n *sessiondb.LineageNode, parent string, depth int) {
		out.Sessions = append(out.Sessions, LineageEntry{ID: n.ID, ParentID: parent, Depth: depth, Title: deref(n.Title),
			Source: n.Source, Started: isoTime(n.StartedAt), EndReason: deref(n.EndReason), Messages: n.Messages, Selected: n.Selected})
		for _, k := range n.Children {
			walk(k, n.ID, depth+1)
		}
	}
	walk(n, "", 0)
	return nil, out, nil
}

// sessionID resolves a tool's session_id as the command line does
// (sessiondb.FindSession): an id, a unique id prefix or a title, in any
// case, with close titles offered when none matches; an empty one is
// invalid.
func (t mcpTools) sessionID(ctx context.Context, given string) (string, error) {
	if given == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "session_id is empty")
	}
	return sessiondb.FindSession(ctx, t.st, given, true)
}

// isoTime shows epoch seconds as RFC 3339 UTC, the form an agent reads
// best.
func isoTime(epoch float64) string {
	return sessiondb.FromEpochSeconds(epoch).UTC().Format(time.RFC3339)
}

// routesMCP mounts MCP over streamable HTTP at /mcp: stateless (each
// request stands alone, no session is kept), JSON answers. It is a read
// like any other: beyond loopback it needs the token, and on loopback a
// foreign Host needs it too (guard). The SDK's own localhost protection
// is off: it would refuse a Host guard lets through with the token (a
// name of the operator's own for 127.0.0.1).
func (s *Server) routesMCP() {
	srv := NewMCPServer(s.cfg.History, version.String(), func() { s.metrics.searches.Inc() })
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: maxBodyBytes,
			DisableLocalhostProtection: true})
	// No other site's page may post to it either (it could not read the
	// answer, but the tools should not run for it at all); the refusal is
	// the API's JSON error, as every other.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, codeForbidden, "MCP is answered only to clients and this server's own pages (the request came from another origin)")
	}))
	s.mux.Handle("/mcp", s.metrics.instrument("/mcp", false, cop.Handler(rpcErrors(h))))
}

// rpcErrors answers as JSON-RPC errors without an id (as the MCP
// transport lets a server answer what it cannot take) the requests next,
// the SDK's handler, refuses in plain text: a wrong method, content type
// or Accept header, a body too large, a payload it cannot decode. It
// reads a POST's body first (up to maxBodyBytes) to tell a body that is
// not JSON (a parse error, also for invalid UTF-8, which JSON forbids and
// the SDK lets through) from one that is not a request.
func rpcErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("the request body is larger than %d bytes", maxBodyBytes))
				return
			case err != nil:
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "could not read the request body: "+err.Error())
				return
			case len(body) > 0 && (!utf8.Valid(body) || !json.Valid(body)):
				writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "parse error: the request body is not JSON (UTF-8)")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rw := &rpcErrorWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.status != 0 {
			code := int64(jsonrpc.CodeInvalidRequest)
			if rw.status >= 500 {
				code = jsonrpc.CodeInternalError
			}
			writeRPCError(w, rw.status, nil, code, strings.TrimSpace(rw.text.String()))
		}
	})
}

// rpcErrorWriter holds back a plain-text error response (http.Error's)
// for rpcErrors to answer as JSON-RPC; anything else passes through.
type rpcErrorWriter struct {
	http.ResponseWriter
	status int          // the held-back error's status; 0 when none
	text   bytes.Buffer // its text, up to maxRPCErrorText
}

// maxRPCErrorText bounds the text of an error held back.
const maxRPCErrorText = 4 << 10

func (w *rpcErrorWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		w.text.Write(b[:min(len(b), max(0, maxRPCErrorText-w.text.Len()))])
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rpcErrorResponse is a JSON-RPC error response. ID is the request's id,
// or null when it could not be read.
type rpcErrorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc.Error   `json:"error"`
}

// rpcError encodes a JSON-RPC error response to the request whose id is
// id (nil: null).
func rpcError(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(rpcErrorResponse{JSONRPC: "2.0", ID: id, Error: jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		// Only an id that is not JSON could fail, and ids come decoded.
		b, _ = json.Marshal(rpcErrorResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: jsonrpc.Error{Code: code, Message: message}})
	}
	return b
}

// writeRPCError answers a JSON-RPC error with an HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	b := rpcError(id, code, message)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
