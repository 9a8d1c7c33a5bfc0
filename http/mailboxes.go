package http

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// mailboxCollector reports the mailboxes' state at each scrape: due
// inbound rows (queue depth), stuck sessions, and outbound rows
// undelivered and failed. It reads every session's files, so it is only
// registered when the server serves mailboxes.
type mailboxCollector struct{ s *Server }

var (
	descQueueDepth = prometheus.NewDesc("sessiondb_mailbox_due_messages",
		"Inbound rows due for the agent (pending, trigger set, not scheduled ahead), over every session.", nil, nil)
	descStuck = prometheus.NewDesc("sessiondb_mailbox_stuck_sessions",
		"Sessions the host would find stuck were their container running.", nil, nil)
	descOutbound = prometheus.NewDesc("sessiondb_mailbox_outbound_messages",
		"Outbound rows by delivery state (undelivered, retrying, failed), over every session.", []string{"state"}, nil)
	descSessions = prometheus.NewDesc("sessiondb_mailbox_sessions",
		"Session mailboxes under the data root.", nil, nil)
)

func (c *mailboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueueDepth
	ch <- descStuck
	ch <- descOutbound
	ch <- descSessions
}

func (c *mailboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := c.s.cfg.Mailboxes
	refs, err := h.Sessions(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descSessions, err)
		return
	}
	var due, stuck, undelivered, retrying, failed int
	for _, ref := range refs {
		st, err := h.Status(ctx, ref)
		if err != nil {
			continue
		}
		due += st.Due
		if st.Stuck != mailbox.StuckOK.String() {
			stuck++
		}
		undelivered += st.OutUndelivered
		retrying += st.OutRetrying
		failed += st.OutFailed
	}
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(len(refs)))
	ch <- prometheus.MustNewConstMetric(descQueueDepth, prometheus.GaugeValue, float64(due))
	ch <- prometheus.MustNewConstMetric(descStuck, prometheus.GaugeValue, float64(stuck))
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(undelivered), "undelivered")
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(retrying), "retrying")
	ch <- prometheus.MustNewConstMetric(descOutbound, prometheus.GaugeValue, float64(failed), "failed")
}

// routesMailboxes registers the mailbox routes when the server has a data
// root.
func (s *Server) routesMailboxes() {
	if s.cfg.Mailboxes == nil {
		return
	}
	s.read("GET /api/v1/mailboxes", s.listMailboxes)
	s.read("GET /api/v1/mailboxes/{group}/{session}", s.getMailbox)
	s.stream("GET /api/v1/mailboxes/events", s.mailboxesEvents)
	s.stream("GET /api/v1/mailboxes/{group}/{session}/events", s.mailboxEvents)
	s.write("POST /api/v1/mailboxes/{group}/{session}/requeue", s.requeue)
}

// mailboxesAnswer is every session's summary at a moment, with that moment
// so a client can tell heartbeat ages and back-offs.
type mailboxesAnswer struct {
	Now time.Time `json:"now"`
	hostd.DataReport
}

// listMailboxes: GET /api/v1/mailboxes → every session under the data
// root: due counts, heartbeat, stuck verdict, undelivered and failed
// outbound rows, and, while a host daemon runs, its back-off and
// quarantine of each session.
func (s *Server) listMailboxes(w http.ResponseWriter, r *http.Request) error {
	now := s.now()
	rep, err := hostd.Report(r.Context(), s.cfg.Mailboxes, s.cfg.DataRoot, now)
	return answer(w, mailboxesAnswer{Now: now, DataReport: rep}, err)
}

// mailboxRef reads {group}/{session} of a path: both safe names, and the
// session's mailbox must exist (not_found otherwise).
func (s *Server) mailboxRef(r *http.Request) (mailbox.SessionRef, error) {
	ref := mailbox.SessionRef{AgentGroupID: r.PathValue("group"), SessionID: r.PathValue("session")}
	if err := ref.Validate(); err != nil {
		return ref, err
	}
	p, _ := s.cfg.Mailboxes.Layout().InboundPath(ref)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ref, sessiondb.Errorf(sessiondb.ENOTFOUND, "no mailbox for session %s", ref)
	}
	return ref, nil
}

// mailboxAnswer is one session's mailbox: its summary and its rows.
type mailboxAnswer struct {
	Now      time.Time              `json:"now"`
	Session  hostd.SessionReport    `json:"session"`
	Inbound  []mailbox.InboundView  `json:"inbound"`
	Outbound []mailbox.OutboundView `json:"outbound"`
}

// getMailbox: GET /api/v1/mailboxes/{group}/{session}?limit=&state= → the
// summary and the newest rows (default 50, at most 500) with their states;
// state= keeps the rows in that state (pending, processing, scheduled,
// completed, failed, paused; undelivered, retrying, delivered).
func (s *Server) getMailbox(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	limit := p.int("limit", 50, 1, 500)
	state := p.str("state")
	if p.err != nil {
		return p.err
	}
	a, err := s.mailboxOf(r, limit)
	if err != nil {
		return err
	}
	if state != "" {
		ins, outs := []mailbox.InboundView{}, []mailbox.OutboundView{}
		for _, x := range a.Inbound {
			if x.State == state {
				ins = append(ins, x)
			}
		}
		for _, x := range a.Outbound {
			if x.Delivery.Status == state {
				outs = append(outs, x)
			}
		}
		a.Inbound, a.Outbound = ins, outs
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// sessionReport reads one session's summary with the running daemon's
// view of it.
func (s *Server) sessionReport(ctx context.Context, ref mailbox.SessionRef, now time.Time) (hostd.SessionReport, error) {
	st, err := s.cfg.Mailboxes.Status(ctx, ref)
	if err != nil {
		return hostd.SessionReport{}, err
	}
	r := hostd.SessionReport{SessionStatus: st}
	if hs, found, err := hostd.ReadStatus(s.cfg.DataRoot); err == nil && found && hs.Live(now) {
		if hh, ok := hs.Sessions[ref.String()]; ok {
			r.Host = &hh
		}
	}
	return r, nil
}

// mailbox reads one session's summary and rows.
func (s *Server) mailbox(ctx context.Context, ref mailbox.SessionRef, limit int) (*mailboxAnswer, error) {
	now := s.now()
	rep, err := s.sessionReport(ctx, ref, now)
	if err != nil {
		return nil, err
	}
	a := &mailboxAnswer{Now: now, Session: rep}
	if a.Inbound, a.Outbound, err = s.cfg.Mailboxes.Inspect(ctx, ref, limit); err != nil {
		return nil, err
	}
	return a, nil
}

// mailboxOf reads the summary and rows of the mailbox r's path names.
func (s *Server) mailboxOf(r *http.Request, limit int) (*mailboxAnswer, error) {
	ref, err := s.mailboxRef(r)
	if err != nil {
		return nil, err
	}
	return s.mailbox(r.Context(), ref, limit)
}

// requeue: POST /api/v1/mailboxes/{group}/{session}/requeue
// {"ids":[...],"force":bool} puts failed rows back in line (all failed
// rows when ids is empty). It refuses (conflict) while the host daemon
// says a container it started runs for the session, unless force (as the
// CLI's --force): requeueing writes the agent's outbound.db.
func (s *Server) requeue(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		IDs   []string `json:"ids"`
		Force bool     `json:"force"`
	}
	if r.ContentLength != 0 {
		if err := readJSON(w, r, &body); err != nil {
			return err
		}
	}
	ref, err := s.mailboxRef(r)
	if err != nil {
		return err
	}
	res, err := s.requeueRows(r.Context(), ref, body.IDs, body.Force)
	return answer(w, res, err)
}

// requeueRows requeues the rows ids of ref (all failed rows when none),
// refused while a container the host daemon started runs for it, unless
// force.
func (s *Server) requeueRows(ctx context.Context, ref mailbox.SessionRef, ids []string, force bool) (mailbox.RequeueResult, error) {
	if !force && s.containerRuns(ref) {
		return mailbox.RequeueResult{}, sessiondb.Errorf(sessiondb.ECONFLICT, "a container the host daemon started runs for %s: requeue when it has stopped, or force it", ref)
	}
	return s.cfg.Mailboxes.Requeue(ctx, ref, ids)
}

// containerRuns reports whether the running host daemon says a container
// it started runs for ref (hostd.SessionHealth.Running; a fresh heartbeat
// alone is not one).
func (s *Server) containerRuns(ref mailbox.SessionRef) bool {
	hs, found, err := hostd.ReadStatus(s.cfg.DataRoot)
	return err == nil && found && hs.Live(s.now()) && hs.Sessions[ref.String()].Running
}
