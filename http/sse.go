package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiondb/sessiondb"
)

// keepAlive is how often an idle stream sends a comment, so proxies and
// browsers do not drop it and a gone client is noticed.
const keepAlive = 15 * time.Second

// sseStream writes Server-Sent Events. Each event carries an id, so a
// client that reconnects (EventSource does it itself) sends it back as
// Last-Event-ID and the stream resumes after it.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// sent counts the stream's events in the metrics, under its name;
	// the labelled counter is looked up once, not for each event.
	sent prometheus.Counter
}

// startSSE answers the request as an event stream. The connection has no
// write deadline: it lasts until the client leaves or the server closes.
func (s *Server) startSSE(w http.ResponseWriter, name string) (*sseStream, error) {
	rc := http.NewResponseController(w)
	// No deadlines: the server's read timeout would otherwise end the
	// request's context while the stream runs.
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: rc, sent: s.metrics.liveEvents.WithLabelValues(name)}
	// Reconnect after 2 s rather than the browser's default of 3 to 5.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil, err
	}
	return st, rc.Flush()
}

// event sends one event; data is JSON (one line: json.Marshal writes no
// newline, so the data field needs no splitting).
func (e *sseStream) event(id, name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return sessiondb.Errorf(sessiondb.EINTERNAL, "encode event: %v", err)
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + id + "\n")
	}
	if name != "" {
		sb.WriteString("event: " + name + "\n")
	}
	sb.WriteString("data: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	if _, err := e.w.Write([]byte(sb.String())); err != nil {
		return err
	}
	e.sent.Inc()
	return e.rc.Flush()
}

// comment sends a comment line (ignored by clients): the keep-alive.
func (e *sseStream) comment(text string) error {
	if _, err := fmt.Fprintf(e.w, ": %s\n\n", text); err != nil {
		return err
	}
	return e.rc.Flush()
}

// streamContext is the context of one stream: it ends when the client
// leaves or the server closes.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.metrics.liveConns.Inc()
	return ctx, func() { cancel(); s.metrics.liveConns.Dec() }
}

// lastEventID reads where a stream resumes: the Last-Event-ID header a
// reconnecting client sends, else the after parameter; ok is false when
// neither is given.
func lastEventID(r *http.Request) (int64, bool, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, sessiondb.Errorf(sessiondb.EINVALID, "%s %q is not a message id", name, v)
	}
	return n, true, nil
}

// sessionEvents: GET /api/v1/sessions/{id}/events streams the session's
// new messages as they commit: event "message", id the message id, data
// the message. It resumes after Last-Event-ID (or ?after=ID); without
// either it starts after the newest message (the client read the
// transcript by pages). It is woken by the store's change notification
// (sessiondb.MessageWaiter), never by polling the database.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) error {
	after, resume, err := lastEventID(r)
	if err != nil {
		return err
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	waiter, ok := s.cfg.History.(sessiondb.MessageWaiter)
	if !ok {
		return sessiondb.Errorf(sessiondb.EINVALID, "this store cannot notify of new messages")
	}
	if !resume {
		last, err := s.cfg.History.GetMessagesPage(r.Context(), id, sessiondb.Page{Limit: 1})
		if err != nil {
			return err
		}
		if n := len(last.Messages); n > 0 {
			after = last.Messages[n-1].ID
		}
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	st, err := s.startSSE(w, "messages")
	if err != nil {
		return nil
	}
	for {
		wctx, wcancel := context.WithTimeout(ctx, keepAlive)
		_, err := waiter.WaitForMessages(wctx, id, after)
		wcancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if wctx.Err() == nil {
				// A failed read ends the stream; the client reconnects and
				// resumes where it was.
				s.log.Warn("live messages", "session", id, "err", err)
				return nil
			}
			if st.comment("keep-alive") != nil {
				return nil
			}
			continue
		}
		// Send what committed, in pages (a page keeps a tool call with its
		// results), until the store has nothing newer.
		for {
			p, err := s.cfg.History.GetMessagesPage(ctx, id, sessiondb.Page{AfterID: after, Limit: 100})
			if err != nil {
				s.log.Warn("live messages", "session", id, "err", err)
				return nil
			}
			for _, m := range p.Messages {
				if st.event(strconv.FormatInt(m.ID, 10), "message", m) != nil {
					return nil
				}
				after = m.ID
			}
			if !p.HasAfter || len(p.Messages) == 0 {
				break
			}
		}
	}
}
