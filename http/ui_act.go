package http

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// The web UI's archive and prune controls, registered with the other
// write forms (routesUIWrites) behind the same guard.

// uiArchive: POST /s/{id}/archive (archived) or /s/{id}/unarchive sets
// the flag of the session's compression lineage, as the API's archive
// does; the id is whole.
func (s *Server) uiArchive(archived bool) uiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := idOfPath(r.PathValue("id"))
		n, err := s.cfg.History.SetSessionArchived(r.Context(), id, archived)
		if err != nil {
			return err
		}
		if n == 0 {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "no session %q (archive takes a whole id)", id)
		}
		return backToSession(w, r, id)
	}
}

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
