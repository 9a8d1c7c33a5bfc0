package http

import (
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// routesHistory registers the history store's routes.
func (s *Server) routesHistory() {
	s.read("GET /api/v1/sessions", s.listSessions)
	s.read("GET /api/v1/sessions/{id}", s.getSession)
	s.read("GET /api/v1/sessions/{id}/messages", s.listMessages)
	s.stream("GET /api/v1/sessions/{id}/events", s.sessionEvents)
}

// sessionQuery reads a session listing's parameters: source, model, user,
// parent, from/to (a time range on started_at), q (title or id text),
// sort (started, last_active, cost, tokens), order (desc, asc), children,
// archived, archived_only, cwd (a directory: the sessions that ran in it or
// below it), min_messages, limit and cursor.
func sessionQuery(p *params) sessiondb.SessionQuery {
	q := sessiondb.SessionQuery{
		Source: p.str("source"), Model: p.str("model"), UserID: p.str("user"), ParentID: p.str("parent"),
		StartedFrom: p.time("from"), StartedBefore: p.time("to"), Text: p.str("q"),
		Sort:            sessiondb.SessionSort(p.str("sort")),
		IncludeChildren: p.bool("children"), IncludeArchived: p.bool("archived"), ArchivedOnly: p.bool("archived_only"),
		Cwd: p.str("cwd"), MinMessages: int64(p.int("min_messages", 0, 0, math.MaxInt32)),
		Limit: p.int("limit", 50, 1, sessiondb.MaxSessionPage), After: p.str("cursor"),
	}
	switch o := p.str("order"); o {
	case "", "desc":
	case "asc":
		q.Ascending = true
	default:
		p.fail("order", "%q is not asc or desc", o)
	}
	return q
}

// listSessions: GET /api/v1/sessions → {"sessions":[...],"next":"cursor"}.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	_, _, page, err := s.sessionPage(r)
	return answer(w, page, err)
}

// sessionPage lists the page of sessions r's parameters select
// (sessionQuery), for the API and the UI alike.
func (s *Server) sessionPage(r *http.Request) (*params, sessiondb.SessionQuery, *sessiondb.SessionPage, error) {
	p := paramsOf(r.URL.Query())
	q := sessionQuery(p)
	if p.err != nil {
		return nil, q, nil, p.err
	}
	page, err := s.cfg.History.ListSessions(r.Context(), q)
	return p, q, page, err
}

// getSession: GET /api/v1/sessions/{id} → the session row with its
// preview and last activity. {id} is an id or a unique id prefix.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	return s.answerSession(w, r, id)
}

// sessionID resolves the {id} of a path (idOfPath): an exact id, else a
// unique prefix (not_found, or conflict naming the ambiguity).
func (s *Server) sessionID(r *http.Request) (string, error) {
	return s.cfg.History.ResolveSessionID(r.Context(), idOfPath(r.PathValue("id")))
}

// SessionPath returns a session id as one segment of a URL path, escaped,
// which the server's routes read back as the id.
//
// A path's segments "." and ".." (also written %2e) are folded away by
// browsers, curl and the URL standard, and cleaned away by ServeMux: a
// session whose id is "." or ".." had no URL that reached it. Such an id
// is written with a "~" in front ("~.", "~.."), and so is every id made of
// tildes and then one or two dots ("~." is "~~."), so that each id keeps
// a path of its own; every other id is written as it is.
func SessionPath(id string) string {
	if dotSegment(strings.TrimLeft(id, "~")) {
		id = "~" + id
	}
	return url.PathEscape(id)
}

// idOfPath is the session id a path segment names (its {id}, unescaped):
// SessionPath undone.
func idOfPath(seg string) string {
	if rest, ok := strings.CutPrefix(seg, "~"); ok && dotSegment(strings.TrimLeft(rest, "~")) {
		return rest
	}
	return seg
}

// dotSegment reports whether s is a path segment a URL parser folds.
func dotSegment(s string) bool { return s == "." || s == ".." }

// messagesPage is a transcript page as the API answers it: the messages in
// id order, whether more exist on either side, and the cursors to fetch
// them (before: the first id, after: the last; set whenever the page has
// messages, so a client can also look for newer ones later).
type messagesPage struct {
	SessionID string              `json:"session_id"`
	Messages  []sessiondb.Message `json:"messages"`
	HasBefore bool                `json:"has_before"`
	HasAfter  bool                `json:"has_after"`
	Before    int64               `json:"before,omitempty"`
	After     int64               `json:"after,omitempty"`
}

// listMessages: GET /api/v1/sessions/{id}/messages?after=&before=&limit=
// &from=start|end. A page is at most limit messages (default 50, at most
// 500) grown to keep a tool call with its results; never the whole
// transcript. Without a cursor, from=start (the default) reads from the
// beginning and from=end the newest.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	pg := sessiondb.Page{AfterID: p.id("after"), BeforeID: p.id("before"), Limit: p.int("limit", 50, 1, 500)}
	switch from := p.str("from"); from {
	case "", "start":
		pg.FromStart = true
	case "end":
	default:
		p.fail("from", "%q is not start or end", from)
	}
	if p.err != nil {
		return p.err
	}
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	mp, err := s.cfg.History.GetMessagesPage(r.Context(), id, pg)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMessagesPage(id, mp))
	return nil
}

func toMessagesPage(id string, mp *sessiondb.MessagePage) messagesPage {
	out := messagesPage{SessionID: id, Messages: mp.Messages, HasBefore: mp.HasBefore, HasAfter: mp.HasAfter}
	if n := len(mp.Messages); n > 0 {
		out.Before, out.After = mp.Messages[0].ID, mp.Messages[n-1].ID
	}
	return out
}
