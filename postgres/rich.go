package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// richExtra is the preview source (the first code points of the first
// user message with content, in insertion order) and the last activity,
// appended to the session columns of alias s.
const richExtra = `, COALESCE((SELECT left(m.content, ` + "63" + `) FROM messages m
        WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.id LIMIT 1), ''),
    COALESCE((SELECT max(m."timestamp") FROM messages m WHERE m.session_id = s.id), s.started_at)`

// The kinds of child session, as SQL over the session row of alias a
// (docs/hermes-versions.md): a delegate subagent carries model_config's
// _delegate_from, a /branch _branched_from or (before the marker) a
// parent ended "branched" before it started.
func delegateSQL(a string) string { return configMemberSQL(a, "_delegate_from") + " IS NOT NULL" }

func branchSQL(a string) string {
	return "(" + configMemberSQL(a, "_branched_from") + " IS NOT NULL OR EXISTS (SELECT 1 FROM sessions bp WHERE bp.id = " + a +
		".parent_session_id AND bp.end_reason = 'branched' AND " + a + ".started_at >= bp.ended_at))"
}

// configMemberSQL is member key of a's model_config (NULL when it is not
// JSON), the function called only where the text holds the key or a
// backslash (the key may be written with JSON escapes): a
// listing sorted by cost reads every session, and most hold no marker.
func configMemberSQL(a, key string) string {
	return "(CASE WHEN strpos(" + a + ".model_config, '" + key + "') > 0 OR strpos(" + a + ".model_config, E'\\\\') > 0 THEN sessiondb_config_member(" + a + ".model_config, '" + key + "') END)"
}

// listable keeps the sessions Hermes' listing shows (alias s): roots and
// /branch children, never a delegate subagent.
func listable() string {
	return "(s.parent_session_id IS NULL OR " + branchSQL("s") + ") AND NOT (" + delegateSQL("s") + ")"
}

// listConds are the filters both listings share, over alias s: archived
// sessions hidden (or alone), the working directory (sessiondb.CwdFilter)
// and the least message count. arg adds an argument and returns its
// placeholder.
func listConds(archived, archivedOnly bool, cwd string, minMessages int64, arg func(any) string) []string {
	var where []string
	switch {
	case archivedOnly:
		where = append(where, "s.archived = 1")
	case !archived:
		where = append(where, "s.archived = 0")
	}
	if cwd != "" {
		exact, pre := sessiondb.CwdFilter(cwd)
		where = append(where, "(s.cwd = "+arg(exact)+" OR left(s.cwd, length("+arg(pre[0])+")) = "+arg(pre[0])+
			" OR left(s.cwd, length("+arg(pre[1])+")) = "+arg(pre[1])+")")
	}
	if minMessages > 0 {
		where = append(where, "COALESCE(s.message_count, 0) >= "+arg(minMessages))
	}
	return where
}

func scanRich(r pgx.Row) (*sessiondb.RichSession, error) {
	var raw string
	var last float64
	x, err := scanSession(r, &raw, &last)
	if err != nil {
		return nil, err
	}
	return &sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last}, nil
}

// ListSessionsRich lists sessions newest first with their preview and last
// activity (spec 5.2), projecting compression chains onto their roots.
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	var where []string
	args := []any{sessiondb.PageSize(f.Limit), f.Offset}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !f.IncludeChildren {
		where = append(where, listable())
	}
	if f.Source != "" {
		where = append(where, "s.source = "+arg(f.Source))
	}
	if len(f.ExcludeSources) > 0 {
		where = append(where, "s.source <> ALL("+arg(f.ExcludeSources)+")")
	}
	where = append(where, listConds(f.IncludeArchived, f.ArchivedOnly, f.Cwd, f.MinMessages, arg)...)
	// The page is cut first, on the listing index alone, so previews and
	// last activity are computed for its rows only.
	page := "SELECT s.id, s.started_at, s.seq FROM sessions s"
	if len(where) > 0 {
		page += " WHERE " + strings.Join(where, " AND ")
	}
	page += " ORDER BY started_at DESC, seq LIMIT $1 OFFSET $2"
	q := "SELECT " + sessionColumnsOf("s") + richExtra + " FROM (" + page + ") p JOIN sessions s ON s.id = p.id ORDER BY p.started_at DESC, p.seq"
	out, err := appendRows(ctx, s.pool, q, args, []sessiondb.RichSession{}, scanRich)
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	if f.NoProjection || f.IncludeChildren {
		return out, nil
	}
	return s.projectTips(ctx, out)
}

// projectTips shows, on each root row that ended in compression, its
// chain's tip, with LineageRootID naming the root (ListSessionsRich's
// projection).
func (s *Store) projectTips(ctx context.Context, out []sessiondb.RichSession) ([]sessiondb.RichSession, error) {
	for i := range out {
		r := &out[i]
		if r.EndReason == nil || *r.EndReason != "compression" {
			continue
		}
		chain, err := s.compressionChain(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if len(chain) == 1 {
			continue
		}
		tip := chain[len(chain)-1]
		t, err := scanRich(s.pool.QueryRow(ctx, "SELECT "+sessionColumnsOf("s")+richExtra+" FROM sessions s WHERE s.id = $1", tip))
		if noRows(err) {
			continue
		}
		if err != nil {
			return nil, s.readErr(err, "list sessions: tip of %s", r.ID)
		}
		totals, err := s.usageRows(ctx, "list sessions: chain totals", "SELECT $1::text, '', "+sessiondb.UsageSums(usageSQL)+
			" FROM sessions s WHERE s.id = ANY($2)", []any{r.ID, chain})
		if err != nil {
			return nil, err
		}
		r.ShowTip(t)
		r.Chain = &totals[0]
	}
	return out, nil
}

// lastActiveSQL is the last activity of the session whose id is the SQL
// expression id: its newest message's timestamp, else startedAt.
func lastActiveSQL(id, startedAt string) string {
	return `COALESCE((SELECT max(m."timestamp") FROM messages m WHERE m.session_id = ` + id + `), ` + startedAt + `)`
}

// chainLastActiveSQL is the key by last activity (sessiondb.SortLastActive)
// of the session of alias a: its own last activity, or, for a session
// ended by compression, the newest over its chain, every continuation on
// from it (continuationSQL), as Hermes' order_by_last_active walks (its effective_last_active). UNION stops at
// a cycle of parents.
func chainLastActiveSQL(a string) string {
	return `CASE WHEN ` + a + `.end_reason = 'compression' THEN (WITH RECURSIVE down(id) AS (SELECT ` + a + `.id
    UNION SELECT child.id FROM down JOIN sessions parent ON parent.id = down.id JOIN sessions child ON child.parent_session_id = down.id
    WHERE parent.end_reason = 'compression' AND ` + continuationSQL("child") + `)
  SELECT max(` + lastActiveSQL("down.id", "(SELECT ds.started_at FROM sessions ds WHERE ds.id = down.id)") + `) FROM down)
  ELSE ` + lastActiveSQL(a+".id", a+".started_at") + ` END`
}

// sortKey is the SQL expression of a listing's sort key, alias s. Where q
// shows a compression chain as one row (sessiondb.RichSession's Chain),
// its cost and tokens are the chain's totals, which the row shows.
func sortKey(q sessiondb.SessionQuery) string {
	var each func(a string) string
	switch q.SortOrDefault() {
	case sessiondb.SortLastActive:
		return chainLastActiveSQL("s")
	case sessiondb.SortCost:
		each = usageSQL.SessionCostSQL
	case sessiondb.SortTokens:
		each = func(a string) string { return usageSQL.SessionTokensSQL(a) + "::double precision" }
	default:
		return "s.started_at"
	}
	if q.IncludeChildren || q.ParentID != "" {
		return each("s")
	}
	// The walk of compressionChain (nextContinuationSQL), from s; a chain
	// that cycles walks a session twice, and each counts once.
	next := strings.ReplaceAll(nextContinuationSQL(), "$1", "chain.cur")
	return `CASE WHEN s.end_reason = 'compression' THEN (WITH RECURSIVE chain(cur, hops) AS (
    SELECT s.id, 0
    UNION ALL
    SELECT (` + next + `), chain.hops + 1
    FROM chain WHERE chain.cur IS NOT NULL AND chain.hops < ` + strconv.Itoa(sessiondb.MaxCompressionHops) + `
) SELECT SUM(` + each("x") + `) FROM (SELECT DISTINCT cur FROM chain WHERE cur IS NOT NULL) d JOIN sessions x ON x.id = d.cur) ELSE ` + each("s") + " END"
}

// ListSessions lists one page of the sessions q selects, in q's order, by
// keyset (see sessiondb.SessionQuery). The page is cut on ids and sort
// keys alone; previews and last activity are computed for its rows only.
func (s *Store) ListSessions(ctx context.Context, q sessiondb.SessionQuery) (*sessiondb.SessionPage, error) {
	if err := q.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	cur, _ := q.Cursor()
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch {
	case q.ParentID != "":
		where = append(where, "s.parent_session_id = "+arg(q.ParentID))
	case !q.IncludeChildren:
		where = append(where, listable())
	}
	where = append(where, listConds(q.IncludeArchived, q.ArchivedOnly, q.Cwd, q.MinMessages, arg)...)
	for _, f := range []struct{ col, v string }{{"source", q.Source}, {"model", q.Model}, {"user_id", q.UserID}} {
		if f.v != "" {
			where = append(where, "s."+f.col+" = "+arg(f.v))
		}
	}
	if q.StartedFrom != 0 {
		where = append(where, "s.started_at >= "+arg(q.StartedFrom))
	}
	if q.StartedBefore != 0 {
		where = append(where, "s.started_at < "+arg(q.StartedBefore))
	}
	if q.Text != "" {
		// lower() of ASCII only, as SQLite's: the two backends list alike.
		where = append(where, "(strpos(translate(s.title, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), "+
			"translate("+arg(q.Text)+", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')) > 0 OR strpos(s.id, "+arg(q.Text)+") > 0)")
	}
	dir, cmp := "DESC", "<"
	if q.Ascending {
		dir, cmp = "ASC", ">"
	}
	inner := "SELECT s.id AS id, " + sortKey(q) + " AS k FROM sessions s"
	if len(where) > 0 {
		inner += " WHERE " + strings.Join(where, " AND ")
	}
	page := "SELECT id, k FROM (" + inner + ") i"
	if cur != nil {
		// COLLATE "C": ids compare bytewise, as SQLite compares them.
		page += " WHERE (k " + cmp + " " + arg(cur.Key) + " OR (k = " + arg(cur.Key) + " AND id COLLATE \"C\" " + cmp + " " + arg(cur.ID) + "))"
	}
	limit := q.PageLimit()
	page += " ORDER BY k " + dir + ", id COLLATE \"C\" " + dir + " LIMIT " + arg(limit+1)
	sel := "SELECT " + sessionColumnsOf("s") + richExtra + ", p.k FROM (" + page + ") p JOIN sessions s ON s.id = p.id ORDER BY p.k " + dir + ", s.id COLLATE \"C\" " + dir
	var rows []sessiondb.RichSession
	var keys []float64
	err := each(ctx, s.pool, sel, args, func(r pgx.Rows) error {
		var raw string
		var last, key float64
		x, err := scanSession(r, &raw, &last, &key)
		if err != nil {
			return err
		}
		rows = append(rows, sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last})
		keys = append(keys, key)
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
