package http

import (
	"bufio"
	"io"
	"net/http"
	"time"

	"github.com/sessiondb/sessiondb"
)

// routesReports registers search, lineage, usage and export.
func (s *Server) routesReports() {
	s.read("GET /api/v1/search", s.search)
	s.read("GET /api/v1/sessions/{id}/lineage", s.lineage)
	s.read("GET /api/v1/usage", s.usage)
	s.stream("GET /api/v1/sessions/{id}/export", s.exportSession)
	s.stream("GET /api/v1/export", s.exportFilter)
}

// MaxSearchResults bounds one page of search hits.
const MaxSearchResults = 100

// searchAnswer is a page of search hits.
type searchAnswer struct {
	Query string                `json:"query"`
	Hits  []sessiondb.SearchHit `json:"hits"`
	// Next is the offset of the next page; absent when this page was not
	// full. Hits are ranked by relevance, which has no keyset.
	Next int `json:"next,omitempty"`
}

// search: GET /api/v1/search?q=&source=&exclude_source=&role=&limit=
// &offset= → hits with snippets (matches between >>> and <<<) and each
// hit's neighbours as context, best first.
func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	q := p.str("q")
	f := sessiondb.SearchFilter{ExcludeSources: p.list("exclude_source"), Roles: p.list("role"),
		Limit: p.int("limit", 20, 1, MaxSearchResults), Offset: p.int("offset", 0, 0, 10000)}
	if src := p.list("source"); len(src) > 0 {
		f.Sources = src
	}
	if q == "" {
		p.fail("q", "is empty: give the words to search for")
	}
	if p.err != nil {
		return p.err
	}
	hits, err := s.runSearch(r, q, f)
	if err != nil {
		return err
	}
	a := searchAnswer{Query: q, Hits: hits}
	if len(hits) == f.Limit {
		a.Next = f.Offset + f.Limit
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// runSearch runs one search and counts it (API and MCP alike).
func (s *Server) runSearch(r *http.Request, q string, f sessiondb.SearchFilter) ([]sessiondb.SearchHit, error) {
	s.metrics.searches.Inc()
	hits, err := s.cfg.History.SearchMessages(r.Context(), q, f)
	if err != nil {
		return nil, err
	}
	hits = sessiondb.NonNil(hits)
	return hits, nil
}

// lineage: GET /api/v1/sessions/{id}/lineage → the tree from the oldest
// ancestor down to the session and every descendant under it.
func (s *Server) lineage(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	n, err := sessiondb.Lineage(r.Context(), s.cfg.History, id)
	return answer(w, n, err)
}

// usage: GET /api/v1/usage?source=&since=&top= → tokens and cost by
// model, by source and by day, and the costliest sessions.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	f := sessiondb.UsageFilter{Source: p.str("source"), Since: p.time("since"), Top: p.int("top", 10, 0, 1000)}
	if f.Top == 0 {
		f.Top = -1
	}
	if p.err != nil {
		return p.err
	}
	rep, err := s.cfg.History.Usage(r.Context(), f)
	return answer(w, rep, err)
}

// startExport readies a download of JSON Lines (the export format of
// `sessiondb export`, which `sessiondb import` reads back): its headers,
// no deadlines, and a writer that buffers it and counts what reached w.
func startExport(w http.ResponseWriter, name string) (*bufio.Writer, *countingWriter) {
	rc := http.NewResponseController(w)
	// An export lasts as long as the store is large: no deadlines (the
	// server's read timeout would otherwise end the request's context).
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	cw := &countingWriter{w: w}
	return bufio.NewWriterSize(cw, exportBuffer), cw
}

// exportBuffer is the write buffer of an export.
const exportBuffer = 64 << 10

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// exportFailed ends an export that failed: as a JSON error while nothing
// was sent (the headers of the download taken back), else by breaking the
// connection, so that the client sees a failed download instead of a
// file cut in the middle of a line that looks complete.
func (s *Server) exportFailed(w http.ResponseWriter, r *http.Request, sent *countingWriter, err error) {
	if sent.n == 0 {
		w.Header().Del("Content-Disposition")
		s.writeError(w, r, err)
		return
	}
	if r.Context().Err() == nil {
		s.log.Warn("export broken off", "path", r.URL.Path, "err", err)
	}
	panic(http.ErrAbortHandler)
}

// exportSession: GET /api/v1/sessions/{id}/export → one JSON line: the
// session with every stored column and its messages, written as they are
// read, a page at a time (sessiondb.WriteSessionExport): the export of a
// session holds about sessiondb.ExportPageBytes of its messages and the
// write buffer, however large the session.
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	bw, sent := startExport(w, "session.jsonl")
	err = sessiondb.WriteSessionExport(r.Context(), s.cfg.History, id, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		s.exportFailed(w, r, sent, err)
	}
	return nil
}

// exportFilter: GET /api/v1/export?<the listing's filters> streams every
// session the filter selects (children included, unless parent= is
// given), one JSON line each, in the listing's order, read page by page
// and each session as exportSession reads it: the store is never held for
// the whole export, nor a session whole. A session deleted since its page
// was listed is passed over; any other error breaks the download off
// (exportFailed).
func (s *Server) exportFilter(w http.ResponseWriter, r *http.Request) error {
	p := paramsOf(r.URL.Query())
	q := sessionQuery(p)
	if p.err != nil {
		return p.err
	}
	q.IncludeChildren = true
	q.Limit = 100
	if _, err := q.Cursor(); err != nil {
		return err
	}
	ctx := r.Context()
	bw, sent := startExport(w, "sessions.jsonl")
	for {
		page, err := s.cfg.History.ListSessions(ctx, q)
		if err != nil {
			s.exportFailed(w, r, sent, err)
			return nil
		}
		for _, x := range page.Sessions {
			err := sessiondb.WriteSessionExport(ctx, s.cfg.History, x.ID, bw)
			if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
				continue // deleted since the page was read: nothing of it written
			}
			if err != nil {
				s.exportFailed(w, r, sent, err)
				return nil
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if err := bw.Flush(); err != nil {
		s.exportFailed(w, r, sent, err)
	}
	return nil
}
