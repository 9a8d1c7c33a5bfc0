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

// richScanner reads rows of sessSel and richExtra, then extra, with one
// set of scan destinations for all (see sessionScanner).
type richScanner struct {
	ss   *sessionScanner
	raw  string
	last sql.NullFloat64
}

func (s *Store) newRichScanner(extra ...any) *richScanner {
	r := &richScanner{}
	r.ss = s.q.newSessionScanner(append([]any{&r.raw, &r.last}, extra...)...)
	return r
}

func (r *richScanner) scan(sc scanner) (sessiondb.RichSession, error) {
	x, err := r.ss.scan(sc)
	if err != nil {
		return sessiondb.RichSession{}, err
	}
	return sessiondb.RichSession{Session: x, Preview: sessiondb.Preview(r.raw), LastActive: r.last.Float64}, nil
}

// listFilter is what a listing selects besides the kind of child: the
// filters ListSessionsRich and ListSessions share.
type listFilter struct {
	source, model, userID string
	exclude               []string
	from, before          float64
	text                  string
	archived, onlyArch    bool
	cwd                   string
	minMessages           int64
}

// conds returns the conditions of f over alias s, keyed being the alias
// whose source column an index orders (s, or the last-activity table a).
// A filter on a column the file lacks keeps nothing.
func (s *Store) conds(keyed string, f listFilter) ([]string, []any) {
	var where []string
	var args []any
	col := func(name string) string {
		if s.si.sessCols[name] {
			return "s." + name
		}
		return "NULL"
	}
	switch {
	case f.onlyArch && s.q.archived == "":
		where = append(where, "0")
	case f.onlyArch:
		where = append(where, s.q.archived)
	case !f.archived && s.q.archived != "":
		// Hidden as Hermes' own listing hides them.
		where = append(where, "NOT "+s.q.archived)
	}
	for _, c := range []struct{ col, v string }{{"source", f.source}, {"model", f.model}, {"user_id", f.userID}} {
		if c.v == "" {
			continue
		}
		alias := "s"
		if c.col == "source" {
			alias = keyed
		}
		if !s.si.sessCols[c.col] {
			where = append(where, "0")
			continue
		}
		where = append(where, alias+"."+c.col+" = ?")
		args = append(args, c.v)
	}
	if len(f.exclude) > 0 {
		where = append(where, "s.source NOT IN ("+placeholders(len(f.exclude))+")")
		for _, x := range f.exclude {
			args = append(args, x)
		}
	}
	if f.from != 0 {
		where = append(where, "s.started_at >= ?")
		args = append(args, f.from)
	}
	if f.before != 0 {
		where = append(where, "s.started_at < ?")
		args = append(args, f.before)
	}
	if f.text != "" {
		where = append(where, "(instr(lower("+col("title")+"), lower(?)) > 0 OR instr(s.id, ?) > 0)")
		args = append(args, f.text, f.text)
	}
	if f.cwd != "" {
		exact, pre := sessiondb.CwdFilter(f.cwd)
		cwd := col("cwd")
		where = append(where, "("+cwd+" = ? OR substr("+cwd+", 1, length(?)) = ? OR substr("+cwd+", 1, length(?)) = ?)")
		args = append(args, exact, pre[0], pre[0], pre[1], pre[1])
	}
	if f.minMessages > 0 {
		where = append(where, "COALESCE(s.message_count, 0) >= ?")
		args = append(args, f.minMessages)
	}
	return where, args
}

// listArm is one part of a listing's page (listPage): the rows of from
// that where admits, with their sort key k and tie-breaker t.
type listArm struct {
	from, id, k, t string
	where          []string
	args           []any
}

// listPage is the SQL of a listing's page, as rowids with sort keys:
// the union of the arms' rows, each arm cut by the cursor and to n rows
// in the page's order (so an index gives each arm in order), then the
// union ordered and cut to n, after offset. order orders the page's
// columns rid, id, k and t.
func listPage(arms []listArm, order, cursor string, cursorArgs []any, n, offset int) (string, []any) {
	var parts []string
	var args []any
	for _, a := range arms {
		inner := "SELECT s.rowid AS rid, " + a.id + " AS id, " + a.k + " AS k, " + a.t + " AS t FROM " + a.from
		if len(a.where) > 0 {
			inner += " WHERE " + strings.Join(a.where, " AND ")
		}
		part := "SELECT rid, id, k, t FROM (" + inner + ")"
		args = append(args, a.args...)
		if cursor != "" {
			part += " WHERE " + cursor
			args = append(args, cursorArgs...)
		}
		if len(arms) == 1 {
			return part + " ORDER BY " + order + " LIMIT ? OFFSET ?", append(args, n, offset)
		}
		parts = append(parts, "SELECT * FROM ("+part+" ORDER BY "+order+" LIMIT ?)")
		args = append(args, n+offset)
	}
	return strings.Join(parts, " UNION ALL ") + " ORDER BY " + order + " LIMIT ? OFFSET ?", append(args, n, offset)
}

// listArms splits a listing into arms an index can serve in order. With
// children, one arm of every session; else, as Hermes lists
// (ListableSession), never a delegate subagent, and: the roots (a seek of
// the roots' index), the /branch children that carry the marker (the
// partial index sessiondb_sessions_branch_marked holds them alone) and the
// children of a parent ended "branched" that started after it ended (the
// partial index sessiondb_sessions_branched holds those parents). Each
// arm reads only what it lists, so a file with many children of other
// kinds (compression continuations, delegates) lists as fast as one
// without. parent is the alias whose parent column an index orders.
// childWhere and childArgs are base's conditions over alias s alone, for
// the branch arms, which read sessions only; childKey is their sort key.
func (s *Store) listArms(ctx context.Context, base listArm, childWhere []string, childArgs []any, parent string, children bool, childKey string) ([]listArm, error) {
	if children {
		return []listArm{base}, nil
	}
	notDelegate := "NOT (" + s.delegate("s") + ")"
	if !s.si.current["sessiondb_sessions_branch_marked"] || !s.si.current["sessiondb_sessions_branched"] || !s.si.current["sessiondb_sessions_root_delegates"] {
		// A file without our indexes as they are now (a newer Hermes'
		// file, or one opened read-only) is read as Hermes reads it: one walk in
		// the listing's order that stops at the page's end.
		one := base
		one.where = append(append([]string(nil), base.where...), notDelegate)
		if s.si.sessCols["parent_session_id"] {
			one.where = append(one.where, "("+parent+".parent_session_id IS NULL OR "+s.branch("s")+")")
		}
		return []listArm{one}, nil
	}
	// Most files hold no branch and no orphaned delegate: three probes
	// of the partial indexes say so, and the page is then the roots'
	// index alone, as fast as a listing that knew no kinds.
	var branches, legacy, rootDelegates bool
	err := sqlitedb.Each(ctx, readers{s}, "SELECT EXISTS (SELECT 1 FROM sessions s INDEXED BY sessiondb_sessions_branch_marked WHERE s.parent_session_id IS NOT NULL AND "+branchMarkedHint+
		"), EXISTS (SELECT 1 FROM sessions bp INDEXED BY sessiondb_sessions_branched WHERE "+branchedParentHint+
		"), EXISTS (SELECT 1 FROM sessions rd INDEXED BY sessiondb_sessions_root_delegates WHERE "+rootDelegateHint+")", nil,
		func(r sqlitedb.Row) error { return r.Scan(&branches, &legacy, &rootDelegates) })
	if err != nil {
		return nil, err
	}
	roots := base
	roots.where = append(append([]string(nil), base.where...), parent+".parent_session_id IS NULL")
	if rootDelegates {
		// Found in their partial index, so the roots' index still
		// answers the arm without reading a row.
		roots.where = append(roots.where, "s.id NOT IN (SELECT rd.id FROM sessions rd INDEXED BY sessiondb_sessions_root_delegates WHERE "+
			rootDelegateHint+" AND "+s.delegate("rd")+")")
	}
	arms := []listArm{roots}
	child := func(extra ...string) listArm {
		return listArm{from: "sessions s", id: "s.id", k: childKey, t: base.t,
			where: append(append(append([]string(nil), childWhere...), notDelegate), extra...), args: append([]any(nil), childArgs...)}
	}
	marked := s.branchMarked("s")
	if branches {
		a := child("s.parent_session_id IS NOT NULL", branchMarkedHint, marked)
		// Named: ordered by started_at, SQLite would rather walk
		// idx_sessions_started, every session, to save the sort of the
		// few branches.
		a.from = "sessions s INDEXED BY sessiondb_sessions_branch_marked"
		arms = append(arms, a)
	}
	if legacy {
		arms = append(arms, child("s.parent_session_id IN (SELECT bp.id FROM sessions bp INDEXED BY sessiondb_sessions_branched WHERE "+branchedParentHint+")",
			"s.started_at >= (SELECT bp.ended_at FROM sessions bp WHERE bp.id = s.parent_session_id)", "NOT ("+marked+")"))
	}
	return arms, nil
}

// ListSessionsRich lists sessions as Hermes' list_sessions_rich does, with
// their preview and last activity (spec 5.2), newest first. Without
// IncludeChildren the sessions Hermes lists are listed (roots and /branch
// children, never a delegate subagent), and a root that ended in
// compression shows its chain's tip (unless NoProjection), keeping its own
// started_at.
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	limit, offset := sessiondb.PageSize(f.Limit), f.Offset
	where, args := s.conds("s", listFilter{source: f.Source, exclude: f.ExcludeSources, archived: f.IncludeArchived, onlyArch: f.ArchivedOnly,
		cwd: f.Cwd, minMessages: f.MinMessages})
	// The page is cut first, on rowids and keys alone, so the sort handles
	// no row bodies (system prompts can be large) and preview and last
	// activity are computed for its rows only. Ties in started_at keep the
	// order of the started_at index (rowid); by last activity, Hermes'
	// ties: started_at, then id, newest first.
	base := listArm{from: "sessions s", id: "s.id", k: "s.started_at", t: "0", where: where, args: args}
	order := "k DESC, rid"
	arms, err := s.listArms(ctx, base, where, args, "s", f.IncludeChildren, base.k)
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	page, pargs := listPage(arms, order, "", nil, limit, offset)
	q := "SELECT " + s.q.sessSel + s.richExtra() + " FROM (" + page + ") p JOIN sessions s ON s.rowid = p.rid ORDER BY " +
		strings.NewReplacer("k ", "p.k ", "t ", "p.t ", "id ", "s.id ", "rid", "p.rid").Replace(order+" ")
	rs := s.newRichScanner()
	out, err := sqlitedb.Append(ctx, readers{s}, q, pargs, []sessiondb.RichSession{}, func(row sqlitedb.Row) (sessiondb.RichSession, error) {
		return rs.scan(row)
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
	tips, totals, err := s.chainTipsAndTotals(ctx, roots)
	if err != nil {
		return nil, err
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
	rs := s.newRichScanner()
	rows, err := sqlitedb.Append(ctx, readers{s}, "SELECT "+s.q.sessSel+s.richExtra()+" FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
		[]any{jsonStrings(ids)}, nil, func(row sqlitedb.Row) (sessiondb.RichSession, error) { return rs.scan(row) })
	if err != nil {
		return nil, s.readErr(err, "list sessions: tips")
	}
	byID := make(map[string]*sessiondb.RichSession, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
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

// chainTipsAndTotals walks each root's compression chain once
// (compressionTipsSQL's walk) and returns its tip and its totals
// (sessiondb.RichSession's Chain), in one query.
func (s *Store) chainTipsAndTotals(ctx context.Context, roots []string) (map[string]string, map[string]sessiondb.UsageRow, error) {
	// The tip is the bare column of the group's one max() (SQLite takes
	// it from the row holding the maximum), here in HAVING so the row
	// keeps the usage columns' shape. CROSS JOIN keeps the walk outside:
	// the planner otherwise put the sessions table there, 0.17 ms against
	// 0.04 for a page's chains at ten million messages.
	q := s.compressionWalk("SELECT value, value, 0 FROM json_each(?1)", "?2") + ",\n" + chainFirsts + `
SELECT chain.root, chain.cur, ` + sessiondb.UsageSums(s.usageSQL()) + `
FROM firsts chain CROSS JOIN sessions s ON s.id = chain.cur GROUP BY chain.root HAVING max(chain.hops) >= 0`
	rows, err := s.usageRows(ctx, "list sessions: compression chains", q, []any{jsonStrings(roots), sessiondb.MaxCompressionHops})
	if err != nil {
		return nil, nil, err
	}
	tips, totals := make(map[string]string, len(rows)), make(map[string]sessiondb.UsageRow, len(rows))
	for _, r := range rows {
		tips[r.Key], r.Title = r.Title, ""
		totals[r.Key] = r
	}
	return tips, totals, nil
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
		return chainLastActive(s.si, "s")
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
		s.compressionWalk("SELECT s.id, s.id, 0", strconv.Itoa(sessiondb.MaxCompressionHops)) +
		" SELECT SUM(" + each("x") + ") FROM (SELECT DISTINCT cur FROM chain WHERE cur IS NOT NULL) d JOIN sessions x ON x.id = d.cur) ELSE " + each("s") + " END"
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
	byActivity := q.SortOrDefault() == sessiondb.SortLastActive
	base := listArm{from: "sessions s", id: "s.id", k: s.sortKey(q), t: "0"}
	keyed := "s"
	if byActivity && s.q.lastActive {
		// The table is caught up first (appends do not write it); a
		// read-only store that cannot catch it up computes the key.
		current, err := s.syncLastActive(ctx)
		if err != nil {
			return nil, err
		}
		if current {
			base.from, base.k, base.id, keyed = lastActiveTable+" a CROSS JOIN sessions s ON s.id = a.session_id", "a.last_active", "a.session_id", "a"
		}
	}
	filter := listFilter{source: q.Source, model: q.Model, userID: q.UserID, from: q.StartedFrom, before: q.StartedBefore,
		text: q.Text, archived: q.IncludeArchived, onlyArch: q.ArchivedOnly, cwd: q.Cwd, minMessages: q.MinMessages}
	base.where, base.args = s.conds(keyed, filter)
	children := q.IncludeChildren
	if q.ParentID != "" {
		base.where = append(base.where, keyed+".parent_session_id = ?")
		base.args = append(base.args, q.ParentID)
		children = true
	}
	dir, cmp := "DESC", "<"
	if q.Ascending {
		dir, cmp = "ASC", ">"
	}
	cursor, cargs := "", []any(nil)
	if cur != nil {
		// A row value: SQLite seeks the (started_at, id) listing indexes
		// to it, where an OR of the two comparisons walks every row before.
		cursor, cargs = "(k, id) "+cmp+" (?, ?)", []any{cur.Key, cur.ID}
	}
	limit := q.PageLimit()
	childWhere, childArgs := s.conds("s", filter)
	arms, err := s.listArms(ctx, base, childWhere, childArgs, keyed, children, s.sortKey(q))
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	page, args := listPage(arms, "k "+dir+", id "+dir, cursor, cargs, limit+1, 0)
	sel := "SELECT " + s.q.sessSel + s.richExtra() + ", p.k FROM (" + page + ") p JOIN sessions s ON s.rowid = p.rid ORDER BY p.k " + dir + ", s.id " + dir
	var rows []sessiondb.RichSession
	var keys []float64
	var key sql.NullFloat64
	rs := s.newRichScanner(&key)
	err = sqlitedb.Each(ctx, readers{s}, sel, args, func(row sqlitedb.Row) error {
		r, err := rs.scan(row)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		keys = append(keys, key.Float64)
		return nil
	})
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	out := q.Page(rows, keys)
	if children {
		return out, nil
	}
	if out.Sessions, err = s.projectTips(ctx, out.Sessions); err != nil {
		return nil, err
	}
	return out, nil
}
