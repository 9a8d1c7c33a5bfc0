package http

import (
	"errors"
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// The web UI's write controls: plain HTML forms that POST and are
// answered with a redirect to the page they act on (redirect-after-POST),
// so they work without JavaScript. Each route is guarded by the checks
// the JSON writes have (writeGuardWith: the token, same origin), and a
// read-only server registers none of them, as it registers no API write.

// routesUIWrites registers the write forms' routes.
func (s *Server) routesUIWrites() {
	s.uiWrite("POST /s/{id}/title", s.uiRename)
	s.uiWrite("POST /s/{id}/end", s.uiEnd)
	s.uiWrite("POST /s/{id}/reopen", s.uiReopen)
	s.uiWrite("POST /s/{id}/archive", s.uiArchive(true))
	s.uiWrite("POST /s/{id}/unarchive", s.uiArchive(false))
	s.uiWrite("GET /s/{id}/delete", s.uiDeleteConfirm)
	s.uiWrite("POST /s/{id}/delete", s.uiDelete)
	s.uiWrite("GET /prune", s.uiPrunePreview)
	s.uiWrite("POST /prune", s.uiPrune)
	if s.cfg.Mailboxes != nil {
		s.uiWrite("GET /mailboxes/{group}/{session}/requeue", s.uiRequeueConfirm)
		s.uiWrite("POST /mailboxes/{group}/{session}/requeue", s.uiRequeue)
	}
}

// uiWrite registers a write form's route: behind the write guard, its
// refusals and errors rendered as the error page, in words. A read-only
// server registers none.
func (s *Server) uiWrite(pattern string, h uiFunc) {
	if s.cfg.ReadOnly {
		return
	}
	refuse := func(w http.ResponseWriter, r *http.Request, code, message string) {
		s.render(w, r, StatusOf(code), "error", uiErrorData{Status: StatusOf(code), Code: code, Message: message})
	}
	s.mux.Handle(pattern, s.metrics.instrument(pattern, false, s.writeGuardWith(s.uiHandler(h), refuse)))
}

// formValue reads one field of a posted form, its body bounded as the
// API's JSON bodies are.
func formValue(w http.ResponseWriter, r *http.Request, name string) (string, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return "", sessiondb.Errorf(sessiondb.EINVALID, "the form is larger than %d bytes", maxBodyBytes)
		}
		return "", sessiondb.Errorf(sessiondb.EINVALID, "the form could not be read: %v", err)
	}
	return r.PostForm.Get(name), nil
}

// backToSession answers a done write with a redirect to the session's
// page (303: the browser fetches it with GET).
func backToSession(w http.ResponseWriter, r *http.Request, id string) error {
	http.Redirect(w, r, sessionURL(id), http.StatusSeeOther)
	return nil
}

// uiRename: POST /s/{id}/title, field title ("" clears it).
func (s *Server) uiRename(w http.ResponseWriter, r *http.Request) error {
	title, err := formValue(w, r, "title")
	if err != nil {
		return err
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if _, err := s.cfg.History.SetSessionTitle(r.Context(), id, title); err != nil {
		return err
	}
	return backToSession(w, r, id)
}

// uiEnd: POST /s/{id}/end, field reason (default defaultEndReason).
func (s *Server) uiEnd(w http.ResponseWriter, r *http.Request) error {
	reason, err := formValue(w, r, "reason")
	if err != nil {
		return err
	}
	if reason == "" {
		reason = defaultEndReason
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if err := s.cfg.History.EndSession(r.Context(), id, reason); err != nil {
		return err
	}
	return backToSession(w, r, id)
}

// uiReopen: POST /s/{id}/reopen clears the session's end.
func (s *Server) uiReopen(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if err := s.cfg.History.ReopenSession(r.Context(), id); err != nil {
		return err
	}
	return backToSession(w, r, id)
}

// archivable is a store that can say whether it can archive (the SQLite
// store: only a file with Hermes' archived column; PostgreSQL: always).
type archivable interface{ Archivable() bool }

// canArchive reports whether the store can archive, so the session page
// offers the control only where it works.
func (s *Server) canArchive() bool {
	a, ok := s.cfg.History.(archivable)
	return ok && a.Archivable()
}

// uiArchive: POST /s/{id}/archive and /unarchive set Hermes' archived
// flag on the session's compression lineage, as the API's routes do.
func (s *Server) uiArchive(archived bool) uiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := s.sessionID(r)
		if err != nil {
			return err
		}
		if _, err := s.cfg.History.SetSessionArchived(r.Context(), id, archived); err != nil {
			return err
		}
		return backToSession(w, r, id)
	}
}

// deleteView is the delete confirmation's data: the session, whole.
type deleteView struct {
	S     *sessiondb.Session
	Title string
	// Delegates are the delegate subagent sessions the delete takes
	// with it (DelegatesOf).
	Delegates []string
}

// uiDeleteConfirm: GET /s/{id}/delete names what a delete takes (the
// session, its messages by count, its delegate subagents; its other
// continuations stay) and asks. The
// id must be whole, as the delete's: a prefix never picks what to destroy.
func (s *Server) uiDeleteConfirm(w http.ResponseWriter, r *http.Request) error {
	x, err := s.cfg.History.GetSession(r.Context(), idOfPath(r.PathValue("id")))
	if err != nil {
		return err
	}
	delegates, err := s.cfg.History.DelegatesOf(r.Context(), x.ID)
	if err != nil {
		return err
	}
	s.page(w, r, "delete", deleteView{S: x, Title: deref(x.Title), Delegates: delegates})
	return nil
}

// uiDelete: POST /s/{id}/delete deletes the session (whole id) and goes
// to the session list.
func (s *Server) uiDelete(w http.ResponseWriter, r *http.Request) error {
	id := idOfPath(r.PathValue("id"))
	ids, err := s.cfg.History.DeleteSession(r.Context(), id)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no session %q (delete takes a whole id)", id)
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
