package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
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
	plan, ok, err := sessiondb.PlanSearch(query, f, fts.Sanitize)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []sessiondb.SearchHit{}, nil
	}
	hits, err := s.findHits(ctx, query, plan, f)
	if err != nil {
		return nil, err
	}
	if hits == nil {
		return []sessiondb.SearchHit{}, nil
	}
	s.addContext(ctx, hits)
	return hits, nil
}

// findHits finds the page of hits plan asks for, without their context.
func (s *Store) findHits(ctx context.Context, query string, plan sessiondb.SearchPlan, f sessiondb.SearchFilter) ([]sessiondb.SearchHit, error) {
	q, cjk, limit, offset := plan.Query, plan.CJK, plan.Limit, plan.Offset
	if cjk && s.si.hasTrigramOfHermes() {
		// A newer Hermes' file: CJK text is searched as Hermes searches
		// it, ranked in its trigram index, else by substring.
		hits, err := s.hermesCJKSearch(ctx, q, f, limit, offset)
		if err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
		return hits, nil
	}
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
			hits, err = s.ftsSearchIn(ctx, readers{s}, trigramTable, m, f, limit, offset, 0)
		} else {
			hits, err = s.likeSearch(ctx, q, f, limit, offset)
		}
		if err != nil {
			return nil, s.readErr(err, "search %q", query)
		}
	}
	return hits, nil
}

// hermesTrigram is the trigram index a newer Hermes keeps beside
// messages_fts (v10 on), indexing content, tool name and tool calls.
const hermesTrigram = "messages_fts_trigram"

// hermesCJKSearch searches a CJK query on a newer Hermes' file as its
// search_messages does: through its trigram index when every CJK term has
// three code points or more (sessiondb.HermesTrigramQuery), ranked or in
// f's order, and what the index finds is the answer, none included; by
// substring otherwise, or when the index cannot read the query.
func (s *Store) hermesCJKSearch(ctx context.Context, q string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	if m, ok := sessiondb.HermesTrigramQuery(q); ok {
		hits, err := s.ftsSearchIn(ctx, readers{s}, hermesTrigram, m, f, limit, offset, 0)
		if err == nil || !sqlitedb.IsQueryError(err) {
			return hits, err
		}
	}
	return s.likeSearch(ctx, q, f, limit, offset)
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
	b.WriteString(s.q.searchable)
	return b.String(), args
}

const hitColumns = "m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, s.started_at"

// scanHit reads a hit row: the id, the snippet's source (a finished
// snippet, or the text it is computed from) into snip, then hitColumns.
func scanHit(sc scanner, h *sessiondb.SearchHit, snip *[]byte) error {
	var sid, role, source sql.NullString
	var tool, model sql.NullString
	var ts, started sql.NullFloat64
	if err := sc.Scan(&h.ID, snip, &sid, &role, &ts, &tool, &source, &model, &started); err != nil {
		return err
	}
	h.SessionID, h.Role, h.Source = sid.String, role.String, source.String
	h.Timestamp, h.SessionStarted = ts.Float64, started.Float64
	h.ToolName, h.Model = strPtr(tool), strPtr(model)
	h.Context = []sessiondb.ContextRow{}
	return nil
}

// queryHits runs query through q and reads every row with scanHit; the
// snippet of each is snippet applied to what the query returned for it.
func queryHits(ctx context.Context, q sqlitedb.Querier, snippet func([]byte) string, query string, args ...any) ([]sessiondb.SearchHit, error) {
	var hits []sessiondb.SearchHit
	var raw []byte
	err := sqlitedb.Each(ctx, q, query, args, func(r sqlitedb.Row) error {
		var h sessiondb.SearchHit
		if err := scanHit(r, &h, &raw); err != nil {
			return err
		}
		h.Snippet = snippet(raw)
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// asText is the snippet of a query that computes it in SQL.
func asText(raw []byte) string { return string(raw) }

// snippetText is the SQL expression giving the text a snippet of a row of
// the FTS5 table is computed from: the first fts.SnippetWindow+1 bytes of the
// indexed column as FTS5 reads it (the table's own copy for an inline
// table, the content table's for an external one), as a blob so that no
// NUL cuts it short.
//
// The recent index keeps no text: its rows' text is read from messages.
func (s *Store) snippetText(table string) string {
	if table == recentTable {
		return "(SELECT substr(CAST(sm.content AS BLOB), 1, " + strconv.Itoa(fts.SnippetWindow+1) + ") FROM messages sm WHERE sm.id = " + table + ".rowid)"
	}
	col := "content"
	if table == "messages_fts" && s.si.ftsColumn != "" {
		col = s.si.ftsColumn
	}
	return "substr(CAST(" + table + "." + quoteIdent(col) + " AS BLOB), 1, " + strconv.Itoa(fts.SnippetWindow+1) + ")"
}

// snippetFor returns the function that makes a hit's snippet from the text
// snippetText read, for a row of table that matched match: what FTS5's
// snippet(table, 0, '>>>', '<<<', '...', 40) gives (spec 6.1), computed
// from at most fts.SnippetWindow bytes.
func (s *Store) snippetFor(table, match string) func([]byte) string {
	o := fts.Snippet{Open: ">>>", Close: "<<<", Ellipsis: "...", Tokens: 40, Tokenizer: fts.Unicode61}
	if table == trigramTable || table == hermesTrigram || table == "messages_fts" && ftsTokenizer(s.si.ftsSQL) == fts.Trigram {
		o.Tokenizer = fts.Trigram
	}
	return o.Bounded(match)
}

// ftsTokenizer reads the tokenizer from an FTS5 table's CREATE statement.
// Hermes' tables use unicode61 or trigram with their default options;
// anything else (porter, custom options) is approximated by unicode61,
// which may mark fewer matches in a snippet but never fails.
func ftsTokenizer(create string) fts.Tokenizer {
	l := strings.ToLower(create)
	if i := strings.Index(l, "tokenize"); i >= 0 && strings.Contains(l[i:], "trigram") {
		return fts.Trigram
	}
	return fts.Unicode61
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// matchesIn is the FROM and WHERE of the rows of the FTS5 table that
// match the first argument and pass filters (searchFilters, on m and s,
// whose arguments follow): the table alone without filters, joined to
// messages and sessions with them.
func matchesIn(table, filters string) string {
	if filters == "" {
		return " FROM " + table + " WHERE " + table + " MATCH ?"
	}
	return " FROM " + table + " JOIN messages m ON m.id = " + table + ".rowid JOIN sessions s ON s.id = m.session_id" +
		" WHERE " + table + " MATCH ?" + filters
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

// ftsSearch ranks with FTS5 and fetches the winners' columns: on a store
// of more than searchWindowMessages messages through the recent index
// when it can (recentSearch), else over messages_fts as Hermes does,
// bounded by windowStart.
//
// The recent index only makes a search faster, so its failure is not the
// search's: the search ranks over messages_fts instead, which reports a
// query it cannot read itself. A damaged index (doctor finds the damage and
// its rebuild drops the index) or any other failure of it is logged.
func (s *Store) ftsSearch(ctx context.Context, match string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	if f.ByTime() {
		// Ordered by time, every match takes part, as in Hermes: the
		// recent index and the window keep the newest ids only.
		return s.ftsSearchIn(ctx, readers{s}, "messages_fts", match, f, limit, offset, 0)
	}
	hits, ok, err := s.recentSearch(ctx, match, f, limit, offset)
	if err != nil && ctx.Err() == nil {
		switch {
		case sqlitedb.IsCorrupt(err):
			s.log.Warn("search: the recent search index is damaged; ranking over the whole index (sessiondb doctor --rebuild-fts makes it again)", "path", s.path, "err", err)
		case !sqlitedb.IsQueryError(err):
			s.log.Warn("search: the recent search index failed; ranking over the whole index", "path", s.path, "err", err)
		}
		ok, err = false, nil
	}
	if ok || err != nil {
		return hits, err
	}
	return s.ftsSearchIn(ctx, readers{s}, "messages_fts", match, f, limit, offset, 0)
}

// ftsSearchIn is ftsSearch over the FTS5 table named table, which indexes
// message content by message id, read through q: one page of its
// matches, ranked; or, when older is not 0, of its matches with ids below
// older, newest first (the matches after the recent index's, see
// recentSearch).
//
// FTS5 consumes ORDER BY rank itself: it scores every match once, sorts
// rowids, and hands rows out in rank order, so SQLite stops after LIMIT
// rows and reads the text for snippets of the winners only. Snippets are
// computed here, not by FTS5's snippet() (see fts.SnippetWindow). Without
// filters the ranking touches the FTS table alone and the message and
// session columns of the winners come from one keyed query; with filters
// the join sits in the same statement, still driven by the FTS cursor in
// rank order.
func (s *Store) ftsSearchIn(ctx context.Context, q sqlitedb.Querier, table, match string, f sessiondb.SearchFilter, limit, offset int, older int64) ([]sessiondb.SearchHit, error) {
	snippet := s.snippetFor(table, match)
	filters, fargs := s.searchFilters(f)
	bound, bargs, order := "", []any{}, table+".rank"
	switch {
	case f.ByTime():
		// Hermes' sort: the message's time, then relevance. The join
		// brings the time; every match is ranked.
		dir := "DESC"
		if f.Sort == sessiondb.SearchOldest {
			dir = "ASC"
		}
		order = "m.timestamp " + dir + ", " + table + ".rank"
		if filters == "" {
			filters = " AND 1"
		}
	case older > 0:
		bound, bargs, order = " AND "+table+".rowid < ?", []any{older}, table+".rowid DESC"
	case table != recentTable:
		window, bounded, err := s.windowStart(ctx, q, table, match, filters, fargs, offset+limit)
		if err != nil {
			return nil, err
		}
		if bounded {
			bound, bargs = " AND "+table+".rowid >= ?", []any{window}
		}
	}
	if filters != "" {
		args := append([]any{match}, fargs...)
		args = append(append(args, bargs...), limit, offset)
		return queryHits(ctx, q, snippet, "SELECT "+table+".rowid, "+s.snippetText(table)+", "+hitColumns+
			matchesIn(table, filters)+bound+" ORDER BY "+order+" LIMIT ? OFFSET ?", args...)
	}

	var hits []sessiondb.SearchHit
	var raw []byte
	err := sqlitedb.Each(ctx, q, "SELECT rowid, "+s.snippetText(table)+matchesIn(table, "")+
		bound+" ORDER BY "+order+" LIMIT ? OFFSET ?", append(append([]any{match}, bargs...), limit, offset), func(r sqlitedb.Row) error {
		var h sessiondb.SearchHit
		if err := r.Scan(&h.ID, &raw); err != nil {
			return err
		}
		h.Snippet = snippet(raw)
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return nil, nil
	}
	details, err := queryHits(ctx, q, asText, "SELECT m.id, NULL, "+hitColumns+
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

// DefaultSearchWindow is how many of a query's newest matches a search
// ranks when Options.SearchWindow is 0, and DefaultSearchWindowMessages
// how many of the newest message ids a search ranks every match among when
// Options.SearchWindowMessages is 0. A store of up to 200,000 messages is
// thus ranked whole, exactly as Hermes v6 ranks it, however common the
// word (the shared benchmark workload holds 108,000; its common-word
// phrases match 39,000). At ten million messages a common word matches
// 0.85 to 2.5 million messages (8 to 25 %), so its window is its matches
// among the newest 200,000 messages, about 17,000 to 50,000 of them; over
// the growth benchmark's queries search p50 fell from 121 to 84 ms there
// against the former window of 50,000 matches (docs/benchmarks.md).
const (
	DefaultSearchWindow         = 10_000
	DefaultSearchWindowMessages = 200_000
)

// DefaultSearchRecentMessages is how many of the newest messages the
// recent index holds when Options.SearchRecentMessages is 0: at ten million
// messages on this project's machine, the growth benchmark's searches took
// p95 26 to 50 ms ranked among the newest 200,000 (three runs), 22 to 24 ms
// among the newest 100,000 (four runs; docs/benchmarks.md).
const DefaultSearchRecentMessages = 100_000

// windowStart bounds a search's ranking to the store's newest matches.
// FTS5 scores every match of a query to rank it (bm25 reads each one's
// size and positions), so a common word costs time in proportion to the
// store. Walking the matches newest first costs almost nothing, so the
// search ranks the newest max(window, need) of them (need = offset +
// limit), found by that walk, and also every match among the newest
// s.searchWindowMessages message ids. It returns the lowest rowid to rank,
// and false when everything is to be ranked (the store is within the
// messages window, or the query has no more matches than the window),
// exactly as Hermes does. Filters take part in the walk, so the window
// holds that many matches that pass them. (recentSearch does without it
// where the recent index serves.)
func (s *Store) windowStart(ctx context.Context, q sqlitedb.Querier, table, match, filters string, fargs []any, need int) (int64, bool, error) {
	n := s.searchWindow
	if n < 0 {
		return 0, false, nil
	}
	n = max(n, need)
	// Every match from floor on is ranked; 0 when there is no such bound.
	var floor int64
	if s.searchWindowMessages > 0 {
		var newest sql.NullInt64
		if err := sqlitedb.Each(ctx, q, "SELECT max(id) FROM messages", nil, func(r sqlitedb.Row) error { return r.Scan(&newest) }); err != nil {
			return 0, false, err
		}
		floor = newest.Int64 - int64(s.searchWindowMessages) + 1
		if floor <= 1 {
			return 0, false, nil
		}
	}
	var start int64
	found := false
	err := sqlitedb.Each(ctx, q, "SELECT "+table+".rowid"+matchesIn(table, filters)+" ORDER BY "+table+".rowid DESC LIMIT 1 OFFSET ?",
		append(append([]any{match}, fargs...), n-1), func(r sqlitedb.Row) error {
			found = true
			return r.Scan(&start)
		})
	if err != nil || !found {
		return 0, false, err
	}
	if floor > 0 {
		start = min(start, floor)
	}
	return start, true, nil
}

// recentSearch answers a search through the recent index (recent.go) on
// a store of more than searchWindowMessages messages: first the matches
// among the index's messages, ranked by bm25 against its own counts, then,
// once those run out, the older matches, newest first, each page taken
// from this order by offset. The older ones are not ranked: bm25 over
// messages_fts would count the query's every match in the whole store,
// which is the cost the recent index is there to avoid (a phrase of a
// rare word and a common one, with no match among the newest messages,
// took 230 ms ranked at ten million messages and 4 ms newest first). ok is
// false, with no error, when the index cannot answer (a store within the
// window is ranked whole, as Hermes ranks it; a store that may not write
// the file and finds the index behind ranks as before). A store that may
// brings the index up to date first. The window and both rankings are read in one read
// transaction, so a sync by another process between them can neither
// drop nor repeat a match.
func (s *Store) recentSearch(ctx context.Context, match string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, bool, error) {
	window := s.recentWindow()
	if window <= 0 {
		return nil, false, nil
	}
	// Another writer may add a message between our sync and our read;
	// a few tries, then the ranking over messages_fts.
	for range 3 {
		st, err := readRecentState(ctx, readers{s}, window)
		if err != nil || st.newest <= int64(s.searchWindowMessages) {
			return nil, false, err
		}
		if !st.current() {
			if !s.mayKeepRecent() {
				return nil, false, nil
			}
			if err := s.syncRecent(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, false, err
				}
				s.log.Warn("search: could not bring the recent index up to date; ranking over the whole index", "path", s.path, "err", err)
				return nil, false, nil
			}
		}
		hits, ok, err := s.searchRecentSnapshot(ctx, match, f, limit, offset, window)
		if ok || err != nil {
			return hits, ok, err
		}
	}
	return nil, false, nil
}

// searchRecentSnapshot is recentSearch's reading, in one read
// transaction; ok is false when the index is not current in it.
func (s *Store) searchRecentSnapshot(ctx context.Context, match string, f sessiondb.SearchFilter, limit, offset int, window int64) ([]sessiondb.SearchHit, bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback()
	st, err := readRecentState(ctx, tx, window)
	if err != nil || !st.current() {
		return nil, false, err
	}
	hits, err := s.ftsSearchIn(ctx, tx, recentTable, match, f, limit, offset, 0)
	if err != nil || len(hits) == limit {
		return hits, true, err
	}
	// The recent matches ran out on this page: how many there are says
	// where the older ones start.
	seen := int64(offset + len(hits))
	if len(hits) == 0 && offset > 0 {
		filters, fargs := s.searchFilters(f)
		if err := sqlitedb.Each(ctx, tx, "SELECT count(*)"+matchesIn(recentTable, filters), append([]any{match}, fargs...), func(r sqlitedb.Row) error {
			return r.Scan(&seen)
		}); err != nil {
			return nil, true, err
		}
	}
	older, err := s.ftsSearchIn(ctx, tx, "messages_fts", match, f, limit-len(hits), max(0, offset-int(seen)), st.low)
	if err != nil {
		return nil, true, err
	}
	return append(hits, older...), true, nil
}

// RecentIndexBehind reports how many messages the recent index must add
// or delete before a search can use it (see sessiondb.SQLiteMaintainer):
// 0 when it is current or this store keeps none.
func (s *Store) RecentIndexBehind(ctx context.Context) (int64, error) {
	window := s.recentWindow()
	if window <= 0 || !s.mayKeepRecent() {
		return 0, nil
	}
	st, err := readRecentState(ctx, readers{s}, window)
	if err != nil {
		return 0, s.readErr(err, "read the recent search index's window")
	}
	if st.newest <= int64(s.searchWindowMessages) || st.current() {
		return 0, nil
	}
	if !st.exists || st.newest-st.high > window {
		return window, nil // made again from the top
	}
	// What is added above and below, and deleted below the window; a
	// change log to purge owes at least one.
	target := st.target()
	return max(1, st.newest-st.high+max(0, st.low-target)+max(0, target-st.low)), nil
}

// SyncRecentIndex brings the recent index up to date when it is behind
// (see sessiondb.SQLiteMaintainer).
func (s *Store) SyncRecentIndex(ctx context.Context) error {
	n, err := s.RecentIndexBehind(ctx)
	if err != nil || n == 0 {
		return err
	}
	return s.syncRecent(ctx)
}

// recentWindow is how many of the newest message ids the recent index
// holds: Options.SearchRecentMessages, at most the messages window; 0
// when this store keeps no recent index.
func (s *Store) recentWindow() int64 {
	if !s.recentOK || s.searchWindowMessages <= 0 || s.searchRecentMessages <= 0 {
		return 0
	}
	return int64(min(s.searchRecentMessages, s.searchWindowMessages))
}

// mayKeepRecent reports whether this store may bring the recent index up
// to date: a writable store, or a read-only one with KeepSearchIndex
// where this process may write the file.
func (s *Store) mayKeepRecent() bool {
	return s.w != nil || s.keepRecent && sqlitedb.MayWrite(s.path)
}

// recentWriter returns the writer that keeps the recent index: the
// store's own, or, for a read-only store with KeepSearchIndex, one opened
// for this sync alone, which done closes.
func (s *Store) recentWriter(ctx context.Context) (w *sqlitedb.Writer, done func(), err error) {
	if s.w != nil {
		return s.w, func() {}, nil
	}
	db, err := s.openWriterDB()
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	w = sqlitedb.NewWriter(conn)
	w.Budget, w.Now = s.budget, s.now
	return w, func() { w.Close(); db.Close() }, nil
}

// syncRecent brings the recent index up to date, one recentStep a write
// transaction, until it is current or ctx ends. Each step commits, so an
// interrupted sync keeps what it did.
func (s *Store) syncRecent(ctx context.Context) error {
	const what = "bring the recent search index up to date"
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	w, done, err := s.recentWriter(ctx)
	if err != nil {
		return sqlitedb.Wrap(err, "%s: open a writer on %s", what, s.path)
	}
	defer done()
	window := s.recentWindow()
	for {
		if err := ctx.Err(); err != nil {
			return sqlitedb.Wrap(err, what)
		}
		finished := false
		err := w.Do(ctx, func(tx *sqlitedb.Tx) error {
			var err error
			finished, err = recentStep(tx, window, s.recentBatch)
			return err
		})
		if err != nil {
			return s.writeErr(err, what)
		}
		if finished {
			return nil
		}
	}
}

// likeSearch is the substring fallback: every term must occur (escaped
// LIKE, IMP-6), newest first; the snippet is 120 code points around the
// first term's first exact occurrence (the start when the match was only
// case-insensitive), its terms marked and its cuts shown (fts.Snippet.Like).
func (s *Store) likeSearch(ctx context.Context, q string, f sessiondb.SearchFilter, limit, offset int) ([]sessiondb.SearchHit, error) {
	terms := fts.LikeTerms(q)
	if len(terms) == 0 {
		return nil, nil
	}
	filters, fargs := s.searchFilters(f)
	var b strings.Builder
	args := []any{terms[0], terms[0]}
	lead, span := strconv.Itoa(fts.LikeLead), strconv.Itoa(fts.LikeSpan+1)
	b.WriteString("SELECT m.id, (instr(m.content, ?) > " + lead + "+1) || substr(m.content, max(1, instr(m.content, ?) - " + lead + "), " + span + "), " + hitColumns +
		" FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.content IS NOT NULL")
	for _, t := range terms {
		b.WriteString(` AND m.content LIKE ? ESCAPE '\'`)
		args = append(args, "%"+fts.EscapeLike(t)+"%")
	}
	b.WriteString(filters)
	args = append(args, fargs...)
	b.WriteString(" ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?")
	args = append(args, limit, offset)
	snippet := fts.Snippet{Open: ">>>", Close: "<<<", Ellipsis: "..."}.Like(terms)
	return queryHits(ctx, readers{s}, snippet, b.String(), args...)
}

// addContext fills each hit's context, the previous message, the hit and
// the next one of the same session in id order (IMP-1), hidden rows too,
// as Hermes' neighbours are, each as sessiondb.NeighbourText shows it
// (multimodal content as its text), with one query for all hits, whose
// ORDER BY gives each hit's rows in id order. Only multimodal content is
// read whole; other text is cut to 200 code points in SQL. If that query
// fails the hits keep an empty context, as in Hermes.
func (s *Store) addContext(ctx context.Context, hits []sessiondb.SearchHit) {
	byHit := map[int64][]sessiondb.ContextRow{}
	err := sqlitedb.Each(ctx, readers{s}, `SELECT h.value, m.id, m.role,
    CASE WHEN substr(CAST(m.content AS BLOB), 1, `+strconv.Itoa(len(sessiondb.StructuredPrefix))+`) = CAST(? AS BLOB) THEN m.content
    ELSE COALESCE(substr(m.content, 1, 200), '') END
FROM json_each(?) h
JOIN messages hm ON hm.id = h.value
JOIN messages m ON m.id IN (
    (SELECT max(p.id) FROM messages p WHERE p.session_id = hm.session_id AND p.id < hm.id),
    hm.id,
    (SELECT min(n.id) FROM messages n WHERE n.session_id = hm.session_id AND n.id > hm.id))
ORDER BY h.value, m.id`, []any{sessiondb.StructuredPrefix, idList(hits)}, func(r sqlitedb.Row) error {
		var hit, id int64
		var role, content sql.NullString
		if err := r.Scan(&hit, &id, &role, &content); err != nil {
			return err
		}
		byHit[hit] = append(byHit[hit], sessiondb.ContextRow{Role: role.String, Content: sessiondb.NeighbourText(content.String)})
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
