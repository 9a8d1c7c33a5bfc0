package http

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// searchView is the search page: the form, a page of hits, and the links
// to the pages around it.
type searchView struct {
	Q, Source, Role string
	Searched        bool
	Hits            []hitView
	Offset          int
	Next, Prev      string
}

// hitView is one search hit: where it is, its snippet cut into plain and
// marked segments, its neighbours, and the link into its transcript.
type hitView struct {
	ID                                          int64
	SessionID, Title, Role, Source, Model, Tool string
	Time                                        float64
	Snippet                                     []segment
	Context                                     []sessiondb.ContextRow
	URL                                         string
}

// segment is a piece of a snippet: Mark is set on the words that matched.
// The template escapes each piece and wraps the marked ones in <mark>, so
// a snippet is never trusted as markup.
type segment struct {
	Text string
	Mark bool
}

// snippetSegments cuts a snippet at the search's markers (>>> opens a
// match, <<< closes it). The text itself may hold '>' and '<' next to a
// marker ("<b>" before a match reads "<b>>>>"): an opening marker is the
// last three of a run of '>', a closing one the first three of a run of
// '<'. A marker without its pair marks, or stops marking, to the end.
func snippetSegments(s string) []segment {
	var out []segment
	mark := false
	for s != "" {
		sep := snipOpen
		if mark {
			sep = snipClose
		}
		i := strings.Index(s, sep)
		if i < 0 {
			out = append(out, segment{Text: s, Mark: mark})
			break
		}
		if !mark {
			for i+len(sep) < len(s) && s[i+len(sep)] == '>' {
				i++
			}
		}
		if i > 0 {
			out = append(out, segment{Text: s[:i], Mark: mark})
		}
		s = s[i+len(sep):]
		mark = !mark
	}
	return out
}

// The markers SearchHit.Snippet puts around matches.
const (
	snipOpen  = ">>>"
	snipClose = "<<<"
)

// searchPageSize is how many hits a search page shows.
const searchPageSize = 20

// uiSearch: GET /search?q=&source=&role=&offset= searches messages and
// shows the hits best first, each linking to its message in its
// transcript (/s/{session}?at={id}&hl={match}#m{id}, ui_hitmarks.go).
func (s *Server) uiSearch(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	v := searchView{Q: strings.TrimSpace(p.str("q")), Source: p.str("source"), Role: p.str("role"),
		Offset: p.int("offset", 0, 0, 10000)}
	if p.err != nil {
		return p.err
	}
	if v.Q == "" {
		s.page(w, r, "search", v)
		return nil
	}
	f := sessiondb.SearchFilter{Limit: searchPageSize, Offset: v.Offset}
	if v.Source != "" {
		f.Sources = []string{v.Source}
	}
	if v.Role != "" {
		f.Roles = []string{v.Role}
	}
	hits, err := s.runSearch(r, v.Q, f)
	if err != nil {
		return err
	}
	v.Searched = true
	titles := map[string]string{}
	for _, h := range hits {
		title, ok := titles[h.SessionID]
		if !ok {
			if x, err := s.cfg.History.GetSession(r.Context(), h.SessionID); err == nil {
				title = deref(x.Title)
			}
			titles[h.SessionID] = title
		}
		snippet := snippetSegments(h.Snippet)
		v.Hits = append(v.Hits, hitView{ID: h.ID, SessionID: h.SessionID, Title: title, Role: h.Role,
			Source: h.Source, Model: deref(h.Model), Tool: deref(h.ToolName), Time: h.Timestamp,
			Snippet: snippet, Context: h.Context, URL: hitURL(h.SessionID, h.ID, snippet)})
	}
	base := r.URL.Path + "?" + r.URL.RawQuery
	if len(hits) == searchPageSize {
		v.Next = withQuery(base, "offset", strconv.Itoa(v.Offset+searchPageSize))
	}
	if v.Offset > 0 {
		prev := ""
		if o := v.Offset - searchPageSize; o > 0 {
			prev = strconv.Itoa(o)
		}
		v.Prev = withQuery(base, "offset", prev)
	}
	s.page(w, r, "search", v)
	return nil
}
