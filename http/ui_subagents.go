package http

import (
	"net/http"
	"time"

	"github.com/sessiondb/sessiondb"
)

// subagentsView is the subagents page: janebot's subagent sessions, a
// page at a time, newest update first as the store lists them.
type subagentsView struct {
	Status string
	Rows   []subagentRow
	Next   string
}

// subagentRow is one subagent with its times as times (the store keeps
// epoch milliseconds).
type subagentRow struct {
	sessiondb.Subagent
	Created, Updated time.Time
}

// uiSubagents: GET /subagents?status=&cursor= lists the subagents.
func (s *Server) uiSubagents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	v := subagentsView{Status: q.Get("status")}
	page, err := s.cfg.Subagents.ListSubagents(r.Context(), sessiondb.SubagentFilter{
		Status: sessiondb.SubagentStatus(v.Status), Limit: registryPage, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	for _, x := range page.Subagents {
		v.Rows = append(v.Rows, subagentRow{Subagent: x, Created: time.UnixMilli(x.CreatedAt), Updated: time.UnixMilli(x.UpdatedAt)})
	}
	if page.NextCursor != "" {
		v.Next = withQuery(r.URL.Path+"?"+r.URL.RawQuery, "cursor", page.NextCursor)
	}
	s.page(w, r, "subagents", v)
	return nil
}
