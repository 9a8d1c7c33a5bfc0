package http

import (
	"math"
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// routesWrites registers the history store's writes; a read-only server
// registers none (see write).
func (s *Server) routesWrites() {
	s.write("PATCH /api/v1/sessions/{id}", s.patchSession)
	s.write("POST /api/v1/sessions/{id}/end", s.endSession)
	s.write("POST /api/v1/sessions/{id}/reopen", s.reopenSession)
	s.write("DELETE /api/v1/sessions/{id}", s.deleteSession)
	s.write("POST /api/v1/sessions/{id}/archive", s.archiveSession(true))
	s.write("POST /api/v1/sessions/{id}/unarchive", s.archiveSession(false))
	s.write("POST /api/v1/prune", s.prune)
}

// patchSession: PATCH /api/v1/sessions/{id} {"title":"..."} sets the
// title ("" clears it; a title another session holds is a conflict).
// Answers the session.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Title *string `json:"title"`
	}
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	if body.Title == nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "title is missing: it is the one field a session's PATCH changes")
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if _, err := s.cfg.History.SetSessionTitle(r.Context(), id, *body.Title); err != nil {
		return err
	}
	return s.answerSession(w, r, id)
}

// defaultEndReason is the end reason of a session ended through the API or
// the web UI without one.
const defaultEndReason = "user_ended"

// endSession: POST /api/v1/sessions/{id}/end {"reason":"..."} ends the
// session (the first reason wins; default defaultEndReason).
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := readJSON(w, r, &body); err != nil {
			return err
		}
	}
	if body.Reason == "" {
		body.Reason = defaultEndReason
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if err := s.cfg.History.EndSession(r.Context(), id, body.Reason); err != nil {
		return err
	}
	return s.answerSession(w, r, id)
}

// reopenSession: POST /api/v1/sessions/{id}/reopen clears the end.
func (s *Server) reopenSession(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if err := s.cfg.History.ReopenSession(r.Context(), id); err != nil {
		return err
	}
	return s.answerSession(w, r, id)
}

// deleteSession: DELETE /api/v1/sessions/{id} deletes the session, its
// messages and its delegate subagents (its other children are orphaned,
// not deleted), and answers {"deleted": id, "delegates": [ids]}. The id
// must be whole: a prefix never picks what to destroy.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id := idOfPath(r.PathValue("id"))
	ids, err := s.cfg.History.DeleteSession(r.Context(), id)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no session %q (delete takes a whole id)", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": id, "delegates": sessiondb.NonNil(ids[1:])})
	return nil
}

// archiveSession: POST /api/v1/sessions/{id}/archive archives the session
// with its compression lineage (Hermes' set_session_archived); /unarchive
// undoes it. The id is whole, as for delete. Answers {"id": id,
// "archived": bool, "sessions": how many sessions of the lineage were set}.
func (s *Server) archiveSession(archived bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := idOfPath(r.PathValue("id"))
		n, err := s.cfg.History.SetSessionArchived(r.Context(), id, archived)
		if err != nil {
			return err
		}
		if n == 0 {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "no session %q (archive takes a whole id)", id)
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "archived": archived, "sessions": n})
		return nil
	}
}

// prune: POST /api/v1/prune {"older_than_days":N,"source":"..."} deletes
// the ended sessions started more than N days ago (optionally of one
// source). N must be given and positive: an empty body prunes nothing.
func (s *Server) prune(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		OlderThanDays *float64 `json:"older_than_days"`
		Source        string   `json:"source"`
	}
	if err := readJSON(w, r, &body); err != nil {
		return err
	}
	if body.OlderThanDays == nil || !(*body.OlderThanDays > 0) || math.IsInf(*body.OlderThanDays, 0) {
		return sessiondb.Errorf(sessiondb.EINVALID, "older_than_days must be given, a positive number of days")
	}
	n, err := s.cfg.History.PruneSessions(r.Context(), *body.OlderThanDays, body.Source)
	return answer(w, map[string]any{"pruned": n}, err)
}

// answerSession answers the session row (a read of it, or a write's result).
func (s *Server) answerSession(w http.ResponseWriter, r *http.Request, id string) error {
	x, err := s.cfg.History.GetSession(r.Context(), id)
	return answer(w, x, err)
}
