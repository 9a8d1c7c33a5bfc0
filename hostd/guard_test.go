package hostd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// serveEndpoint serves c's router on addr with token until the test ends
// and returns the listener's address.
func serveEndpoint(t *testing.T, c *central, addr, token string) string {
	t.Helper()
	l, err := Listen(addr)
	must(t, err)
	ctx, cancel := context.WithCancel(ctxb)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, l, c.router, ServeOptions{Grace: time.Second, Token: token}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// guardCall is one request to the endpoint and what it must answer.
type guardCall struct {
	name        string
	method      string
	path        string
	host        string // the Host header; "" is the address dialled
	contentType string
	headers     map[string]string
	status      int
	want        string // part of the answer
	messageID   string // the event's message id; "" is "attack"
}

// An event line that would be routed into ag-1's session of chat-1.
const guardLine = `{"channel_type":"telegram","platform_id":"chat-1","message_id":"attack","sender":{"id":"1"},"text":"rm -rf","is_group":true}` + "\n"

// On loopback TCP the endpoint answers only to a loopback Host, and takes
// a POST only with no foreign origin, a JSON content type and the token;
// every refusal routes nothing. The same request with all three is routed.
func TestEndpointTCPGuard(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	const token = "s3cret-token"
	addr := serveEndpoint(t, c, "127.0.0.1:0", token)
	_, port, _ := net.SplitHostPort(addr)
	ok := map[string]string{"Authorization": "Bearer " + token}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + token}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	const ndjson = "application/x-ndjson"
	for _, tc := range []guardCall{
		{name: "rebound name posts", method: "POST", path: "/v1/route", host: "evil.example:" + port, contentType: ndjson, headers: ok, status: 403, want: "loopback host name"},
		{name: "rebound name reads health", method: "GET", path: "/v1/health", host: "evil.example:" + port, status: 403, want: "loopback host name"},
		{name: "rebound name with a loopback-looking suffix", method: "POST", path: "/v1/route", host: "127.0.0.1.evil.example:" + port, contentType: ndjson, headers: ok, status: 403, want: "loopback host name"},
		{name: "another site's page", method: "POST", path: "/v1/route", contentType: ndjson, headers: with("Sec-Fetch-Site", "cross-site"), status: 403, want: "another origin"},
		{name: "another port's page", method: "POST", path: "/v1/route", contentType: ndjson, headers: with("Sec-Fetch-Site", "same-site"), status: 403, want: "another origin"},
		{name: "a foreign Origin", method: "POST", path: "/v1/route", contentType: ndjson, headers: with("Origin", "http://evil.example"), status: 403, want: "another origin"},
		{name: "a form", method: "POST", path: "/v1/route", contentType: "application/x-www-form-urlencoded", headers: ok, status: 415, want: "JSON lines"},
		{name: "text/plain (a no-cors fetch or a beacon)", method: "POST", path: "/v1/route", contentType: "text/plain;charset=UTF-8", headers: ok, status: 415, want: "JSON lines"},
		{name: "multipart", method: "POST", path: "/v1/route", contentType: "multipart/form-data; boundary=x", headers: ok, status: 415, want: "JSON lines"},
		{name: "no content type", method: "POST", path: "/v1/route", headers: ok, status: 415, want: "JSON lines"},
		{name: "no token", method: "POST", path: "/v1/route", contentType: ndjson, status: 401, want: "token"},
		{name: "a wrong token", method: "POST", path: "/v1/route", contentType: ndjson, headers: map[string]string{"Authorization": "Bearer " + token + "x"}, status: 401, want: "token"},
		{name: "the token as Basic", method: "POST", path: "/v1/route", contentType: ndjson, headers: map[string]string{"Authorization": "Basic " + token}, status: 401, want: "token"},
	} {
		t.Run(tc.name, func(t *testing.T) { guardDo(t, addr, tc) })
	}
	if ss := c.sessions("ag-1"); len(ss) != 0 {
		t.Fatalf("a refused request made sessions %+v", ss)
	}

	// What a client of this machine sends passes, under any loopback name
	// (each a message of its own: a second send of one is a duplicate).
	for i, host := range []string{"", "localhost:" + port, "[::1]:" + port} {
		guardDo(t, addr, guardCall{name: "the client", method: "POST", path: "/v1/route", host: host, contentType: ndjson, headers: ok, status: 200, want: `"outcome":"routed"`, messageID: fmt.Sprintf("client-%d", i)})
	}
	guardDo(t, addr, guardCall{name: "a same-origin page", method: "POST", path: "/v1/route", contentType: "application/json", headers: with("Sec-Fetch-Site", "same-origin"), status: 200, want: `"outcome":"routed"`, messageID: "same-origin"})
	guardDo(t, addr, guardCall{name: "health", method: "GET", path: "/v1/health", status: 200, want: `"ok":true`})
	if !Reachable(ctxb, addr) {
		t.Fatal("Reachable on TCP")
	}
	var got []LineResult
	must(t, SendLines(ctxb, addr, token, strings.NewReader(strings.Replace(guardLine, "attack", "client", 1)), func(r LineResult) error {
		got = append(got, r)
		return nil
	}))
	if len(got) != 1 || got[0].Message == nil || got[0].Message.Outcome != RouteRouted {
		t.Fatalf("SendLines with the token: %+v", got)
	}
	err := SendLines(ctxb, addr, "", strings.NewReader(guardLine), func(LineResult) error { return nil })
	wantCode(t, err, sessiondb.EINVALID)
	if !strings.Contains(err.Error(), "needs the host's token") {
		t.Fatalf("SendLines without the token: %v", err)
	}
}

// A TCP endpoint started without a token takes no POST at all.
func TestEndpointTCPWithoutTokenTakesNoEvent(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	addr := serveEndpoint(t, c, "127.0.0.1:0", "")
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		guardDo(t, addr, guardCall{name: "post " + auth, method: "POST", path: "/v1/route", contentType: "application/x-ndjson",
			headers: map[string]string{"Authorization": auth}, status: 403, want: "without a token"})
	}
	guardDo(t, addr, guardCall{name: "health", method: "GET", path: "/v1/health", status: 200, want: `"ok":true`})
	if ss := c.sessions("ag-1"); len(ss) != 0 {
		t.Fatalf("sessions %+v", ss)
	}
}

// The socket is guarded by its mode alone (a browser cannot reach a Unix
// socket): a tokenless post with curl's default form type is routed.
func TestEndpointSocketNeedsNoToken(t *testing.T) {
	c := newCentral(t)
	c.group("ag-1", "Helper")
	c.wiredChat("mg-1", "chat-1", "Room", sessiondb.PolicyPublic)
	sock := serveEndpoint(t, c, filepath.Join(t.TempDir(), DefaultSocketName), "a-token")
	client, base := endpointClient(sock)
	resp, err := client.Post(base+"/v1/route", "application/x-www-form-urlencoded", strings.NewReader(guardLine))
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"outcome":"routed"`) {
		t.Fatalf("socket post: %s %s", resp.Status, b)
	}
}

// guardDo sends tc to the endpoint at addr and checks its answer.
func guardDo(t *testing.T, addr string, tc guardCall) {
	t.Helper()
	line := guardLine
	if tc.messageID != "" {
		line = strings.Replace(line, "attack", tc.messageID, 1)
	}
	req, err := http.NewRequestWithContext(ctxb, tc.method, "http://"+addr+tc.path, strings.NewReader(line))
	must(t, err)
	if tc.host != "" {
		req.Host = tc.host
	}
	if tc.contentType != "" {
		req.Header.Set("Content-Type", tc.contentType)
	}
	for k, v := range tc.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
		t.Errorf("%s: %s %s", tc.name, resp.Status, b)
	}
	if resp.StatusCode != 200 && resp.Header.Get("Cross-Origin-Resource-Policy") != "same-origin" {
		t.Errorf("%s: no Cross-Origin-Resource-Policy on the refusal", tc.name)
	}
}
