package http

import (
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// lineageView is the lineage page: the session asked for and its tree.
type lineageView struct {
	ID, Title string
	Root      *sessiondb.LineageNode
	// Count is how many sessions the tree holds.
	Count int
}

// uiLineage: GET /s/{id}/lineage shows the session's lineage as a tree:
// its ancestors down to it (compression continuations and the sessions
// it was forked from) and every session that continues it.
func (s *Server) uiLineage(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	root, err := sessiondb.Lineage(r.Context(), s.cfg.History, id)
	if err != nil {
		return err
	}
	v := lineageView{ID: id, Root: root}
	var walk func(n *sessiondb.LineageNode)
	walk = func(n *sessiondb.LineageNode) {
		v.Count++
		if n.ID == id {
			v.Title = deref(n.Title)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	s.page(w, r, "lineage", v)
	return nil
}
