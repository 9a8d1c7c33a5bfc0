package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

const testToken = "s3cret-token"

var ctxb = context.Background()

// fixture is a server over a real SQLite store in a temporary folder,
// served by httptest on loopback.
type fixture struct {
	t     *testing.T
	path  string
	st    *sqlite.Store
	clock *testkit.Clock
	srv   *sdbhttp.Server
	ts    *httptest.Server
}

// newFixture opens a fresh store and serves it with cfg (History, Clock
// and, unless set, Token filled in). Call seed before requests that need
// data.
func newFixture(t *testing.T, cfg sdbhttp.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "state.db"), clock: testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	st, err := sqlite.Open(ctxb, f.path, sqlite.Options{Now: f.clock.Now})
	f.st = testkit.Opened(t, st, err)
	f.serve(cfg)
	return f
}

// serve (re)starts the server on f.st with cfg.
func (f *fixture) serve(cfg sdbhttp.Config) {
	f.t.Helper()
	if cfg.History == nil {
		cfg.History = f.st
	}
	if cfg.Clock == nil {
		cfg.Clock = f.clock.Now
	}
	srv, err := sdbhttp.NewServer(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	f.t.Cleanup(f.ts.Close)
	f.t.Cleanup(func() { srv.Close() })
}

// serveReadOnly serves the fixture's file as `sessiondb serve --read-only`
// does: through a store opened read-only, which it returns.
func (f *fixture) serveReadOnly() *sqlite.Store {
	f.t.Helper()
	ro, err := sqlite.Open(ctxb, f.path, sqlite.Options{ReadOnly: true})
	ro = testkit.Opened(f.t, ro, err)
	f.serve(sdbhttp.Config{History: ro, ReadOnly: true, Token: testToken})
	return ro
}

// registry opens an empty central registry on the fixture's clock.
func (f *fixture) registry() *sqlite.Central {
	reg, err := sqlite.OpenCentral(ctxb, filepath.Join(f.t.TempDir(), "v2.db"), sqlite.CentralOptions{Now: f.clock.Now})
	return testkit.Opened(f.t, reg, err)
}

// subagents opens an empty subagent store on the fixture's clock.
func (f *fixture) subagents() *sqlite.Subagents {
	sub, err := sqlite.OpenSubagents(ctxb, filepath.Join(f.t.TempDir(), "state.sqlite"), sqlite.SubagentOptions{Now: f.clock.Now})
	return testkit.Opened(f.t, sub, err)
}

// session creates a session with the given source and model, started at
// the clock's time, and advances the clock a minute.
func (f *fixture) session(id, source, model string) {
	f.t.Helper()
	if _, err := f.st.CreateSession(ctxb, sessiondb.NewSession{ID: id, Source: source, Model: model}); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
}

func ptr[T any](v T) *T { return &v }

// msg appends a message and returns its id.
func (f *fixture) msg(session, role, content string) int64 {
	f.t.Helper()
	id, err := f.st.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: session, Role: role, Content: ptr(content)})
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// toolCall appends an assistant row calling one tool and its result, and
// returns their ids.
func (f *fixture) toolCall(session, callID, name, result string) (int64, int64) {
	f.t.Helper()
	a, err := f.st.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: session, Role: "assistant",
		ToolCalls: []map[string]any{{"id": callID, "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}}})
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := f.st.AppendMessage(ctxb, sessiondb.NewMessage{SessionID: session, Role: "tool", ToolCallID: ptr(callID), ToolName: ptr(name), Content: ptr(result)})
	if err != nil {
		f.t.Fatal(err)
	}
	return a, r
}

// request makes a request to url with body (JSON, when not empty) and the
// header pairs of hdr ("Host" sets the request's host).
func (f *fixture) request(ctx context.Context, method, url, body string, hdr ...string) *http.Request {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// response is a finished request.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the fixture's server; hdr adds headers
// ("Authorization", "Origin", ...; "Host" is the request's host).
func (f *fixture) do(method, path, body string, hdr ...string) response {
	f.t.Helper()
	return f.doAt(f.ts.URL, method, path, body, hdr...)
}

// doAt is do to the server at base instead.
func (f *fixture) doAt(base, method, path, body string, hdr ...string) response {
	f.t.Helper()
	resp, err := f.ts.Client().Do(f.request(ctxb, method, base+path, body, hdr...))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (f *fixture) get(path string, hdr ...string) response { return f.do("GET", path, "", hdr...) }

// cookie is the Cookie header a browser sends the fixture's server once
// logged in: the token's cookie, named after the server's port.
func (f *fixture) cookie() string {
	u, err := url.Parse(f.ts.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	return sdbhttp.TokenCookie + "_" + u.Port() + "=" + sdbhttp.TokenCookieValue(testToken)
}

// auth is the header pair that carries the test token.
var auth = []string{"Authorization", "Bearer " + testToken}

// ok checks a 200 and decodes the body into v.
func (r response) ok(t *testing.T, v any) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

// listing reads a listing's answer at path: the rows under key (failing t
// unless they are a list, empty or not) and the next_cursor, if any.
func (f *fixture) listing(path, key string) (rows []map[string]any, next string) {
	f.t.Helper()
	var a map[string]json.RawMessage
	f.get(path).ok(f.t, &a)
	if err := json.Unmarshal(a[key], &rows); err != nil || rows == nil {
		f.t.Fatalf("%s: %s is %s, want a list (%v)", path, key, a[key], err)
	}
	if c, ok := a["next_cursor"]; ok {
		if err := json.Unmarshal(c, &next); err != nil {
			f.t.Fatalf("%s: next_cursor %s: %v", path, c, err)
		}
	}
	return rows, next
}

// apiError checks the status and the error body's code, and returns the
// message.
func (r response) apiError(t *testing.T, status int, code string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("status %d, body is not an error: %s", r.status, r.body)
	}
	if r.status != status || e.Error.Code != code {
		t.Fatalf("status %d code %q (%s), want %d %q", r.status, e.Error.Code, e.Error.Message, status, code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return e.Error.Message
}

func jsonBody(v any) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	return b.String()
}
