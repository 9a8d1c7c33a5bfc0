package http

import (
	"net/http"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/version"
)

// apiFunc is an API handler: it writes its answer, or returns an error
// that the route answers as JSON with the status of its code.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// handlerTimeout is the write deadline of an ordinary (not streaming)
// response: long enough for the largest page, short enough that a client
// that stops reading does not hold a connection.
const handlerTimeout = time.Minute

// routes registers every route. Each part of the server adds its own in
// a routesX method beside its handlers; the UI's are in routesUI.
func (s *Server) routes() {
	s.mux.Handle("GET /healthz", s.metrics.instrument("/healthz", false, http.HandlerFunc(s.healthz)))
	s.mux.Handle("GET /metrics", s.metrics.instrument("/metrics", false, s.metrics.handler()))
	s.routesHistory()
	s.routesWrites()
	s.routesReports()
	s.routesMailboxes()
	s.routesRegistry()
	s.routesMCP()
	s.routesUI()
	// Anything else under /api/ is a JSON 404, not the UI's page.
	s.mux.Handle("/api/", s.metrics.instrument("other", false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, sessiondb.ENOTFOUND, "no such API route: "+r.Method+" "+r.URL.Path)
	})))
}

// read registers a read route: method and path in ServeMux's pattern form
// ("GET /api/v1/sessions/{id}").
func (s *Server) read(pattern string, h apiFunc) { s.mux.Handle(pattern, s.api(pattern, false, h)) }

// stream registers a read route whose answer is a stream (SSE, an
// export): no write deadline, not timed.
func (s *Server) stream(pattern string, h apiFunc) { s.mux.Handle(pattern, s.api(pattern, true, h)) }

// write registers a write route behind writeGuard, unless the server is
// read-only: then the route does not exist at all.
func (s *Server) write(pattern string, h apiFunc) {
	if s.cfg.ReadOnly {
		return
	}
	s.mux.Handle(pattern, s.writeGuard(s.api(pattern, false, h)))
}

// api turns an apiFunc into a handler: instrumented under its pattern,
// with a write deadline unless it streams, and its error answered as JSON.
func (s *Server) api(pattern string, stream bool, h apiFunc) http.Handler {
	return s.metrics.instrument(pattern, stream, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stream {
			// Best effort: httptest's recorder has no deadline to set.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(handlerTimeout))
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}))
}

// healthz answers 200 {"ok":true} when the history store answers a read,
// else 503 {"ok":false}; both say this build's version. It needs no token,
// so it says no more than up or down and the version: the store's error
// names its user, database, host and port or its file's path, which only a
// caller with the token is given (and the log).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if _, err := s.cfg.History.SessionCount(r.Context(), ""); err != nil {
		s.log.Warn("health check: the store does not answer", "err", err)
		body := map[string]any{"ok": false, "version": version.String()}
		if s.authorized(r) {
			body["error"] = err.Error()
		}
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "read_only": s.cfg.ReadOnly, "version": version.String()})
}
