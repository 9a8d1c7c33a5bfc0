package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// fakeListener claims an address without touching the network: Serve must
// refuse it before accepting anything.
type fakeListener struct{ addr net.Addr }

func (l fakeListener) Accept() (net.Conn, error) {
	return nil, errors.New("fake listener accepts nothing")
}
func (l fakeListener) Close() error   { return nil }
func (l fakeListener) Addr() net.Addr { return l.addr }

func TestServeRefusesBeyondLoopbackWithoutToken(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	for _, addr := range []string{"192.0.2.7:8321", "0.0.0.0:8321", "[2001:db8::1]:80"} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		err = f.srv.Serve(ctxb, fakeListener{tcp})
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "without a token") {
			t.Fatalf("Serve on %s without a token: %v, want invalid refusal", addr, err)
		}
	}
}

// A server beyond loopback with a token serves nothing without it: not the
// API, not the UI, not the metrics; /healthz says only whether it is up.
func TestBeyondLoopbackEveryRequestNeedsToken(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m")
	// Serve on a real loopback socket, but through a listener that says
	// it is on another address, as a server on 0.0.0.0 would be.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	real := ln.Addr().String()
	ctx, cancel := context.WithCancel(ctxb)
	done := make(chan error, 1)
	go func() {
		done <- f.srv.Serve(ctx, claimAddr{ln, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8321}})
	}()
	defer func() { cancel(); <-done }()
	// Requests name the server as a client beyond loopback would.
	do := func(method, path, body string, hdr ...string) response {
		return f.doAt("http://"+real, method, path, body, append([]string{"Host", "sessions.example:8321"}, hdr...)...)
	}
	for _, p := range []string{"/api/v1/sessions", "/api/v1/sessions/s1", "/", "/metrics"} {
		if r := do("GET", p, ""); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", p, r.status)
		}
		if r := do("GET", p, "", "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", p, r.status)
		}
		if r := do("GET", p, "", auth...); r.status != http.StatusOK {
			t.Errorf("GET %s with the token: %d, want 200", p, r.status)
		}
	}
	if r := do("GET", "/healthz", ""); r.status != http.StatusOK {
		t.Errorf("/healthz without token: %d", r.status)
	}
	// MCP over HTTP is a read like any other: no tool answers without the
	// token.
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}} {
		r := do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, append([]string{"Accept", "application/json, text/event-stream"}, hdr...)...)
		if r.status != http.StatusUnauthorized {
			t.Errorf("POST /mcp with %v: %d, want 401", hdr, r.status)
		}
	}
}

// claimAddr is a real listener reporting another address.
type claimAddr struct {
	net.Listener
	addr net.Addr
}

func (c claimAddr) Addr() net.Addr { return c.addr }

// A page of another site that made its name resolve to 127.0.0.1 (DNS
// rebinding) sends its own Host: a loopback server refuses it.
func TestLoopbackRefusesForeignHost(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m")
	f.get("/api/v1/sessions", "Host", "attacker.example").apiError(t, 403, "forbidden")
	f.get("/api/v1/sessions", "Host", "attacker.example", "Authorization", "Bearer wrong").apiError(t, 403, "forbidden")
	f.get("/?token=wrong", "Host", "attacker.example").apiError(t, 403, "forbidden")
	for _, h := range []string{"localhost:1234", "127.0.0.1", "[::1]:80", "app.localhost"} {
		f.get("/api/v1/sessions", "Host", h).ok(t, nil)
	}
}

// A name of the operator's own for this machine (serve --listen
// devbox:8321, devbox being 127.0.0.1 in /etc/hosts) is not a loopback
// name to the Host check, but the server is on loopback: requests naming
// it are served with the token (a rebinding site has none), the API, the
// login URL, the cookie it sets and MCP alike.
func TestLoopbackServesAnotherNameWithToken(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m")
	host := "devbox:" + f.ts.URL[strings.LastIndexByte(f.ts.URL, ':')+1:]
	f.get("/api/v1/sessions/s1", "Host", host).apiError(t, 403, "forbidden")
	f.get("/api/v1/sessions/s1", "Host", host, "Authorization", "Bearer "+testToken).ok(t, nil)
	client := f.ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(f.request(ctxb, "GET", f.ts.URL+"/s/s1?token="+testToken, "", "Host", host))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/s/s1" || len(resp.Cookies()) != 1 {
		t.Errorf("login on %s: %d to %q, cookies %v", host, resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	f.get("/api/v1/sessions/s1", "Host", host, "Cookie", f.cookie()).ok(t, nil)
	f.do("POST", "/api/v1/sessions/s1/end", "", "Host", host, "Cookie", f.cookie(), "Sec-Fetch-Site", "same-origin").ok(t, nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpHdr := []string{"Host", host, "Accept", "application/json, text/event-stream"}
	if r := f.do("POST", "/mcp", list, mcpHdr...); r.status != http.StatusForbidden {
		t.Errorf("/mcp on %s without the token: %d %s", host, r.status, r.body)
	}
	if r := f.do("POST", "/mcp", list, append(mcpHdr, auth...)...); r.status != http.StatusOK || !strings.Contains(string(r.body), "search_sessions") {
		t.Errorf("/mcp on %s with the token: %d %s", host, r.status, r.body)
	}
}

func TestWritesNeedTokenAndSameOrigin(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.session("s1", "cli", "m")
	title := jsonBody(map[string]string{"title": "renamed"})
	// No token, a wrong token: refused, nothing changed.
	f.do("PATCH", "/api/v1/sessions/s1", title).apiError(t, 401, "unauthorized")
	f.do("PATCH", "/api/v1/sessions/s1", title, "Authorization", "Bearer nope").apiError(t, 401, "unauthorized")
	// The token, from another site's page (the browser says so).
	f.do("PATCH", "/api/v1/sessions/s1", title, append(auth, "Sec-Fetch-Site", "cross-site")...).apiError(t, 403, "forbidden")
	f.do("PATCH", "/api/v1/sessions/s1", title, append(auth, "Origin", "https://attacker.example")...).apiError(t, 403, "forbidden")
	// The cookie a browser holds, sent by a cross-site form post.
	f.do("POST", "/api/v1/sessions/s1/end", "", "Cookie", f.cookie(), "Origin", "https://attacker.example").apiError(t, 403, "forbidden")
	if x, _ := f.st.GetSession(ctxb, "s1"); x.Title != nil || x.EndedAt != nil {
		t.Fatalf("a refused write changed the session: %+v", x)
	}
	// Same origin with the cookie, and a client with the bearer token.
	f.do("PATCH", "/api/v1/sessions/s1", title, "Cookie", f.cookie(), "Sec-Fetch-Site", "same-origin", "Origin", f.ts.URL).ok(t, nil)
	f.do("POST", "/api/v1/sessions/s1/end", "", auth...).ok(t, nil)
	if x, _ := f.st.GetSession(ctxb, "s1"); x.Title == nil || *x.Title != "renamed" || x.EndedAt == nil {
		t.Fatalf("accepted writes did not land: %+v", x)
	}
}

func TestWritesOffWithoutToken(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s1", "cli", "m")
	f.do("POST", "/api/v1/sessions/s1/end", "", "Authorization", "Bearer ").apiError(t, 403, "forbidden")
	if x, _ := f.st.GetSession(ctxb, "s1"); x.EndedAt != nil {
		t.Fatal("a write landed on a server without a token")
	}
}

// Opening the URL the server printed moves the token into an HttpOnly,
// SameSite=Strict cookie and drops it from the address.
func TestTokenURLSetsCookie(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	client := f.ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(f.ts.URL + "/?token=" + testToken + "&x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?x=1" {
		t.Fatalf("status %d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	c := resp.Cookies()
	name, value, _ := strings.Cut(f.cookie(), "=")
	if len(c) != 1 || c[0].Name != name || c[0].Value != value || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v, want %s", c, f.cookie())
	}
	// The cookie does not give the token away: the browser sends it to
	// every server on the host, whatever their port.
	if strings.Contains(c[0].Value, testToken) {
		t.Errorf("the cookie holds the token: %s", c[0].Value)
	}
	// It opens the server; the bare token in a cookie, or the cookie under
	// another server's name, does not.
	end := func(cookie string) response {
		return f.do("POST", "/api/v1/sessions/s1/end", "", "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	}
	f.session("s1", "cli", "m")
	end(name+"="+testToken).apiError(t, 401, "unauthorized")
	end(sdbhttp.TokenCookie+"="+value).apiError(t, 401, "unauthorized")
	end(sdbhttp.TokenCookie+"_1="+value).apiError(t, 401, "unauthorized")
	end(c[0].Name+"="+c[0].Value).ok(t, nil)
	f.get("/?token=wrong").apiError(t, 401, "unauthorized")
}

// The login's redirect stays on this server whatever the request line
// said: a path that starts with // or /\ would send the browser, token
// just accepted, to another host.
func TestTokenURLRedirectStaysOnServer(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	for _, c := range []struct{ target, want string }{
		{"//evil.com/?token=" + testToken, "/evil.com/"},
		{"//evil.com?token=" + testToken + "&x=1", "/evil.com?x=1"},
		{"///evil.com/a?token=" + testToken, "/evil.com/a"},
		{`/\evil.com/?token=` + testToken, "/%5Cevil.com/"},
		{"/s/a%2Fb?token=" + testToken, "/s/a%2Fb"},
	} {
		resp := rawGet(t, f.ts.Listener.Addr().String(), c.target)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || loc != c.want {
			t.Errorf("GET %s: %d, Location %q, want 303 to %q", c.target, resp.StatusCode, loc, c.want)
		}
		if u, err := url.Parse(loc); err != nil || u.Host != "" || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, `/\`) {
			t.Errorf("GET %s: Location %q leaves the server", c.target, loc)
		}
	}
}

// rawGet sends target as it is on the request line (a Go client would
// clean it) and returns the response, its body read.
func rawGet(t *testing.T, addr, target string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// /healthz needs no token: without it, a failing store is only "down";
// its error (which names a PostgreSQL user, database, host and port, or a
// file's path) is for a caller with the token.
func TestHealthzHidesTheErrorWithoutToken(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{Token: testToken})
	f.get("/healthz").ok(t, nil)
	f.st.Close()
	r := f.get("/healthz")
	var down map[string]any
	if err := json.Unmarshal(r.body, &down); err != nil || r.status != http.StatusServiceUnavailable || down["ok"] != false || len(down) != 2 || down["version"] == "" || down["error"] != nil {
		t.Errorf("/healthz without the token on a closed store: %d %s, want 503 {\"ok\":false,\"version\":...} and no error", r.status, r.body)
	}
	r = f.get("/healthz", auth...)
	var body struct {
		OK    bool
		Error string
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != http.StatusServiceUnavailable || body.OK || body.Error == "" {
		t.Errorf("/healthz with the token on a closed store: %d %s, want 503 with the error", r.status, r.body)
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	for _, p := range []string{"/", "/api/v1/sessions", "/api/v1/nope", "/static/app.js"} {
		r := f.get(p)
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "*") {
			t.Errorf("%s: CSP %q allows inline code or any origin", p, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
	}
}

// A read-only server has no write route: every write answers 404 as an
// unknown path, and a session of reads leaves the file's bytes as they
// were.
func TestReadOnlyHidesWritesAndKeepsBytes(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	f.session("s1", "cli", "m")
	f.msg("s1", "user", "hello docker")
	f.toolCall("s1", "c1", "shell", "ok")
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	before := testkit.DigestStore(t, f.path)
	ro := f.serveReadOnly()
	for _, p := range []string{"/api/v1/sessions", "/api/v1/sessions/s1", "/api/v1/sessions/s1/messages", "/healthz", "/"} {
		f.get(p).ok(t, nil)
	}
	for _, w := range []struct{ method, path, body string }{
		{"PATCH", "/api/v1/sessions/s1", `{"title":"x"}`},
		{"POST", "/api/v1/sessions/s1/end", ""},
		{"POST", "/api/v1/sessions/s1/reopen", ""},
		{"DELETE", "/api/v1/sessions/s1", ""},
		{"POST", "/api/v1/prune", `{"older_than_days":1}`},
	} {
		f.do(w.method, w.path, w.body, auth...).apiError(t, 404, "not_found")
	}
	ro.Close()
	after := testkit.DigestStore(t, f.path)
	if after.File != before.File {
		t.Fatal("the store file's bytes changed under a read-only server")
	}
	// A read-only WAL reader may leave an empty -wal and the -shm index
	// behind (it may not delete them); a frame in the WAL would be a write.
	if fi, err := os.Stat(f.path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("the WAL holds %d bytes after a read-only server", fi.Size())
	}
	if after.Journal != before.Journal {
		t.Fatal("a rollback journal appeared under a read-only server")
	}
}

// The usual case of --read-only: a Hermes state.db whose agent is running,
// its latest commits still in the WAL. A read-only server reading every
// route leaves the bytes of the file and of its WAL as they were (the -shm
// index is shared memory every reader marks, so it is not compared), and
// it reads what only the WAL holds.
func TestReadOnlyKeepsBytesOfALiveFile(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	// Fewer writes than the store's checkpoint pacing: none of these
	// frames is copied into the file while the test runs.
	f.session("live", "cli", "m")
	f.msg("live", "user", "restart docker on the build box")
	f.toolCall("live", "c1", "shell", "docker restarted")
	f.session("child", "cli", "m")
	if fi, err := os.Stat(f.path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the writer's WAL is empty (%v): the test needs frames in it", err)
	}
	before := testkit.DigestStore(t, f.path)

	ro := f.serveReadOnly()
	var list listAnswer
	f.get("/api/v1/sessions").ok(t, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("the read-only server lists %v, want the sessions only the WAL holds", ids(list.Sessions))
	}
	for _, p := range []string{
		"/api/v1/sessions/live", "/api/v1/sessions/live/messages", "/api/v1/sessions/live/messages?from=end",
		"/api/v1/sessions/live/lineage", "/api/v1/search?q=docker", "/api/v1/usage", "/api/v1/export",
		"/api/v1/sessions/live/export", "/healthz", "/metrics", "/", "/s/live", "/search?q=docker", "/analytics",
	} {
		f.get(p).ok(t, nil)
	}
	f.do("POST", "/api/v1/sessions/live/end", "", auth...).apiError(t, 404, "not_found")
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after := testkit.DigestStore(t, f.path)
	if after.File != before.File {
		t.Error("the store file's bytes changed under a read-only server")
	}
	if after.WAL != before.WAL {
		t.Error("the WAL's bytes changed under a read-only server")
	}
	if after.Journal != before.Journal {
		t.Error("a rollback journal appeared under a read-only server")
	}
}
