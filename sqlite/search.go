package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SearchMessages finds messages matching query with the full-text index
// (spec 6.1): the query is sanitized as Hermes v6 does; if FTS5 rejects it,
// it is retried once escaped (IMP-5), and a query FTS5 still rejects is
// invalid, never a silent empty result. Hits are ranked by bm25. When FTS
// finds nothing for a query with CJK text, a substring search (escaped
// LIKE, every token required, newest first) takes over (IMP-6).
//
// For speed the ranking runs on the FTS table alone when no filter needs
// the messages/sessions join, snippets are computed for the winners only,
// and the context rows of all hits come from one query.
func (s *Store) SearchMessages(ctx context.Context, query string, f sessiondb.SearchFilter) ([]sessiondb.SearchHit, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "search messages")
	}
	limit, offset := pageSize(f.Limit), f.Offset
	if strings.TrimSpace(query) == "" || (f.Sources != nil && len(f.Sources) == 0) {
		return []sessiondb.SearchHit{}, nil
	}
	q := fts.Sanitize(query)
	if q == "" {
		return []sessiondb.SearchHit{}, nil
	}
	cjk := sessiondb.ContainsCJK(q)
	var hits []sessiondb.SearchHit
	var err error
	if s.si.hasFTS() {
		hits, err = s.ftsSearch(ctx, q, f, limit, offset)
		if err != nil && sqlitedb.IsQueryError(err) {
			esc := fts.Escape(query)
			if esc == "" {
				hits, err = nil, nil
			} else {
				hits, err = s.ftsSearch(ctx, esc, f, limit, offset)
			}
			if err != nil && sqlitedb.IsQueryError(err) {
				if !cjk {
					return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "search: the full-text index cannot read the query %q", query)
				}
				hits, err = nil, nil
			}
		}
		if err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
	}
	if len(hits) == 0 && (cjk || !s.si.hasFTS()) {
		if m, ok := trigramMatch(q); ok && cjk && s.trigramReady.Load() {
			hits, err = s.ftsSearchIn(ctx, trigramTable, m, f, limit, offset)
		} else {
			hits, err = s.likeSearch(ctx, q, f, limit, offset)
		}
		if err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
	}
	if hits == nil {
		return []sessiondb.SearchHit{}, nil
	}
	s.addContext(ctx, hits)
	return hits, nil
}

// searchFilters returns the WHERE additions for f over aliases m and s.
func (s *Store) searchFilters(f sessiondb.SearchFilter) (string, []any) {
	var b strings.Builder
	var args []any
	if f.Sources != nil {
		b.WriteString(" AND s.source IN (" + placeholders(len(f.Sources)) + ")")
		for _, x := range f.Sources {
			args = append(args, x)
		}
	}
	if len(f.ExcludeSources) > 0 {
		b.WriteString(" AND s.source NOT IN (" + placeholders(len(f.ExcludeSources)) + ")")
		for _, x := range f.ExcludeSources {
			args = append(args, x)
		}
	}
	if len(f.Roles) > 0 {
		b.WriteString(" AND m.role IN (" + placeholders(len(f.Roles)) + ")")
		for _, x := range f.Roles {
			args = append(args, x)
		}
	}
	b.WriteString(s.q.visible)
	return b.String(), args
}

const hitColumns = "m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, s.started_at"

func scanHit(sc scanner, h *sessiondb.SearchHit) error {
	var sid, role, source sql.NullString
	var tool, model sql.NullString
	var ts, started sql.NullFloat64
	var snippet sql.NullString
	if err := sc.Scan(&h.ID, &snippet, &sid, &role, &ts, &tool, &source, &model, &started); err != nil {
		return err
	}
	h.Snippet, h.SessionID, h.Role, h.Source = snippet.String, sid.String, role.String, source.String
	h.Timestamp, h.SessionStarted = ts.Float64, started.Float64
	h.ToolName, h.Model = strPtr(tool), strPtr(model)
	h.Context = []sessiondb.ContextRow{}
	return nil
}

// queryHits runs q on the readers and reads every row with scanHit.
func (s *Store) queryHits(ctx context.Context, q string, args ...any) ([]sessiondb.SearchHit, error) {
	return sqlitedb.Append(ctx, readers{s}, q, args, nil, func(r sqlitedb.Row) (sessiondb.SearchHit, error) {
		var h sessiondb.SearchHit
		err := scanHit(r, &h)
		return h, err
	})
}

// idList is the ids of hits as a JSON array, for json_each.
func idList(hits []sessiondb.SearchHit) string {
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// ftsSearch ranks with FTS5 and fetches the winners' columns.
//
// FTS5 consumes ORDER BY rank itself: it scores every match once, sorts
// rowids with their positions, and hands rows out in rank order, so
// SQLite stops after LIMIT rows and snippet() runs for the winners only,
// from the sorted positions (no second MATCH per row). Without filters the
// ranking touches the FTS table alone and the message and session columns
// of the winners come from one keyed query; with filters the join sits in
// the same statement, still driven by the FTS cursor in rank order.
func (s *Store) ftsSearch(ctx context.Context, match string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	return s.ftsSearchIn(ctx, "messages_fts", match, f, limit, offset)
}

// ftsSearchIn is ftsSearch over the FTS5 table named table, which indexes
// message content by message id.
func (s *Store) ftsSearchIn(ctx context.Context, table, match string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	filters, fargs := s.searchFilters(f)
	if filters != "" {
		args := append([]any{match}, fargs...)
		args = append(args, limit, offset)
		return s.queryHits(ctx, "SELECT "+table+".rowid, snippet("+table+", 0, '>>>', '<<<', '...', 40), "+hitColumns+
			" FROM "+table+" JOIN messages m ON m.id = "+table+".rowid JOIN sessions s ON s.id = m.session_id"+
			" WHERE "+table+" MATCH ?"+filters+" ORDER BY "+table+".rank LIMIT ? OFFSET ?", args...)
	}

	hits, err := sqlitedb.Append(ctx, readers{s}, "SELECT rowid, snippet("+table+", 0, '>>>', '<<<', '...', 40) FROM "+table+
		" WHERE "+table+" MATCH ? ORDER BY rank LIMIT ? OFFSET ?", []any{match, limit, offset}, nil, func(r sqlitedb.Row) (sessiondb.SearchHit, error) {
		var h sessiondb.SearchHit
		var snip sql.NullString
		err := r.Scan(&h.ID, &snip)
		h.Snippet = snip.String
		return h, err
	})
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return nil, nil
	}
	details, err := s.queryHits(ctx, "SELECT m.id, NULL, "+hitColumns+
		" FROM json_each(?) h JOIN messages m ON m.id = h.value JOIN sessions s ON s.id = m.session_id", idList(hits))
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]sessiondb.SearchHit, len(details))
	for _, d := range details {
		byID[d.ID] = d
	}
	out := hits[:0]
	for _, h := range hits {
		d, ok := byID[h.ID]
		if !ok {
			continue // an FTS row without its message: a damaged index
		}
		d.Snippet = h.Snippet
		out = append(out, d)
	}
	return out, nil
}

// likeSearch is the substring fallback: every term must occur (escaped
// LIKE, IMP-6), newest first; the snippet is 120 code points around the
// first term's first exact occurrence (the start when the match was only
// case-insensitive).
func (s *Store) likeSearch(ctx context.Context, q string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	terms := fts.LikeTerms(q)
	if len(terms) == 0 {
		return nil, nil
	}
	filters, fargs := s.searchFilters(f)
	var b strings.Builder
	args := []any{terms[0]}
	b.WriteString("SELECT m.id, substr(m.content, max(1, instr(m.content, ?) - 40), 120), " + hitColumns +
		" FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.content IS NOT NULL")
	for _, t := range terms {
		b.WriteString(` AND m.content LIKE ? ESCAPE '\'`)
		args = append(args, "%"+fts.EscapeLike(t)+"%")
	}
	b.WriteString(filters)
	args = append(args, fargs...)
	b.WriteString(" ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?")
	args = append(args, limit, offset)
	return s.queryHits(ctx, b.String(), args...)
}

// addContext fills each hit's context, the previous message, the hit and
// the next one of the same session in id order (IMP-1), each cut to 200
// code points, with one query for all hits, whose ORDER BY gives each
// hit's rows in id order. If that query fails the hits keep an empty
// context, as in Hermes.
func (s *Store) addContext(ctx context.Context, hits []sessiondb.SearchHit) {
	visP := strings.ReplaceAll(s.q.visible, "m.", "p.")
	visN := strings.ReplaceAll(s.q.visible, "m.", "n.")
	byHit := map[int64][]sessiondb.ContextRow{}
	err := sqlitedb.Each(ctx, readers{s}, `SELECT h.value, m.id, m.role, COALESCE(substr(m.content, 1, 200), '')
FROM json_each(?) h
JOIN messages hm ON hm.id = h.value
JOIN messages m ON m.id IN (
    (SELECT max(p.id) FROM messages p WHERE p.session_id = hm.session_id AND p.id < hm.id`+visP+`),
    hm.id,
    (SELECT min(n.id) FROM messages n WHERE n.session_id = hm.session_id AND n.id > hm.id`+visN+`))
ORDER BY h.value, m.id`, []any{idList(hits)}, func(r sqlitedb.Row) error {
		var hit, id int64
		var role, content sql.NullString
		if err := r.Scan(&hit, &id, &role, &content); err != nil {
			return err
		}
		byHit[hit] = append(byHit[hit], sessiondb.ContextRow{Role: role.String, Content: content.String})
		return nil
	})
	if err != nil {
		s.log.Warn("search context query failed", "err", err)
		return
	}
	for i := range hits {
		if c := byHit[hits[i].ID]; c != nil {
			hits[i].Context = c
		}
	}
}
