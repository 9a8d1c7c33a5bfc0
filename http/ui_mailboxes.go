package http

import "net/http"

func (s *Server) uiMailboxes(w http.ResponseWriter, r *http.Request) error {
	s.page(w, r, "mailboxes", nil)
	return nil
}

func (s *Server) uiMailbox(w http.ResponseWriter, r *http.Request) error {
	s.page(w, r, "mailbox", nil)
	return nil
}

func (s *Server) uiRegistry(w http.ResponseWriter, r *http.Request) error {
	s.page(w, r, "registry", nil)
	return nil
}
