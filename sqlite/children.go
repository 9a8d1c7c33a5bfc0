package sqlite

import (
	"context"
	"encoding/json"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The kinds of child session a newer Hermes tells apart
// (docs/hermes-versions.md 4.5), as SQL over a session row of alias a:
// a delegate subagent carries model_config's _delegate_from; a /branch
// carries _branched_from, or (before the marker) its parent ended
// "branched" before it started; a compression continuation is any other
// child of a parent ended "compression" that is not of source tool.

// configMember is member key of a's model_config, NULL when there is none
// or model_config is not JSON: one bad row never fails a listing, where
// Hermes' json_extract would.
func (s *Store) configMember(a, key string) string { return configMember(s.si, a, key) }

// configMember is Store.configMember for a file whose schema is si.
func configMember(si *schemaInfo, a, key string) string {
	if !si.sessCols["model_config"] {
		return "NULL"
	}
	return "(CASE WHEN json_valid(" + a + ".model_config) THEN json_extract(" + a + ".model_config, '$." + key + "') END)"
}

// delegate is true for a delegate subagent (orphaned ones too).
func (s *Store) delegate(a string) string {
	return s.configMember(a, "_delegate_from") + " IS NOT NULL"
}

// branch is true for a /branch child.
func (s *Store) branch(a string) string {
	return "(" + s.branchMarked(a) + " OR EXISTS (SELECT 1 FROM sessions bp WHERE bp.id = " + a +
		".parent_session_id AND bp.end_reason = 'branched' AND " + a + ".started_at >= bp.ended_at))"
}

// continuation is true for a child c of a compression-ended parent that
// carries the conversation on: not a branch, not a delegate, not of
// source tool (Hermes' get_compression_tip).
func (s *Store) continuation(c string) string { return continuationSQL(s.si, c) }

// continuationSQL is Store.continuation for a file whose schema is si.
func continuationSQL(si *schemaInfo, c string) string {
	return configMember(si, c, "_branched_from") + " IS NULL AND " + configMember(si, c, "_delegate_from") + " IS NULL AND COALESCE(" + c + ".source, '') <> 'tool'"
}

// branchMarked is true for a child of alias a that carries the /branch
// marker.
func (s *Store) branchMarked(a string) string {
	return s.configMember(a, "_branched_from") + " IS NOT NULL"
}

// branchMarkedHint, branchedParentHint and rootDelegateHint are the
// conditions of the partial indexes sessiondb_sessions_branch_marked,
// sessiondb_sessions_branched and sessiondb_sessions_root_delegates, written in a query as they are in the
// index so SQLite reads the index: every row the exact test
// (branchMarked, the parent's end_reason) keeps is in them. instr, not
// json_extract: an index expression is evaluated on every write to the
// table, Hermes' own too, and instr cannot fail on a model_config that is
// not JSON. A model_config holding a backslash is in them too: its key may
// be written with JSON escapes ("\u005fbranched_from"), which
// json_extract reads as the marker (SQLite 3.45 and later, so Hermes'
// query too) and the key's plain text does not show.
const (
	branchMarkedHint   = "(instr(s.model_config, '_branched_from') > 0 OR instr(s.model_config, '\\') > 0)"
	branchedParentHint = "bp.end_reason = 'branched'"
	rootDelegateHint   = "rd.parent_session_id IS NULL AND (instr(rd.model_config, '_delegate_from') > 0 OR instr(rd.model_config, '\\') > 0)"
)

// compressionTipsSQL walks the compression chains from every id in the
// JSON array ?1 at once, as Hermes' get_compression_tip walks one: from a
// session ended by compression, the next hop is the continuation that
// itself ended by compression, else a live one, else any, the latest
// active first, then the latest started. At most ?2 hops; where a hop
// comes back to a session already walked (a cycle of parents), the walk
// ends before it. It returns each start with its tip.
func (s *Store) compressionTipsSQL() string {
	return s.compressionWalk("SELECT value, value, 0 FROM json_each(?1)", "?2") + ",\n" + chainFirsts + `
SELECT root, cur, max(hops) FROM firsts GROUP BY root`
}

// chainFirsts follows compressionWalk's chain: firsts(root, cur, hops)
// holds each session of a root's chain once, at the hop that first
// reached it, so a chain that cycles counts each session once and its tip
// is the session first reached last (max(hops), whose bare column SQLite
// takes from the same row). Grouping costs less than asking, for every
// row, whether the walk reached it earlier: that built an index on the
// walk each time (a listing page at ten million messages: 0.3 ms of 0.9).
// Not MATERIALIZED: each query reads firsts once, and SQLite then streams
// the grouping into the reader instead of filling a table first (a deep
// listing page at ten million messages, p10 of 3,000: 30 µs less in each
// of six alternations).
const chainFirsts = `firsts(root, cur, hops) AS (
    SELECT root, cur, min(hops) FROM chain WHERE cur IS NOT NULL GROUP BY root, cur)`

// compressionWalk is the recursive table chain(root, cur, hops) of the
// walk of compressionTipsSQL from the rows start selects (root, root, 0),
// at most maxHops hops on: every session of each root's chain, a session
// again where the chain cycles, and a NULL past its end. chainTotals and
// the listings' sort keys sum a chain over it.
func (s *Store) compressionWalk(start, maxHops string) string {
	next := `(SELECT c.id FROM sessions c
        WHERE c.parent_session_id = chain.cur AND ` + s.continuation("c") + `
          AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = chain.cur AND p.end_reason = 'compression')
        ORDER BY CASE WHEN c.end_reason = 'compression' THEN 0 WHEN c.ended_at IS NULL THEN 1 ELSE 2 END,
          ` + lastActiveOf("c.id", "c.started_at") + ` DESC, c.started_at DESC, c.id DESC LIMIT 1)`
	return `WITH RECURSIVE chain(root, cur, hops) AS (
    ` + start + `
    UNION ALL
    SELECT chain.root, ` + next + `, chain.hops + 1
    FROM chain WHERE chain.cur IS NOT NULL AND chain.hops < ` + maxHops + `
)`
}

// compressionTips returns the tip of each id's compression chain (the id
// itself when it has none), in one query.
func (s *Store) compressionTips(ctx context.Context, ids []string) (map[string]string, error) {
	tips := make(map[string]string, len(ids))
	err := sqlitedb.Each(ctx, readers{s}, s.compressionTipsSQL(), []any{jsonStrings(ids), sessiondb.MaxCompressionHops}, func(r sqlitedb.Row) error {
		var root, tip string
		var hops int
		if err := r.Scan(&root, &tip, &hops); err != nil {
			return err
		}
		tips[root] = tip
		return nil
	})
	return tips, err
}

// jsonStrings is ids as a JSON array, for json_each.
func jsonStrings(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// CompressionTip follows compression continuations from id as Hermes'
// get_compression_tip does (see compressionTipsSQL), at most
// sessiondb.MaxCompressionHops hops, and returns the last; id itself
// when there is none.
func (s *Store) CompressionTip(ctx context.Context, id string) (string, error) {
	tips, err := s.compressionTips(ctx, []string{id})
	if err != nil {
		return "", s.readErr(err, "compression tip of %s", id)
	}
	if tip, ok := tips[id]; ok {
		return tip, nil
	}
	return id, nil
}
