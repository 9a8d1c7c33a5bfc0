package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// richExtra is the preview source (first 63 code points of the first user
// message with content, in insertion order, IMP-1) and the last activity
// appended to the session columns. Both read every row, hidden ones too,
// as Hermes' listing does. The session's messages are walked in id
// order so the walk stops at the first user message instead of sorting
// the session's rows: through the (session_id, id) index where the file
// has it, else through the ids the (session_id, timestamp) index lists
// (all of the session's, which a long session makes costly).
func (s *Store) richExtra() string {
	inSession := "m.id IN (SELECT id FROM messages WHERE session_id = s.id)"
	if s.si.indexes["idx_messages_session_id"] {
		inSession = "m.session_id = s.id"
	}
	return `, COALESCE((SELECT substr(m.content, 1, 63) FROM messages m
        WHERE ` + inSession + ` AND m.role = 'user' AND m.content IS NOT NULL
        ORDER BY m.id LIMIT 1), ''), ` + lastActiveOf("s.id", "s.started_at")
}

func (s *Store) scanRich(sc scanner) (*sessiondb.RichSession, error) {
	var raw string
	var last sql.NullFloat64
	x, err := scanSession(sc, &raw, &last)
	if err != nil {
		return nil, err
	}
	return &sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last.Float64}, nil
}

// ListSessionsRich lists sessions newest first with their preview and last
// activity (spec 5.2). Without IncludeChildren only top-level sessions are
// listed, and a root that ended in compression shows its chain's tip
// (unless NoProjection), keeping its own started_at.
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	limit, offset := sessiondb.PageSize(f.Limit), f.Offset
	var where []string
	var args []any
	if !f.IncludeChildren {
		where = append(where, "s.parent_session_id IS NULL")
	}
	if s.q.archived != "" && !f.IncludeArchived {
		// Hidden as Hermes' own listing hides them (_session_filter_where).
		where = append(where, "NOT "+s.q.archived)
	}
	if f.Source != "" {
		where = append(where, "s.source = ?")
		args = append(args, f.Source)
	}
	if len(f.ExcludeSources) > 0 {
		where = append(where, "s.source NOT IN ("+placeholders(len(f.ExcludeSources))+")")
		for _, x := range f.ExcludeSources {
			args = append(args, x)
		}
	}
	// The page is cut first, so preview and last activity are computed for
	// its rows only, not for every session before sorting.
	// The page holds rowids only, so the sort handles no row bodies (system
	// prompts can be large). Ties in started_at keep the order of the
	// started_at index (rowid).
	page := "SELECT s.rowid AS rid FROM sessions s"
	if len(where) > 0 {
		page += " WHERE " + strings.Join(where, " AND ")
	}
	page += " ORDER BY s.started_at DESC, s.rowid LIMIT ? OFFSET ?"
	q := "SELECT " + s.q.sessSel + s.richExtra() + " FROM (" + page + ") p JOIN sessions s ON s.rowid = p.rid ORDER BY s.started_at DESC, s.rowid"
	args = append(args, limit, offset)
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.RichSession{}, func(row sqlitedb.Row) (sessiondb.RichSession, error) {
		r, err := s.scanRich(row)
		if err != nil {
			return sessiondb.RichSession{}, err
		}
		return *r, nil
	})
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	if f.NoProjection || f.IncludeChildren {
		return out, nil
	}
	return s.projectTips(ctx, out)
}

// projectTips shows, on each root row that ended in compression, its
// chain's tip (ListSessionsRich's projection): the tip's id, end, counts,
// title, activity, preview, model and prompt, with LineageRootID naming
// the root whose started_at the row keeps. Two queries serve the whole
// page, however many of its rows are compressed: the chains' walk and the
// tips' rows.
func (s *Store) projectTips(ctx context.Context, out []sessiondb.RichSession) ([]sessiondb.RichSession, error) {
	var roots []string
	for i := range out {
		if r := &out[i]; r.EndReason != nil && *r.EndReason == "compression" {
			roots = append(roots, r.ID)
		}
	}
	if len(roots) == 0 {
		return out, nil
	}
	tips, err := s.compressionTips(ctx, roots)
	if err != nil {
		return nil, s.readErr(err, "list sessions: compression tips")
	}
	var ids []string
	for _, root := range roots {
		if tip := tips[root]; tip != root {
			ids = append(ids, tip)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := sqlitedb.Append(ctx, readers{s}, "SELECT "+s.q.sessSel+s.richExtra()+" FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
		[]any{jsonStrings(ids)}, nil, func(row sqlitedb.Row) (*sessiondb.RichSession, error) { return s.scanRich(row) })
	if err != nil {
		return nil, s.readErr(err, "list sessions: tips")
	}
	byID := make(map[string]*sessiondb.RichSession, len(rows))
	for _, t := range rows {
		byID[t.ID] = t
	}
	totals, err := s.chainTotals(ctx, roots)
	if err != nil {
		return nil, err
	}
	for i := range out {
		r := &out[i]
		t := byID[tips[r.ID]]
		if t == nil || t.ID == r.ID {
			continue
		}
		chain := totals[r.ID]
		r.ShowTip(t)
		r.Chain = &chain
	}
	return out, nil
}

// chainTotals sums each root's compression chain (sessiondb.RichSession's
// Chain), in one query.
func (s *Store) chainTotals(ctx context.Context, roots []string) (map[string]sessiondb.UsageRow, error) {
	q := compressionChainsSQL + "\nSELECT chain.root, '', " + sessiondb.UsageSums(s.usageSQL()) +
		" FROM chain JOIN sessions s ON s.id = chain.cur GROUP BY chain.root"
	rows, err := s.usageRows(ctx, "list sessions: chain totals", q, []any{jsonStrings(roots), sessiondb.MaxCompressionHops})
	if err != nil {
		return nil, err
	}
	out := make(map[string]sessiondb.UsageRow, len(rows))
	for _, r := range rows {
		out[r.Key] = r
	}
	return out, nil
}

// sortKey is the SQL expression of a listing's sort key, alias s, reading
// a column the file lacks as 0. Where q shows a compression chain as one
// row (sessiondb.RichSession's Chain), its cost and tokens are the chain's
// totals, which the row shows.
func (s *Store) sortKey(q sessiondb.SessionQuery) string {
	d := s.usageSQL()
	var each func(a string) string
	switch q.SortOrDefault() {
	case sessiondb.SortLastActive:
		return lastActiveOf("s.id", "s.started_at")
	case sessiondb.SortCost:
		each = d.SessionCostSQL
	case sessiondb.SortTokens:
		each = d.SessionTokensSQL
	default:
		return "s.started_at"
	}
	if q.IncludeChildren || q.ParentID != "" {
		return each("s")
	}
	return "CASE WHEN s.end_reason = 'compression' THEN (" +
		compressionWalk("SELECT s.id, s.id, 0", strconv.Itoa(sessiondb.MaxCompressionHops)) +
		" SELECT SUM(" + each("x") + ") FROM chain JOIN sessions x ON x.id = chain.cur) ELSE " + each("s") + " END"
}

// ListSessions lists one page of the sessions q selects, in q's order, by
// keyset (see sessiondb.SessionQuery). The page is cut on rowids and sort
// keys alone; previews and last activity are computed for its rows only.
func (s *Store) ListSessions(ctx context.Context, q sessiondb.SessionQuery) (*sessiondb.SessionPage, error) {
	if err := q.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	cur, _ := q.Cursor()
	// By last activity the page is cut from sessiondb_last_active (alias a)
	// where the file has it: its indexes hold the key with the columns the
	// listing filters on most (parent, source), so a page is a seek there
	// and a primary-key lookup of each of its sessions.
	from, key, id, keyed := "sessions s", s.sortKey(q), "s.id", "s"
	if q.SortOrDefault() == sessiondb.SortLastActive && s.q.lastActive {
		// The table is caught up first (appends do not write it); a
		// read-only store that cannot catch it up computes the key.
		current, err := s.syncLastActive(ctx)
		if err != nil {
			return nil, err
		}
		if current {
			from, key, id, keyed = lastActiveTable+" a CROSS JOIN sessions s ON s.id = a.session_id", "a.last_active", "a.session_id", "a"
		}
	}
	var where []string
	var args []any
	switch {
	case q.ParentID != "":
		where = append(where, keyed+".parent_session_id = ?")
		args = append(args, q.ParentID)
	case !q.IncludeChildren:
		where = append(where, keyed+".parent_session_id IS NULL")
	}
	if s.q.archived != "" && !q.IncludeArchived {
		where = append(where, "NOT "+s.q.archived)
	}
	for _, f := range []struct{ col, v string }{{"source", q.Source}, {"model", q.Model}, {"user_id", q.UserID}} {
		if f.v == "" {
			continue
		}
		if !s.si.sessCols[f.col] {
			where = append(where, "0")
			continue
		}
		alias := "s"
		if f.col == "source" {
			alias = keyed
		}
		where = append(where, alias+"."+f.col+" = ?")
		args = append(args, f.v)
	}
	if q.StartedFrom != 0 {
		where = append(where, "s.started_at >= ?")
		args = append(args, q.StartedFrom)
	}
	if q.StartedBefore != 0 {
		where = append(where, "s.started_at < ?")
		args = append(args, q.StartedBefore)
	}
	if q.Text != "" {
		title := "NULL"
		if s.si.sessCols["title"] {
			title = "s.title"
		}
		where = append(where, "(instr(lower("+title+"), lower(?)) > 0 OR instr(s.id, ?) > 0)")
		args = append(args, q.Text, q.Text)
	}
	dir, cmp := "DESC", "<"
	if q.Ascending {
		dir, cmp = "ASC", ">"
	}
	inner := "SELECT s.rowid AS rid, " + id + " AS id, " + key + " AS k FROM " + from
	if len(where) > 0 {
		inner += " WHERE " + strings.Join(where, " AND ")
	}
	page := "SELECT rid, k FROM (" + inner + ")"
	if cur != nil {
		// A row value: SQLite seeks the (started_at, id) listing indexes
		// to it, where an OR of the two comparisons walks every row before.
		page += " WHERE (k, id) " + cmp + " (?, ?)"
		args = append(args, cur.Key, cur.ID)
	}
	limit := q.PageLimit()
	page += " ORDER BY k " + dir + ", id " + dir + " LIMIT ?"
	args = append(args, limit+1)
	sel := "SELECT " + s.q.sessSel + s.richExtra() + ", p.k FROM (" + page + ") p JOIN sessions s ON s.rowid = p.rid ORDER BY p.k " + dir + ", s.id " + dir
	var rows []sessiondb.RichSession
	var keys []float64
	err := sqlitedb.Each(ctx, readers{s}, sel, args, func(row sqlitedb.Row) error {
		var raw string
		var last, key sql.NullFloat64
		x, err := scanSession(row, &raw, &last, &key)
		if err != nil {
			return err
		}
		rows = append(rows, sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last.Float64})
		keys = append(keys, key.Float64)
		return nil
	})
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	out := q.Page(rows, keys)
	if q.IncludeChildren || q.ParentID != "" {
		return out, nil
	}
	if out.Sessions, err = s.projectTips(ctx, out.Sessions); err != nil {
		return nil, err
	}
	return out, nil
}
