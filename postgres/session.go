package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
)

// CreateSession inserts a session started now, or fills the NULL columns
// of an existing row (IMP-3). An unknown parent is invalid.
func (s *Store) CreateSession(ctx context.Context, n sessiondb.NewSession) (string, error) {
	if err := n.Validate(); err != nil {
		return "", sessiondb.Wrap("", err, "create session %s", n.ID)
	}
	mcText, hasMC, err := sessiondb.ModelConfigJSON(n.ModelConfig)
	if err != nil {
		return "", sessiondb.Wrap("", err, "create session %s", n.ID)
	}
	var mc *string
	if hasMC {
		mc = &mcText
	}
	now := s.epochNow()
	err = s.write(ctx, "create session "+n.ID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id) DO UPDATE SET
    user_id = COALESCE(sessions.user_id, excluded.user_id),
    model = COALESCE(sessions.model, excluded.model),
    model_config = COALESCE(sessions.model_config, excluded.model_config),
    system_prompt = COALESCE(sessions.system_prompt, excluded.system_prompt),
    parent_session_id = COALESCE(sessions.parent_session_id, excluded.parent_session_id)`,
			n.ID, n.Source, nullStr(n.UserID), nullStr(n.Model), mc, nullStr(n.SystemPrompt), nullStr(n.ParentSessionID), now)
		if sqlState(err) == pgForeignKeyViolation {
			return sessiondb.Errorf(sessiondb.EINVALID, "create session %s: parent session %q does not exist", n.ID, n.ParentSessionID)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return n.ID, nil
}

// EnsureSession inserts (id, source, model, now) when the session is
// absent and does nothing otherwise. An empty source is "unknown"; an id
// CheckSessionID refuses is invalid.
func (s *Store) EnsureSession(ctx context.Context, id, source, model string) error {
	if err := sessiondb.CheckSessionID(id); err != nil {
		return sessiondb.Wrap("", err, "ensure session")
	}
	if source == "" {
		source = "unknown"
	}
	now := s.epochNow()
	return s.write(ctx, "ensure session "+id, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO sessions (id, source, model, started_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
			id, source, nullStr(model), now)
		return err
	})
}

// exec runs one statement in its own write transaction.
func (s *Store) exec(ctx context.Context, what, sql string, args ...any) error {
	return s.write(ctx, what, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
}

// EndSession sets ended_at = now and end_reason unless the session already
// ended: the first reason wins. Unknown ids are a no-op; a reason
// sessiondb.CheckEndReason refuses is invalid.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	if err := sessiondb.CheckEndReason(reason); err != nil {
		return sessiondb.Wrap("", err, "end session %s", id)
	}
	return s.exec(ctx, "end session "+id, "UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL", s.epochNow(), reason, id)
}

// ReopenSession clears ended_at and end_reason. Unknown ids are a no-op.
func (s *Store) ReopenSession(ctx context.Context, id string) error {
	return s.exec(ctx, "reopen session "+id, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = $1", id)
}

// UpdateSystemPrompt replaces the session's system prompt. Unknown ids are
// a no-op.
func (s *Store) UpdateSystemPrompt(ctx context.Context, id, prompt string) error {
	return s.exec(ctx, "update system prompt of "+id, "UPDATE sessions SET system_prompt = $1 WHERE id = $2", prompt, id)
}

// UpdateTokenCounts applies u to the session (see sessiondb.TokenUpdate)
// in one statement, so concurrent updates from many processes all count.
// Unknown ids are a silent no-op.
func (s *Store) UpdateTokenCounts(ctx context.Context, id string, u sessiondb.TokenUpdate) error {
	if err := u.Validate(); err != nil {
		return sessiondb.Wrap("", err, "update token counts of %s", id)
	}
	q, args := u.Statement(id, func(n int, cost bool) string {
		if cost {
			return "$" + itoa(n) + "::double precision"
		}
		return "$" + itoa(n)
	})
	return s.exec(ctx, "update token counts of "+id, q, args...)
}

// GetSession returns every v6 column of the session; missing is not_found.
func (s *Store) GetSession(ctx context.Context, id string) (*sessiondb.Session, error) {
	x, err := scanSession(s.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = $1", id))
	if noRows(err) {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
	}
	if err != nil {
		return nil, s.readErr(err, "get session %s", id)
	}
	return x, nil
}

// prefixRange is the condition "col starts with $n" written so a btree
// index with text_pattern_ops serves it even in a generic plan: a byte-wise
// range from the prefix to the prefix followed by the largest code point,
// and the exact LIKE for the edge that range cannot tell.
func prefixRange(col string, n int) string {
	p := "$" + itoa(n)
	return col + " ~>=~ " + p + " AND " + col + " ~<=~ (" + p + " || chr(1114111)) AND " + col + " LIKE " + likeArg(n) + ` ESCAPE '\'`
}

// likeArg is the LIKE pattern "<escaped $n>%" built in SQL.
func likeArg(n int) string {
	return "(replace(replace(replace($" + itoa(n) + `, '\', '\\'), '%', '\%'), '_', '\_') || '%')`
}

// ResolveSessionID returns the session whose id is idOrPrefix, else the
// one session whose id starts with it. None is not_found, two or more
// conflict, "" invalid (IMP-14).
func (s *Store) ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "resolve session id: id or prefix is empty")
	}
	var id string
	err := s.pool.QueryRow(ctx, "SELECT id FROM sessions WHERE id = $1", idOrPrefix).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !noRows(err) {
		return "", s.readErr(err, "resolve session id %q", idOrPrefix)
	}
	ids, err := queryStrings(ctx, s.pool, "SELECT id FROM sessions WHERE "+prefixRange("id", 1)+" ORDER BY started_at DESC, seq LIMIT 2", idOrPrefix)
	if err != nil {
		return "", s.readErr(err, "resolve session id %q", idOrPrefix)
	}
	return sessiondb.PrefixMatch(idOrPrefix, ids)
}

// SearchSessions lists sessions newest first; "" source means all.
func (s *Store) SearchSessions(ctx context.Context, source string, limit, offset int) ([]sessiondb.Session, error) {
	if err := sessiondb.CheckWindow(limit, offset); err != nil {
		return nil, sessiondb.Wrap("", err, "search sessions")
	}
	q := "SELECT " + sessionColumns + " FROM sessions"
	args := []any{}
	if source != "" {
		q += " WHERE source = $3"
		args = append(args, source)
	}
	q += " ORDER BY started_at DESC, seq LIMIT $1 OFFSET $2"
	args = append([]any{sessiondb.PageSize(limit), offset}, args...)
	out, err := appendRows(ctx, s.pool, q, args, []sessiondb.Session{}, func(r pgx.Row) (*sessiondb.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, s.readErr(err, "search sessions")
	}
	return out, nil
}

// SessionCount counts sessions of source ("" means all).
func (s *Store) SessionCount(ctx context.Context, source string) (int64, error) {
	return s.countRows(ctx, "count sessions", "sessions", "source", source)
}

// MessageCount counts the messages of a session ("" means all sessions).
func (s *Store) MessageCount(ctx context.Context, sessionID string) (int64, error) {
	return s.countRows(ctx, "count messages", "messages", "session_id", sessionID)
}

// countRows counts the rows of table, only those whose col is v when v is
// set; what names the count in its error.
func (s *Store) countRows(ctx context.Context, what, table, col, v string) (int64, error) {
	q, args := "SELECT count(*) FROM "+table, []any{}
	if v != "" {
		q, args = q+" WHERE "+col+" = $1", []any{v}
	}
	var n int64
	if err := s.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, s.readErr(err, "%s", what)
	}
	return n, nil
}

// nextContinuationSQL is the next hop of a compression chain from $1, as
// Hermes' get_compression_tip takes it: among the children of a session
// ended by compression that are no branch, delegate or tool session, the
// one that itself ended by compression, else a live one, else any; the
// latest active first, then the latest started.
func nextContinuationSQL() string {
	return `SELECT c.id FROM sessions c
WHERE c.parent_session_id = $1
  AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = $1 AND p.end_reason = 'compression')
  AND ` + continuationSQL("c") + `
ORDER BY CASE WHEN c.end_reason = 'compression' THEN 0 WHEN c.ended_at IS NULL THEN 1 ELSE 2 END,
  ` + lastActiveSQL("c.id", "c.started_at") + ` DESC,
  c.started_at DESC, c.id COLLATE "C" DESC LIMIT 1`
}

// continuationSQL is true for a child c of a compression-ended parent that
// carries the conversation on: no branch, delegate or tool session.
func continuationSQL(c string) string {
	return configMemberSQL(c, "_branched_from") + " IS NULL AND " + configMemberSQL(c, "_delegate_from") + " IS NULL AND COALESCE(" + c + ".source, '') <> 'tool'"
}

// CompressionTip follows compression continuations from id
// (nextContinuationSQL) at most sessiondb.MaxCompressionHops hops and
// returns the last; id itself when there is none. A hop back to a session
// already walked (a cycle of parents) ends the walk.
func (s *Store) CompressionTip(ctx context.Context, id string) (string, error) {
	chain, err := s.compressionChain(ctx, id)
	if err != nil {
		return "", err
	}
	return chain[len(chain)-1], nil
}

// compressionChain is id and the continuations CompressionTip follows, in
// order, each once: id alone when there is none.
func (s *Store) compressionChain(ctx context.Context, id string) ([]string, error) {
	chain := []string{id}
	seen := map[string]bool{id: true}
	for i := 0; i < sessiondb.MaxCompressionHops; i++ {
		var next string
		err := s.pool.QueryRow(ctx, nextContinuationSQL(), chain[len(chain)-1]).Scan(&next)
		if noRows(err) {
			break
		}
		if err != nil {
			return nil, s.readErr(err, "compression tip of %s", id)
		}
		if seen[next] {
			break
		}
		seen[next] = true
		chain = append(chain, next)
	}
	return chain, nil
}

// ClearMessages deletes the session's messages and zeroes its message and
// tool call counters. Unknown ids are a no-op.
func (s *Store) ClearMessages(ctx context.Context, id string) error {
	return s.write(ctx, "clear messages of "+id, func(tx pgx.Tx) error {
		// The row lock first, so an append racing the clear lands wholly
		// before it (and is cleared) or wholly after it (and is counted).
		if _, err := tx.Exec(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR NO KEY UPDATE", id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM messages WHERE session_id = $1", id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = $1", id)
		return err
	})
}

// DeleteSession deletes the session, its delegate subagents (as Hermes'
// delete_session does) and their messages, orphaning their other
// children, in one transaction. It returns the ids it deleted, none when
// there was no such session.
func (s *Store) DeleteSession(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := s.write(ctx, "delete session "+id, func(tx pgx.Tx) error {
		ids = nil
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", id).Scan(&one)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		ids, err = sessiondb.DeleteSessionsWhere(deleteTx{ctx, tx}, "id = $1", []any{id}, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// DelegatesOf returns the delegate subagents DeleteSession(id) deletes
// with id.
func (s *Store) DelegatesOf(ctx context.Context, id string) ([]string, error) {
	links, err := readLinks(ctx, s.pool)
	if err != nil {
		return nil, s.readErr(err, "delegates of %s", id)
	}
	return sessiondb.NonNil(sessiondb.Delegates(links, []string{id})), nil
}

// PruneSessions deletes, in one transaction, the ended sessions (of
// source, unless "") that started more than olderThanDays days ago,
// orphaning their children first (delegates too, as Hermes' prune does),
// and returns how many it deleted.
func (s *Store) PruneSessions(ctx context.Context, olderThanDays float64, source string) (int, error) {
	if err := sessiondb.CheckPruneDays(olderThanDays); err != nil {
		return 0, err
	}
	cond, args := sessiondb.PruneCondition(s.epochNow()-olderThanDays*86400, source, func(n int) string { return "$" + itoa(n) })
	var n int
	err := s.write(ctx, "prune sessions", func(tx pgx.Tx) error {
		ids, err := sessiondb.DeleteSessionsWhere(deleteTx{ctx, tx}, cond, args, false)
		n = len(ids)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Archivable reports that SetSessionArchived works: the schema always has
// the archived column (migration 002).
func (s *Store) Archivable() bool { return true }

// SetSessionArchived archives or unarchives the session's compression
// lineage (sessiondb.ArchiveLineageSQL) and returns how many sessions it
// set.
func (s *Store) SetSessionArchived(ctx context.Context, id string, archived bool) (int64, error) {
	var n int64
	err := s.write(ctx, "archive session "+id, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sessiondb.ArchiveLineageSQL("$1::text", "$2"), id, sessiondb.ArchivedFlag(archived))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// linkQuerier is what readLinks reads through: the pool or a transaction.
type linkQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readLinks reads what the delete cascade needs (sessiondb.LinksSQL).
func readLinks(ctx context.Context, q linkQuerier) ([]sessiondb.SessionLink, error) {
	rows, err := q.Query(ctx, sessiondb.LinksSQL)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessiondb.SessionLink, error) {
		var l sessiondb.SessionLink
		err := r.Scan(&l.ID, &l.ParentID, &l.ModelConfig)
		return l, err
	})
}

// deleteTx is a deletion's view of a write transaction.
type deleteTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (d deleteTx) IDs(q string, args ...any) ([]string, error) {
	rows, err := d.tx.Query(d.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (d deleteTx) Links() ([]sessiondb.SessionLink, error) { return readLinks(d.ctx, d.tx) }

func (d deleteTx) In(ids []string) (string, any) { return "(SELECT unnest($1::text[]))", ids }

func (d deleteTx) Exec(_ sessiondb.DeleteStep, q string, args ...any) (int64, error) {
	tag, err := d.tx.Exec(d.ctx, q, args...)
	return tag.RowsAffected(), err
}

// likeTitleVariants is the pattern of a title's numbered variants,
// "<title> #%", for sessiondb_ascii_lower(title) LIKE.
func likeTitleVariants(title string) string { return fts.EscapeLike(title) + " #%" }

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
