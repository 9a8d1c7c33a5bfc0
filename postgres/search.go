package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
)

// SearchMessages finds messages matching query (spec 6.1) with the
// word index: the query is sanitized as Hermes v6 does and translated to a
// tsquery with the same meaning (fts.TSQuery); an expression FTS5 would
// reject is retried escaped (IMP-5), and one that still cannot be read is
// invalid. Hits are ranked by ts_rank (length-normalised), ties by id.
// When the word index finds nothing for a query with CJK text, a substring
// search (every term, ASCII case ignored, newest first) takes over,
// served by the trigram index.
func (s *Store) SearchMessages(ctx context.Context, query string, f sessiondb.SearchFilter) ([]sessiondb.SearchHit, error) {
	plan, ok, err := sessiondb.PlanSearch(query, f, fts.Sanitize)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []sessiondb.SearchHit{}, nil
	}
	q, cjk, limit, offset := plan.Query, plan.CJK, plan.Limit, plan.Offset
	match := q // the FTS5 expression, for the snippets
	tq, err := fts.TSQuery(q)
	if errors.Is(err, fts.ErrSyntax) {
		tq, err = fts.Query{}, nil
		if esc := fts.Escape(query); esc != "" {
			tq, err = fts.TSQuery(esc)
			match = esc
		}
		if err != nil {
			if !cjk {
				return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "search: cannot read the query %q", query)
			}
			tq, err = fts.Query{}, nil
		}
	}
	var hits []sessiondb.SearchHit
	if tq.Text != "" {
		if hits, err = s.wordSearch(ctx, tq, match, f, limit, offset); err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
	}
	if len(hits) == 0 && cjk {
		if hits, err = s.likeSearch(ctx, q, f, limit, offset); err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
	}
	if hits == nil {
		return []sessiondb.SearchHit{}, nil
	}
	s.addContext(ctx, hits)
	return hits, nil
}

// searchFilters returns the WHERE additions for f over aliases m and s,
// numbering parameters after the args already taken.
func searchFilters(f sessiondb.SearchFilter, args []any) (string, []any) {
	var b strings.Builder
	// Hermes' search finds what a compaction summarised away, not what a
	// rewind took back (docs/hermes-versions.md 4.1).
	b.WriteString(" AND NOT (m.active = 0 AND m.compacted = 0)")
	next := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// filtersSessions says when these two read the session row.
	if f.Sources != nil {
		b.WriteString(" AND s.source = ANY(" + next(f.Sources) + ")")
	}
	if len(f.ExcludeSources) > 0 {
		b.WriteString(" AND s.source <> ALL(" + next(f.ExcludeSources) + ")")
	}
	if len(f.Roles) > 0 {
		b.WriteString(" AND m.role = ANY(" + next(f.Roles) + ")")
	}
	return b.String(), args
}

// filtersSessions reports whether searchFilters' conditions read the
// session row (alias s), which a query must then join.
func filtersSessions(f sessiondb.SearchFilter) bool {
	return f.Sources != nil || len(f.ExcludeSources) > 0
}

const hitColumns = `m.id, m.session_id, m.role, m."timestamp", m.tool_name, s.source, s.model, s.started_at`

// scanHit reads hitColumns followed by the snippet.
func scanHit(r pgx.Row, h *sessiondb.SearchHit) error {
	var snippet *string
	if err := r.Scan(&h.ID, &h.SessionID, &h.Role, &h.Timestamp, &h.ToolName, &h.Source, &h.Model, &h.SessionStarted, &snippet); err != nil {
		return err
	}
	if snippet != nil {
		h.Snippet = *snippet
	}
	h.Context = []sessiondb.ContextRow{}
	return nil
}

func (s *Store) queryHits(ctx context.Context, sql string, args []any) ([]sessiondb.SearchHit, error) {
	var hits []sessiondb.SearchHit
	err := each(ctx, s.pool, sql, args, func(r pgx.Rows) error {
		var h sessiondb.SearchHit
		if err := scanHit(r, &h); err != nil {
			return err
		}
		hits = append(hits, h)
		return nil
	})
	return hits, err
}

// rankWindow bounds the matches ts_rank scores: the newest rankWindow
// matches (by id, which the word index gives without reading a row) are
// ranked and the page taken from them. Ranking reads each match's stored
// tsvector, so a common word (tens of thousands of matches) cost hundreds
// of milliseconds when every match was ranked.
const rankWindow = 1000

// snippets makes FTS5's snippets (the SQLite backend's, byte for byte) of
// rows that matched the FTS5 expression match, from the first
// fts.SnippetWindow bytes of their text.
func snippets(match string) func([]byte) string {
	return fts.Snippet{Open: ">>>", Close: "<<<", Ellipsis: "...", Tokens: 40, Tokenizer: fts.Unicode61}.Bounded(match)
}

// wordSearch ranks the newest rankWindow matches of the word index and
// reads the page's hits with the beginning of their text, from which the
// snippets are cut here (one query, no second read of the text).
func (s *Store) wordSearch(ctx context.Context, tq fts.Query, match string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	// Ranked, the page comes from the newest matches; by time (Hermes'
	// sort: the message's time, then relevance) from every match (LIMIT
	// NULL is none).
	var window any = max(rankWindow, offset+limit)
	order := "ts_rank(m.fts, q.q, 1) DESC, m.id"
	if f.ByTime() {
		dir := "DESC"
		if f.Sort == sessiondb.SearchOldest {
			dir = "ASC"
		}
		window, order = nil, `m."timestamp" `+dir+", ts_rank(m.fts, q.q, 1) DESC, m.id"
	}
	filters, args := searchFilters(f, []any{tq.Text, limit, offset, window, fts.SnippetWindow + 1})
	if words := phraseWords(tq.Text); words != "" {
		// The planner guesses a phrase about as common as its words
		// together, and then walks the primary key through every row
		// when the words are common but rarely adjacent ("on riocacen":
		// 530 ms over 100,000 messages). Its words alone, a condition
		// every match meets, make it read the index's candidates (the
		// rows holding both words) instead: 135 ms. GIN keeps no
		// positions, so the adjacency is checked on each candidate.
		args = append(args, words)
		filters = " AND m.fts @@ to_tsquery('sessiondb_fts', $" + strconv.Itoa(len(args)) + ")" + filters
	}
	join, from, match1 := "", "messages m", "to_tsquery('sessiondb_fts', $1)"
	if strings.Contains(filters, "s.") {
		// With the sessions joined, the words seen made the planner hash
		// every session (TestIndexesServeEveryQuery); this form stays
		// on the indexes.
		join, from, match1 = " JOIN sessions s ON s.id = m.session_id", "q, messages m", "q.q"
	}
	// The candidates' condition names the query itself, not a CTE's column:
	// a CTE read twice is materialised, and the planner, not seeing the
	// words, guessed every query rare and read every match through the
	// bitmap (120,000 rows for a phrase every message holds, where the
	// newest 1,000 are found walking the primary key backwards).
	sql := `WITH q AS (SELECT to_tsquery('sessiondb_fts', $1) AS q),
cand AS (
    SELECT m.id FROM ` + from + join + `
    WHERE m.fts @@ ` + match1 + filters + `
    ORDER BY m.id DESC
    LIMIT $4),
hits AS (
    SELECT m.id, row_number() OVER (ORDER BY ` + order + `) AS n
    FROM q, cand c JOIN messages m ON m.id = c.id
    ORDER BY ` + order + `
    LIMIT $2 OFFSET $3)
SELECT ` + hitColumns + `, left(m.content, $5)
FROM hits h JOIN messages m ON m.id = h.id JOIN sessions s ON s.id = m.session_id
ORDER BY h.n`
	// An unnamed statement is planned with its arguments every time; a
	// cached one turns generic after five runs, planned without the words.
	// The query reads the text where the snippet goes; it becomes one.
	hits, err := s.queryHits(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...))
	snippet := snippets(match)
	for i := range hits {
		if hits[i].Snippet != "" {
			hits[i].Snippet = snippet([]byte(hits[i].Snippet))
		}
	}
	return hits, err
}

// phraseWords is the tsquery text with each phrase's words joined by &
// instead of <->: a query every row the text matches also matches. ""
// when the text has no phrase, or has a negation, under which the words
// together would not be implied by the phrase.
func phraseWords(text string) string {
	if !strings.Contains(text, " <-> ") || strings.Contains(text, "!") {
		return ""
	}
	return strings.ReplaceAll(text, " <-> ", " & ")
}

// likeSearch is the substring fallback: every term must occur, ignoring
// ASCII case as SQLite's LIKE does (ILIKE, served by the trigram index);
// newest first; the snippet is 120 code points around the first term's
// first exact occurrence (the start when the match was only by case), its
// terms marked and its cuts shown (fts.Snippet.Like, as SQLite's).
func (s *Store) likeSearch(ctx context.Context, q string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	terms := fts.LikeTerms(q)
	if len(terms) == 0 {
		return nil, nil
	}
	args := []any{terms[0], limit, offset}
	var b strings.Builder
	// The page is cut on the matches' ids first, and only its rows are
	// joined to their sessions: joined before the sort, every match was,
	// and the planner chose by its estimate of their number between a
	// lookup per match and a scan of every session.
	b.WriteString("SELECT m.id FROM messages m")
	if filtersSessions(f) {
		b.WriteString(" JOIN sessions s ON s.id = m.session_id")
	}
	b.WriteString(" WHERE m.content IS NOT NULL")
	cjk := false
	for _, t := range terms {
		args = append(args, "%"+fts.EscapeLike(t)+"%")
		b.WriteString(" AND m.content ILIKE $" + strconv.Itoa(len(args)) + ` ESCAPE '\'`)
		cjk = cjk || sessiondb.ContainsCJK(t)
	}
	if cjk {
		// Every match holds the CJK term, so it is among the rows the
		// trigram index keeps (migration 005); naming its condition lets
		// the planner use it.
		b.WriteString(" AND sessiondb_has_cjk(m.content)")
	}
	filters, args := searchFilters(f, args)
	b.WriteString(filters)
	b.WriteString(` ORDER BY m."timestamp" DESC, m.id DESC LIMIT $2 OFFSET $3`)
	lead, span := strconv.Itoa(fts.LikeLead), strconv.Itoa(fts.LikeSpan+1)
	sel := "SELECT " + hitColumns + ", (strpos(m.content, $1) > " + lead + "+1)::int::text || substr(m.content, greatest(1, strpos(m.content, $1) - " + lead + "), " + span + ")" +
		" FROM (" + b.String() + ") p JOIN messages m ON m.id = p.id JOIN sessions s ON s.id = m.session_id" +
		` ORDER BY m."timestamp" DESC, m.id DESC`
	hits, err := s.queryHits(ctx, sel, args)
	snippet := fts.Snippet{Open: ">>>", Close: "<<<", Ellipsis: "..."}.Like(terms)
	for i := range hits {
		hits[i].Snippet = snippet([]byte(hits[i].Snippet))
	}
	return hits, err
}

// addContext fills each hit's context: the previous message, the hit and
// the next one of the same session in id order, each cut to 200 code
// points, with one query for all hits. If it fails the hits keep an empty
// context, as in Hermes.
func (s *Store) addContext(ctx context.Context, hits []sessiondb.SearchHit) {
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	byHit := map[int64][]sessiondb.ContextRow{}
	err := each(ctx, s.pool, `SELECT hm.id, c.role, COALESCE(left(c.content, 200), ''), c.content_bytes
FROM unnest($1::bigint[]) AS h(id)
JOIN messages hm ON hm.id = h.id
CROSS JOIN LATERAL (
    (SELECT p.id, p.role, p.content, p.content_bytes FROM messages p WHERE p.session_id = hm.session_id AND p.id < hm.id ORDER BY p.id DESC LIMIT 1)
    UNION ALL SELECT hm.id, hm.role, hm.content, hm.content_bytes
    UNION ALL (SELECT n.id, n.role, n.content, n.content_bytes FROM messages n WHERE n.session_id = hm.session_id AND n.id > hm.id ORDER BY n.id LIMIT 1)
) c
ORDER BY hm.id, c.id`, []any{ids}, func(r pgx.Rows) error {
		var hit int64
		var row sessiondb.ContextRow
		var raw []byte
		if err := r.Scan(&hit, &row.Role, &row.Content, &raw); err != nil {
			return err
		}
		if raw != nil {
			// Content kept as bytes (multimodal content's marker is a NUL).
			row.Content = string(raw)
		}
		row.Content = sessiondb.NeighbourText(row.Content)
		byHit[hit] = append(byHit[hit], row)
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
