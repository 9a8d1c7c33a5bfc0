// Package http serves the sessiondb domain over HTTP: a JSON API under
// /api/v1/, live updates as Server-Sent Events, the web UI (server-rendered
// with html/template, its assets embedded), MCP over streamable HTTP at
// /mcp, /healthz and Prometheus metrics at /metrics.
//
// It holds only the domain interfaces (sessiondb.Store, sessiondb.Registry,
// sessiondb.SubagentService) and the mailbox host's exported API; whoever
// builds the Server opens the stores (the command line through its one
// opener), so the same server runs on a state.db file or on PostgreSQL.
//
// Safety is part of the server, not of its callers: Serve refuses a
// listener beyond loopback without a token; every write needs the token and
// a same-origin request; a read-only server registers no write route at
// all; every response carries a Content-Security-Policy that forbids inline
// scripts and other origins.
package http

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filewatch"
	"github.com/sessiondb/sessiondb/internal/httpguard"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Config is what a Server serves and how. History is required; the other
// parts are served when set.
type Config struct {
	// History is the history store (sessions, messages, search, usage).
	History sessiondb.Store
	// Mailboxes is the host side of the session mailboxes under a data
	// root (`--data`); nil serves no mailbox routes. DataRoot is that root,
	// where the host daemon's status file is read from.
	Mailboxes *mailbox.Host
	DataRoot  string
	// Registry is the control plane's central registry (`--central`); nil
	// serves no registry routes.
	Registry sessiondb.Registry
	// Subagents is janebot's subagent store (`--subagents`); nil serves no
	// subagent routes.
	Subagents sessiondb.SubagentService

	// ReadOnly hides every write: the write routes are not registered, so
	// they answer 404 like any unknown path, and the UI shows no write
	// control. The stores should be opened read-only too; the server does
	// not reopen them.
	ReadOnly bool
	// Token guards the server: writes always need it, and so does every
	// request when the server listens beyond loopback. "" means no token:
	// the server then serves reads on loopback only and refuses every
	// write.
	Token string

	// Clock is the server's clock (ages, heartbeats); nil means time.Now.
	Clock sessiondb.Clock
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Poll is the fallback interval of the file-change watches behind the
	// live mailbox events; 0 means mailbox.DefaultPollInterval.
	Poll time.Duration
}

// Server is the HTTP face of sessiondb. Build it with NewServer, serve
// with Serve or Handler, and Close it to end its live streams. It does not
// close the stores it was given.
type Server struct {
	cfg     Config
	now     sessiondb.Clock
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	handler http.Handler
	// token is cfg.Token, each request's token compared with it in
	// constant time (guard.go).
	token httpguard.Token
	// cookie is the value of the token's cookie (cookieValue), taken
	// once.
	cookie string
	// ui is the web UI's state: its pages, parsed once, and what it
	// caches (ui.go).
	ui uiState
	// watches gives the live mailbox streams their file watches, all on
	// one notification instance, one watch per folder however many
	// streams look at it (mailboxes_live.go).
	watches *filewatch.Hub

	// openReads is set by Serve from its listener: a server on a
	// loopback address serves reads without the token.
	mu         sync.Mutex
	openReads  bool
	httpServer *http.Server
	done       chan struct{} // closed by Close: live streams end
	closeOnce  sync.Once
}

// NewServer builds the server and its routes from cfg. It fails (invalid)
// when cfg has no history store.
func NewServer(cfg Config) (*Server, error) {
	if cfg.History == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "http server: no history store")
	}
	if cfg.Mailboxes != nil && cfg.DataRoot == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "http server: mailboxes without their data root")
	}
	s := &Server{cfg: cfg, now: cfg.Clock, log: cfg.Logger, mux: http.NewServeMux(), done: make(chan struct{}), watches: filewatch.NewHub()}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.token = httpguard.NewToken(cfg.Token)
	s.cookie = cookieValue(cfg.Token)
	s.metrics = newMetrics(s)
	s.ui.markdown = newMarkdownRenderer()
	var err error
	if s.ui.templates, err = s.parseTemplates(); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "http server: web UI")
	}
	s.routes()
	s.handler = s.guard(s.mux)
	return s, nil
}

// Handler returns the server's handler with every middleware in place. A
// handler used without Serve serves reads as on loopback: tests use it
// with httptest, which listens on loopback.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the server's own Prometheus registry (what /metrics
// serves), for callers that add collectors of their own.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// Serve serves on ln until ctx ends or Close is called, then shuts down,
// letting requests in flight finish for up to five seconds. It refuses (invalid, before
// accepting anything) a listener beyond loopback when the server has no
// token: a store of conversations is never open to a network by mistake.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	loop := IsLoopback(ln.Addr())
	if !loop && s.cfg.Token == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "refusing to serve on %s without a token: beyond loopback anyone who reaches the address could read every conversation (give a token, or listen on 127.0.0.1)", ln.Addr())
	}
	hs := &http.Server{
		Handler: s.handler,
		// Slow clients must not hold connections open: a header has 10 s,
		// a request body 30 s. Responses have no overall write deadline,
		// since live streams and exports run long; each ordinary handler
		// sets its own (see writeDeadline), and a stream ends on Close.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.mu.Lock()
	s.openReads = loop
	s.httpServer = hs
	s.mu.Unlock()

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "serve on %s", ln.Addr())
	case <-ctx.Done():
	case <-s.done:
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-errc
	return nil
}

// Close ends the live streams (SSE, MCP sessions) so a shutdown does not
// wait on them, stops their file watches, and stops Serve. It does not
// close the stores.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.watches.Close()
	})
	return nil
}

// readsNeedToken reports whether reads need the token: always when the
// server listens beyond loopback; never on loopback, where the Host check
// (see guard) keeps other web sites out.
func (s *Server) readsNeedToken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpServer != nil && !s.openReads
}

// IsLoopback reports whether addr is a loopback address (127.0.0.0/8 or
// ::1). A Unix socket counts as loopback: only local processes reach it.
func IsLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
