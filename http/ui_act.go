package http

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// The web UI's archive and prune controls, registered with the other
// write forms (routesUIWrites) behind the same guard.

// pruneView is the prune page's data: the form, and once an age is given
// the sessions a prune would delete now.
type pruneView struct {
	// Days and Source are the form's fields as typed.
	Days, Source string
	// Sources are the store's sources, offered in the form.
	Sources []string
	// Preview is set once the form names an age: Doomed are the sessions
	// the prune would delete, Messages their messages.
	Preview  bool
	Doomed   []sessiondb.Session
	Messages int64
	// Pruned is set after a prune: how many sessions it deleted.
	Pruned string
}

// pruneDays reads the prune form's age in days: given, a positive finite
// number, as the API's older_than_days.
func pruneDays(v string) (float64, error) {
	days, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(days > 0) || math.IsInf(days, 0) {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "older than: %q is not a positive number of days", v)
	}
	return days, nil
}

// uiPrunePreview: GET /prune shows the prune form; with older_than (days)
// and optionally source it lists what a prune would delete (the ended
// sessions started longer ago, sessiondb.PruneCandidates) and offers the
// confirmation. It writes nothing.
func (s *Server) uiPrunePreview(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	v := pruneView{Days: q.Get("older_than"), Source: q.Get("source"), Pruned: q.Get("pruned")}
	v.Sources, _ = s.facets(r.Context())
	if q.Has("older_than") {
		days, err := pruneDays(v.Days)
		if err != nil {
			return err
		}
		if v.Doomed, err = sessiondb.PruneCandidates(r.Context(), s.cfg.History, s.now(), days, v.Source); err != nil {
			return err
		}
		v.Preview = true
		for i := range v.Doomed {
			v.Messages += v.Doomed[i].MessageCount
		}
	}
	s.page(w, r, "prune", v)
	return nil
}

// uiPrune: POST /prune (older_than, source) prunes, as the API's prune
// and the CLI's, and goes back to the prune page, which says how many
// sessions went.
func (s *Server) uiPrune(w http.ResponseWriter, r *http.Request) error {
	raw, err := formValue(w, r, "older_than")
	if err != nil {
		return err
	}
	days, err := pruneDays(raw)
	if err != nil {
		return err
	}
	n, err := s.cfg.History.PruneSessions(r.Context(), days, r.PostForm.Get("source"))
	if err != nil {
		return err
	}
	http.Redirect(w, r, withQuery("/prune", "pruned", strconv.Itoa(n)), http.StatusSeeOther)
	return nil
}

// The labels of a mailbox session's agent (agentActivity).
const (
	activityRunning = "container running"
	activitySeen    = "recently seen"
)

// agentActivity says what is known of a mailbox session's agent at now:
// activityRunning while the host daemon says a container it started runs
// (what NanoClaw's host calls running, and what a requeue is refused
// for); activitySeen when its heartbeat is fresher than the stuck ceiling
// but no such container is known (an agent started elsewhere, or one
// that just stopped); "" otherwise.
func agentActivity(x hostd.SessionReport, now time.Time) string {
	switch {
	case x.Host != nil && x.Host.Running:
		return activityRunning
	case !x.Heartbeat.IsZero() && now.Sub(x.Heartbeat) < mailbox.DefaultStuckCeiling:
		return activitySeen
	}
	return ""
}

// mailboxURL is the UI page of a session's mailbox.
func mailboxURL(ref mailbox.SessionRef) string {
	return "/mailboxes/" + url.PathEscape(ref.AgentGroupID) + "/" + url.PathEscape(ref.SessionID)
}

// requeueView is the forced requeue's confirmation: the session, what is
// known of its agent, and the failed rows that go back in line.
type requeueView struct {
	Group, Session, URL, Activity string
	Heartbeat                     time.Time
	Failed, OutFailed             int
}

// uiRequeueConfirm: GET /mailboxes/{group}/{session}/requeue names what a
// forced requeue does (every failed row of the session back in line,
// whatever runs) and asks; it writes nothing.
func (s *Server) uiRequeueConfirm(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.mailboxRef(r)
	if err != nil {
		return err
	}
	rep, err := s.sessionReport(r.Context(), ref, s.now())
	if err != nil {
		return err
	}
	s.page(w, r, "requeue", requeueView{Group: ref.AgentGroupID, Session: ref.SessionID, URL: mailboxURL(ref),
		Activity: agentActivity(rep, s.now()), Heartbeat: rep.Heartbeat, Failed: rep.Failed, OutFailed: rep.OutFailed})
	return nil
}

// uiRequeue: POST /mailboxes/{group}/{session}/requeue (force=1) requeues
// every failed row of the session even while a container runs, as the
// CLI's requeue --force, and goes back to the mailbox page. Without force
// it is the refusable requeue.
func (s *Server) uiRequeue(w http.ResponseWriter, r *http.Request) error {
	force, err := formValue(w, r, "force")
	if err != nil {
		return err
	}
	ref, err := s.mailboxRef(r)
	if err != nil {
		return err
	}
	if _, err := s.requeueRows(r.Context(), ref, nil, force == "1"); err != nil {
		return err
	}
	http.Redirect(w, r, mailboxURL(ref), http.StatusSeeOther)
	return nil
}
