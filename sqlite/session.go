package sqlite

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// inputErr adds the operation to a refusal of its input, naming the
// session when the input has its id.
func inputErr(err error, op, id string) error {
	if id == "" {
		return sessiondb.Wrap("", err, "%s", op)
	}
	return sessiondb.Wrap("", err, "%s %s", op, id)
}

// CreateSession inserts a session started now, or fills the NULL columns of
// an existing row with the new values (IMP-3): a late, rich create enriches
// a row EnsureSession made and never overwrites. Source and ID are
// required; an unknown parent is invalid.
func (s *Store) CreateSession(ctx context.Context, n sessiondb.NewSession) (string, error) {
	if err := n.Validate(); err != nil {
		return "", inputErr(err, "create session", n.ID)
	}
	mcText, hasMC, err := sessiondb.ModelConfigJSON(n.ModelConfig)
	if err != nil {
		return "", sessiondb.Wrap("", err, "create session %s", n.ID)
	}
	var mc any
	if hasMC {
		mc = mcText
	}
	now := s.epochNow()
	err = s.write(ctx, "create session "+n.ID, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
    user_id = COALESCE(user_id, excluded.user_id),
    model = COALESCE(model, excluded.model),
    model_config = COALESCE(model_config, excluded.model_config),
    system_prompt = COALESCE(system_prompt, excluded.system_prompt),
    parent_session_id = COALESCE(parent_session_id, excluded.parent_session_id)`,
			n.ID, n.Source, nullStr(n.UserID), nullStr(n.Model), mc, nullStr(n.SystemPrompt), nullStr(n.ParentSessionID), now)
		if sqlitedb.IsForeignKey(err) {
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
	return s.write(ctx, "ensure session "+id, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
			id, source, nullStr(model), now)
		return err
	})
}

// EndSession sets ended_at = now and end_reason unless the session already
// ended: the first reason wins. Unknown ids are a no-op; a reason
// sessiondb.CheckEndReason refuses is invalid.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	if err := sessiondb.CheckEndReason(reason); err != nil {
		return inputErr(err, "end session", id)
	}
	now := s.epochNow()
	return s.write(ctx, "end session "+id, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL", now, reason, id)
		return err
	})
}

// ReopenSession clears ended_at and end_reason, so the session can end
// again with another reason. Unknown ids are a no-op.
func (s *Store) ReopenSession(ctx context.Context, id string) error {
	return s.write(ctx, "reopen session "+id, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", id)
		return err
	})
}

// UpdateSystemPrompt replaces the session's system prompt. Unknown ids are
// a no-op.
func (s *Store) UpdateSystemPrompt(ctx context.Context, id, prompt string) error {
	return s.write(ctx, "update system prompt of "+id, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("UPDATE sessions SET system_prompt = ? WHERE id = ?", prompt, id)
		return err
	})
}

func optStr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// UpdateTokenCounts applies u to the session (see sessiondb.TokenUpdate).
// Unknown ids are a silent no-op. NaN or infinite costs are invalid.
func (s *Store) UpdateTokenCounts(ctx context.Context, id string, u sessiondb.TokenUpdate) error {
	if err := u.Validate(); err != nil {
		return sessiondb.Wrap("", err, "update token counts of %s", id)
	}
	q, args := u.Statement(id, func(n int, _ bool) string { return "?" + strconv.Itoa(n) })
	return s.write(ctx, "update token counts of "+id, func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(q, args...)
		return err
	})
}

// GetSession returns every v6 column of the session, model_config as its
// JSON text; a missing session is not_found.
func (s *Store) GetSession(ctx context.Context, id string) (*sessiondb.Session, error) {
	x, err := s.q.scanSession(s.queryRow(ctx, "SELECT "+s.q.sessSel+" FROM sessions s WHERE s.id = ?", id))
	if err == sql.ErrNoRows {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
	}
	if err != nil {
		return nil, s.readErr(err, "get session %s", id)
	}
	return x, nil
}

// ResolveSessionID returns the session whose id is idOrPrefix, else the one
// session whose id starts with it (newest first). No match is not_found,
// two or more conflict, an empty input invalid (IMP-14).
func (s *Store) ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "resolve session id: id or prefix is empty")
	}
	var id string
	err := s.queryRow(ctx, "SELECT id FROM sessions WHERE id = ?", idOrPrefix).Scan(&id)
	if err == nil {
		return id, nil
	}
	if err != sql.ErrNoRows {
		return "", s.readErr(err, "resolve session id %q", idOrPrefix)
	}
	ids, err := s.queryStrings(ctx, `SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\' ORDER BY started_at DESC LIMIT 2`, fts.EscapeLike(idOrPrefix)+"%")
	if err != nil {
		return "", s.readErr(err, "resolve session id %q", idOrPrefix)
	}
	return sessiondb.PrefixMatch(idOrPrefix, ids)
}

// queryStrings returns the first column of every row of q on the readers,
// NULL as "".
func (s *Store) queryStrings(ctx context.Context, q string, args ...any) ([]string, error) {
	return sqlitedb.Append(ctx, readers{s}, q, args, nil, func(r sqlitedb.Row) (string, error) {
		var v sql.NullString
		err := r.Scan(&v)
		return v.String, err
	})
}

// SearchSessions lists sessions newest first; "" source means all. Limit 0
// means 20.
func (s *Store) SearchSessions(ctx context.Context, source string, limit, offset int) ([]sessiondb.Session, error) {
	if err := sessiondb.CheckWindow(limit, offset); err != nil {
		return nil, sessiondb.Wrap("", err, "search sessions")
	}
	limit = sessiondb.PageSize(limit)
	q := "SELECT " + s.q.sessSel + " FROM sessions s"
	args := []any{}
	if source != "" {
		q += " WHERE s.source = ?"
		args = append(args, source)
	}
	q += " ORDER BY s.started_at DESC LIMIT ? OFFSET ?"
	args = append(args, limit, offset)
	ss := s.q.newSessionScanner()
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.Session{}, func(r sqlitedb.Row) (sessiondb.Session, error) {
		return ss.scan(r)
	})
	if err != nil {
		return nil, s.readErr(err, "search sessions")
	}
	return out, nil
}

// SessionCount counts sessions of source ("" means all).
func (s *Store) SessionCount(ctx context.Context, source string) (int64, error) {
	var n int64
	var err error
	if source == "" {
		err = s.queryRow(ctx, "SELECT count(*) FROM sessions").Scan(&n)
	} else {
		err = s.queryRow(ctx, "SELECT count(*) FROM sessions WHERE source = ?", source).Scan(&n)
	}
	if err != nil {
		return 0, s.readErr(err, "count sessions")
	}
	return n, nil
}

// MessageCount counts the messages of a session ("" means all sessions):
// every stored row, hidden ones too, as Hermes' message_count counts.
func (s *Store) MessageCount(ctx context.Context, sessionID string) (int64, error) {
	var n int64
	var err error
	if sessionID == "" {
		err = s.queryRow(ctx, "SELECT count(*) FROM messages").Scan(&n)
	} else {
		err = s.queryRow(ctx, "SELECT count(*) FROM messages WHERE session_id = ?", sessionID).Scan(&n)
	}
	if err != nil {
		return 0, s.readErr(err, "count messages")
	}
	return n, nil
}

// ClearMessages deletes the session's messages and zeroes its message and
// tool call counters (token counters are kept). Unknown ids are a no-op.
func (s *Store) ClearMessages(ctx context.Context, id string) error {
	return s.write(ctx, "clear messages of "+id, func(tx *sqlitedb.Tx) error {
		if err := keepHermesTrigram(tx, "session_id = ?", id); err != nil {
			return err
		}
		if _, err := tx.Exec("DELETE FROM messages WHERE session_id = ?", id); err != nil {
			return err
		}
		if err := purgeNoted(tx); err != nil {
			return err
		}
		_, err := tx.Exec("UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?", id)
		return err
	})
}

// fkConflict turns a constraint failure of a delete (a foreign key of a
// table of a newer Hermes referencing the session) into conflict.
// IsConstraint covers IsForeignKey.
func fkConflict(err error, format string, args ...any) error {
	if sqlitedb.IsConstraint(err) {
		return sessiondb.Wrap(sessiondb.ECONFLICT, err, format, args...)
	}
	return err
}

// DeleteSession deletes the session, its delegate subagents (as Hermes'
// delete_session does) and their messages, orphaning their other
// children, in one transaction. It returns the ids it deleted, none when
// there was no such session.
func (s *Store) DeleteSession(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := s.write(ctx, "delete session "+id, func(tx *sqlitedb.Tx) error {
		var err error
		ids, err = deleteSessions(deleteTx{tx, "delete messages of " + id, "delete session " + id}, "id = ?", []any{id}, true)
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
	links, err := readLinks(ctx, readers{s})
	if err != nil {
		return nil, s.readErr(err, "delegates of %s", id)
	}
	return sessiondb.NonNil(sessiondb.Delegates(links, []string{id})), nil
}

// PruneSessions deletes, in one transaction, the ended sessions (of source,
// unless "") that started more than olderThanDays days ago, orphaning their
// children first (delegates too, as Hermes' prune does). It returns how
// many sessions it deleted.
func (s *Store) PruneSessions(ctx context.Context, olderThanDays float64, source string) (int, error) {
	if err := sessiondb.CheckPruneDays(olderThanDays); err != nil {
		return 0, err
	}
	cond, args := sessiondb.PruneCondition(s.epochNow()-olderThanDays*86400, source, func(int) string { return "?" })
	var n int
	err := s.write(ctx, "prune sessions", func(tx *sqlitedb.Tx) error {
		ids, err := deleteSessions(deleteTx{tx, "prune messages", "prune sessions"}, cond, args, false)
		n = len(ids)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// deleteSessions selects the sessions cond selects (and with delegates
// their delegate subagents), makes their removal from a newer Hermes'
// trigram index exact (keepHermesTrigram), and deletes them, inside d's
// transaction.
func deleteSessions(d deleteTx, cond string, args []any, delegates bool) ([]string, error) {
	ids, err := sessiondb.SessionsToDelete(d, cond, args, delegates)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	in, arg := d.In(ids)
	if err := keepHermesTrigram(d.tx, "session_id IN "+in, arg); err != nil {
		return nil, err
	}
	if _, err := sessiondb.DeleteSessions(d, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// SetSessionArchived archives or unarchives the session's compression
// lineage (sessiondb.ArchiveLineageSQL) and returns how many sessions it
// set. A file without the archived column (schema 6) is refused: its
// column is Hermes' to add.
func (s *Store) SetSessionArchived(ctx context.Context, id string, archived bool) (int64, error) {
	if !s.si.sessCols["archived"] {
		return 0, s.noArchivedColumn()
	}
	var n int64
	err := s.write(ctx, "archive session "+id, func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec(sessiondb.ArchiveLineageSQL("?1", "?2"), id, sessiondb.ArchivedFlag(archived))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// Archivable reports whether SetSessionArchived can work on this file:
// whether it has Hermes' archived column (the web UI shows its archive
// button only then).
func (s *Store) Archivable() bool { return s.si.sessCols["archived"] }

// noArchivedColumn is the refusal of SetSessionArchived on a file without
// the column.
func (s *Store) noArchivedColumn() error {
	return sessiondb.Errorf(sessiondb.EINVALID, "%s has no archived column (schema version %d): a Hermes that archives sessions adds it when it opens the file, and sessiondb adds no column to Hermes' tables", s.path, s.si.version)
}

// readLinks reads what the delete cascade needs (sessiondb.LinksSQL).
func readLinks(ctx context.Context, q sqlitedb.Querier) ([]sessiondb.SessionLink, error) {
	return sqlitedb.Append(ctx, q, sessiondb.LinksSQL, nil, nil, func(r sqlitedb.Row) (sessiondb.SessionLink, error) {
		var l sessiondb.SessionLink
		err := r.Scan(&l.ID, &l.ParentID, &l.ModelConfig)
		return l, err
	})
}

// deleteTx is a deletion's view of a write transaction: a constraint that
// refuses its delete of messages or of sessions is a conflict
// (fkConflict) naming that step as messages or rows says.
type deleteTx struct {
	tx             *sqlitedb.Tx
	messages, rows string
}

func (d deleteTx) IDs(q string, args ...any) ([]string, error) {
	return sqlitedb.Append(d.tx.Context(), d.tx, q, args, nil, sqlitedb.Value[string])
}

func (d deleteTx) Links() ([]sessiondb.SessionLink, error) { return readLinks(d.tx.Context(), d.tx) }

func (d deleteTx) In(ids []string) (string, any) {
	return "(SELECT value FROM json_each(?))", jsonStrings(ids)
}

func (d deleteTx) Exec(step sessiondb.DeleteStep, q string, args ...any) (int64, error) {
	res, err := d.tx.Exec(q, args...)
	switch {
	case err == nil && step == sessiondb.DeleteMessages:
		// The deleted messages leave the recent index in the same
		// transaction: none of their words stays behind.
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		return n, purgeNoted(d.tx)
	case err == nil:
		return res.RowsAffected()
	case step == sessiondb.DeleteMessages:
		return 0, fkConflict(err, "%s", d.messages)
	case step == sessiondb.DeleteSessionRows:
		return 0, fkConflict(err, "%s", d.rows)
	}
	return 0, err
}
