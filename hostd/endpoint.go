package hostd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/httpguard"
)

// The router's event endpoint is HTTP, served by the host daemon on a Unix
// socket (by default <data>/host.sock, mode 0600 in the 0700 data root, so
// only the host's user can reach it) or, when asked, on a loopback TCP
// address (never on another interface), where any local user and every
// web page the user's browser opens can reach it: there it answers only
// to a loopback Host, and a POST needs the host's token, a JSON content
// type and no foreign origin (guard.go):
//
//	POST /v1/route   body: JSON lines (events and clicks, see ParseInput)
//	                 answer: application/x-ndjson, one LineResult per line,
//	                 written as each line is routed
//	GET  /v1/health  {"ok":true}

// DefaultSocketName is the endpoint's socket file in the data root, a name
// no agent group may take (sessiondb.HostFiles).
const DefaultSocketName = sessiondb.HostSocketFile

// MaxLineBytes bounds one inbound JSON line (an event with attachments).
const MaxLineBytes = 8 << 20

// LineResult is the answer to one inbound line: the routing of a message
// or the handling of a click, or the error that stopped it (with its code).
type LineResult struct {
	Line    int          `json:"line"`
	Message *RouteResult `json:"message,omitempty"`
	Click   *ClickResult `json:"click,omitempty"`
	Error   string       `json:"error,omitempty"`
	Code    string       `json:"code,omitempty"`
}

// RouteLines reads JSON lines from in and routes each (a message or a
// click), calling emit with each line's result in order; blank lines are
// skipped (but counted). A bad line is answered with its error and does not
// stop the others. It stops at the end of in, when ctx ends, or when emit
// fails.
func (r *Router) RouteLines(ctx context.Context, in io.Reader, emit func(LineResult) error) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, tooLong, err := readLine(br, MaxLineBytes)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			res := LineResult{Line: n}
			if tooLong {
				res.Error, res.Code = fmt.Sprintf("line %d is longer than %d bytes", n, MaxLineBytes), sessiondb.EINVALID
			} else {
				res = r.routeLine(ctx, n, line)
			}
			if eerr := emit(res); eerr != nil {
				return eerr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "read line %d", n)
		}
	}
}

// routeLine routes one non-blank line.
func (r *Router) routeLine(ctx context.Context, n int, line []byte) LineResult {
	res := LineResult{Line: n}
	in, err := ParseInput(line)
	if err == nil {
		if in.Message != nil {
			var rr RouteResult
			rr, err = r.Route(ctx, *in.Message)
			res.Message = &rr
			if r.cfg.Observer != nil {
				r.cfg.Observer.Routed(rr, err)
			}
		} else {
			var cr ClickResult
			cr, err = r.Click(ctx, *in.Click)
			res.Click = &cr
		}
	}
	if err != nil {
		res.Error, res.Code = err.Error(), sessiondb.ErrorCode(err)
	}
	return res
}

// readLine reads one line (without its newline); a line longer than max is
// consumed and reported as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

// Health answers GET /v1/health with {"ok":true}: what Reachable asks of
// a host serving at an address.
func Health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`+"\n")
}

// Handler returns the event endpoint's HTTP handler for r.
func Handler(r *Router) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", Health)
	mux.HandleFunc("POST /v1/route", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fl, _ := w.(http.Flusher)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		// Full duplex: results go out while the body is still coming in.
		_ = http.NewResponseController(w).EnableFullDuplex()
		err := r.RouteLines(req.Context(), req.Body, func(res LineResult) error {
			if err := enc.Encode(res); err != nil {
				return err
			}
			if fl != nil {
				fl.Flush()
			}
			return nil
		})
		if err != nil && req.Context().Err() == nil {
			r.log.Warn("router: event endpoint stopped reading", "err", err)
		}
	})
	return mux
}

// Listen opens the endpoint's listener at addr: a Unix socket path
// ("unix:PATH", or any path holding a '/'), or a loopback TCP address
// ("127.0.0.1:7000", "[::1]:7000", "localhost:7000"). Any other host is
// refused (invalid): events carry people's messages, so the endpoint is
// for this machine only. A socket file left by a host that is gone is replaced; one
// that answers is a conflict (another host serves it). The socket is made
// 0600.
func Listen(addr string) (net.Listener, error) {
	if path, ok := socketPath(addr); ok {
		return listenUnix(path)
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "listen on %s", addr)
	}
	return l, nil
}

// checkLoopback refuses a TCP address whose host is not loopback: events
// carry people's messages, and the endpoint is for this machine only.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "endpoint address %q: want a socket path or a loopback host:port (%v)", errtext.Clip(addr, 100), err)
	}
	if !loopbackHost(host) {
		return sessiondb.Errorf(sessiondb.EINVALID, "endpoint address %q: only loopback (127.0.0.1, ::1, localhost) is allowed: the endpoint is for this machine only", errtext.Clip(addr, 100))
	}
	return nil
}

// IsSocket reports whether addr names a Unix socket (as Listen reads it)
// rather than a TCP address.
func IsSocket(addr string) bool {
	_, ok := socketPath(addr)
	return ok
}

func socketPath(addr string) (string, bool) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		return p, true
	}
	return addr, strings.ContainsRune(addr, '/')
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listenUnix(path string) (net.Listener, error) {
	return listenUnixVia(path, nil)
}

// listenUnixVia binds the socket where nobody else can reach it and only
// then puts it at path: it is bound inside a new 0700 folder beside path,
// made 0600 there, and hard-linked into place (a link never replaces a
// file another host put there meanwhile). Binding at path and chmodding
// after would leave it open to every local user for a moment under a
// permissive umask, and setting the umask around the bind would race with
// every other goroutine creating files. bound, for tests, is called with
// the socket's first path as soon as it is bound.
func listenUnixVia(path string, bound func(first string)) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, sessiondb.Errorf(sessiondb.ECONFLICT, "%s: another host is serving on this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "remove the stale socket %s", path)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "create the folder of %s", path)
	}
	private, err := os.MkdirTemp(dir, ".sock") // 0700
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "create a private folder beside %s", path)
	}
	defer os.RemoveAll(private)
	first := filepath.Join(private, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: first, Net: "unix"})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "listen on %s", path)
	}
	// Closing must remove the socket at path, not at its first name.
	l.SetUnlinkOnClose(false)
	if bound != nil {
		bound(first)
	}
	if err := os.Chmod(first, 0o600); err != nil {
		l.Close()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "make %s private", path)
	}
	if err := os.Link(first, path); err != nil {
		l.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, sessiondb.Errorf(sessiondb.ECONFLICT, "%s: another host put a socket there while this one started", path)
		}
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "put the socket at %s", path)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", path)
	}
	return &unixListener{UnixListener: l, path: path, fi: fi}, nil
}

// unixListener removes its socket file on Close, if the file at its path
// is still this socket (a later host may have replaced a stale one).
type unixListener struct {
	*net.UnixListener
	path string
	fi   fs.FileInfo
	once sync.Once
}

// Addr is the socket's address at path (the first name is gone).
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.fi) {
			_ = os.Remove(l.path)
		}
	})
	return err
}

// ServeOptions configures Serve and ServeHandler.
type ServeOptions struct {
	// Grace is how long requests in flight may take to finish once ctx
	// ends.
	Grace time.Duration
	// Token is what a POST to a TCP listener must carry (Authorization:
	// Bearer); without one a TCP listener takes no POST. A Unix socket
	// asks for none.
	Token string
}

// Serve serves the endpoint for r on l until ctx ends, then shuts down,
// letting requests in flight finish within o.Grace.
func Serve(ctx context.Context, l net.Listener, r *Router, o ServeOptions) error {
	return ServeHandler(ctx, l, Handler(r), o)
}

// ServeHandler serves h on l as Serve serves the endpoint (the host
// command mounts the endpoint beside its /metrics). On a TCP listener
// every request passes the endpoint's guard first (loopback Host; for a
// POST no foreign origin, a JSON content type and o.Token).
func ServeHandler(ctx context.Context, l net.Listener, h http.Handler, o ServeOptions) error {
	if l.Addr().Network() != "unix" {
		h = tcpGuard(h, httpguard.NewToken(o.Token))
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "serve events")
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done // the Unix listener removes its socket file as it closes
	return nil
}

// SendLines posts the JSON lines of in to the endpoint at addr (a socket
// path or loopback host:port, as Listen takes; another host is refused)
// with token (the host's, for a TCP endpoint; "" sends none) and calls
// emit with each result line as it arrives. An endpoint that cannot be
// reached is not_found (no host is serving there); one that refuses the
// request (no token, a wrong one) is invalid, with its reason.
func SendLines(ctx context.Context, addr, token string, in io.Reader, emit func(LineResult) error) error {
	if _, ok := socketPath(addr); !ok {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	client, base := endpointClient(addr)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/route", in)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "endpoint %s", addr)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return sessiondb.Wrap(sessiondb.ENOTFOUND, err, "no host is serving at %s", addr)
		}
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "send events to %s", addr)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		code := sessiondb.EINTERNAL
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			code = sessiondb.EINVALID
		}
		return sessiondb.Errorf(code, "endpoint %s answered %s: %s", addr, resp.Status, errtext.Clip(refusalText(b), 300))
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var res LineResult
		if err := dec.Decode(&res); err == io.EOF {
			return nil
		} else if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "read the answer of %s", addr)
		}
		if err := emit(res); err != nil {
			return err
		}
	}
}

// refusalText is the message of a refusal in the guard's JSON shape, or
// the body as it is.
func refusalText(b []byte) string {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return string(b)
}

// Reachable reports whether a host answers at addr (its health check).
func Reachable(ctx context.Context, addr string) bool {
	if path, ok := socketPath(addr); ok {
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return false
		}
	} else if checkLoopback(addr) != nil {
		return false
	}
	client, base := endpointClient(addr)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/health", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// endpointClient returns an HTTP client for the endpoint at addr and the
// base URL of its requests.
func endpointClient(addr string) (*http.Client, string) {
	path, ok := socketPath(addr)
	if !ok {
		return &http.Client{Transport: &http.Transport{}}, "http://" + addr
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &http.Client{Transport: tr}, "http://host"
}
