package regsql

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// The session registry and its resolver (spec A4).

const agentSessionCols = "id, agent_group_id, messaging_group_id, thread_id, agent_provider, status, container_status, last_active, created_at"

func scanAgentSession(r Scanner) (sessiondb.AgentSession, error) { return scanAgentSessionAnd(r) }

// scanAgentSessionAnd scans agentSessionCols and then extra columns into
// extra.
func scanAgentSessionAnd(r Scanner, extra ...any) (sessiondb.AgentSession, error) {
	var s sessiondb.AgentSession
	err := r.Scan(append([]any{&s.ID, &s.AgentGroupID, intoText(&s.MessagingGroupID), intoText(&s.ThreadID), intoText(&s.AgentProvider),
		intoText(&s.Status), intoText(&s.ContainerStatus), IntoTime(&s.LastActive), IntoTime(&s.CreatedAt)}, extra...)...)
	return s, err
}

// Of several matches (twins other programs made) the newest wins, as
// NanoClaw's agent-shared lookup picks.
const (
	findSessionAnyChat = "SELECT " + agentSessionCols + " FROM sessions WHERE agent_group_id = ? AND status = 'active' ORDER BY created_at DESC, id DESC LIMIT 1"
	findSessionInChat  = "SELECT " + agentSessionCols + " FROM sessions WHERE messaging_group_id = ? AND agent_group_id = ? AND thread_id IS NOT DISTINCT FROM ? AND status = 'active' ORDER BY created_at DESC, id DESC LIMIT 1"
)

// findSession runs the lookup k describes.
func findSession(ctx context.Context, q Querier, k sessiondb.SessionKey) ([]sessiondb.AgentSession, error) {
	if k.NoLookup {
		return nil, nil
	}
	if k.AnyChat {
		return AppendRows(ctx, q, findSessionAnyChat, []any{k.AgentGroupID}, nil, scanAgentSession)
	}
	return AppendRows(ctx, q, findSessionInChat, []any{k.MessagingGroupID, k.AgentGroupID, nullText(k.ThreadID)}, nil, scanAgentSession)
}

// ResolveSession implements sessiondb.AgentSessionService. A hit is
// answered from a reader; a miss looks again inside the write transaction
// before it inserts.
func (c *Registry) ResolveSession(ctx context.Context, l sessiondb.SessionLookup) (sessiondb.AgentSession, bool, error) {
	if err := l.Validate(); err != nil {
		return sessiondb.AgentSession{}, false, err
	}
	k := l.Key()
	found, err := findSession(ctx, c.rq, k)
	if err != nil {
		return sessiondb.AgentSession{}, false, c.wrap(err, "resolve session")
	}
	if len(found) > 0 {
		return found[0], false, nil
	}
	var s sessiondb.AgentSession
	created := false
	err = c.write(ctx, "resolve session", func(tx Tx) error {
		ctx := tx.Context()
		// Resolutions of one key take turns: the backend's lock on the key
		// (SQLite's write transaction already holds the file's lock;
		// PostgreSQL takes an advisory lock), then the lookup again, which
		// sees a session another process committed while we waited. A
		// unique index cannot say it: which sessions count as the same
		// depends on the wiring's mode (one per chat and thread, or one per
		// agent group), and rows other programs wrote may hold twins.
		if err := c.b.LockResolve(tx, resolveLockKey(k)); err != nil {
			return err
		}
		found, err := findSession(ctx, tx, k)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			s, created = found[0], false
			return nil
		}
		if err := mustExist(ctx, tx, "agent group", "agent_groups", l.AgentGroupID); err != nil {
			return err
		}
		if l.MessagingGroupID != "" {
			if err := mustExist(ctx, tx, "messaging group", "messaging_groups", l.MessagingGroupID); err != nil {
				return err
			}
		}
		now := c.now()
		id := sessiondb.NewID("sess", now)
		if _, err := tx.Exec("INSERT INTO sessions (id, agent_group_id, messaging_group_id, thread_id, status, container_status, created_at) VALUES (?, ?, ?, ?, 'active', 'stopped', ?)",
			id, l.AgentGroupID, nullText(l.MessagingGroupID), nullText(k.ThreadID), sessiondb.FormatTimestamp(now)); err != nil {
			return err
		}
		s, err = one(c, ctx, tx, "session", id, "SELECT "+agentSessionCols+" FROM sessions WHERE id = ?", []any{id}, scanAgentSession)
		created = err == nil
		return err
	})
	if err != nil {
		return sessiondb.AgentSession{}, false, err
	}
	return s, created, nil
}

// resolveLockKey names the lock of a lookup key.
func resolveLockKey(k sessiondb.SessionKey) string {
	if k.AnyChat {
		return "sessiondb.resolve.any\x1f" + k.AgentGroupID
	}
	return "sessiondb.resolve.chat\x1f" + k.AgentGroupID + "\x1f" + k.MessagingGroupID + "\x1f" + k.ThreadID
}

// FindActiveSession implements sessiondb.AgentSessionService.
func (c *Registry) FindActiveSession(ctx context.Context, l sessiondb.SessionLookup) (sessiondb.AgentSession, bool, error) {
	if err := l.Validate(); err != nil {
		return sessiondb.AgentSession{}, false, err
	}
	found, err := findSession(ctx, c.rq, l.Key())
	if err != nil || len(found) == 0 {
		return sessiondb.AgentSession{}, false, c.wrap(err, "find session")
	}
	return found[0], true, nil
}

// GetAgentSession implements sessiondb.AgentSessionService.
func (c *Registry) GetAgentSession(ctx context.Context, id string) (sessiondb.AgentSession, error) {
	return one(c, ctx, c.rq, "session", id, "SELECT "+agentSessionCols+" FROM sessions WHERE id = ?", []any{id}, scanAgentSession)
}

// sessionCursor encodes the keyset position after s.
func sessionCursor(s sessiondb.AgentSession, createdAt string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(createdAt + "\x00" + s.ID))
}

// ListAgentSessions implements sessiondb.AgentSessionService.
func (c *Registry) ListAgentSessions(ctx context.Context, f sessiondb.AgentSessionFilter) (sessiondb.AgentSessionPage, error) {
	if err := f.Validate(); err != nil {
		return sessiondb.AgentSessionPage{}, err
	}
	limit := pageLimit(f.Limit)
	var w where
	w.equal("agent_group_id", f.AgentGroupID)
	w.equal("messaging_group_id", f.MessagingGroupID)
	w.equal("status", string(f.Status))
	w.equal("container_status", string(f.ContainerStatus))
	if f.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		at, id, ok := strings.Cut(string(raw), "\x00")
		if err != nil || !ok {
			return sessiondb.AgentSessionPage{}, sessiondb.Errorf(sessiondb.EINVALID, "cursor %q is not one a listing returned", f.Cursor)
		}
		w.and("(created_at < ? OR (created_at = ? AND id < ?))", at, at, id)
	}
	type row struct {
		s   sessiondb.AgentSession
		raw string
	}
	rows, err := AppendRows(ctx, c.rq, "SELECT "+agentSessionCols+", created_at FROM sessions"+w.String()+" ORDER BY created_at DESC, id DESC LIMIT ?", append(w.args, limit+1), nil, func(r Scanner) (row, error) {
		var raw string
		s, err := scanAgentSessionAnd(r, &raw)
		return row{s, raw}, err
	})
	if err != nil {
		return sessiondb.AgentSessionPage{}, c.wrap(err, "list sessions")
	}
	page := sessiondb.AgentSessionPage{Sessions: []sessiondb.AgentSession{}}
	for i, r := range rows {
		if i == limit {
			last := rows[i-1]
			page.NextCursor = sessionCursor(last.s, last.raw)
			break
		}
		page.Sessions = append(page.Sessions, r.s)
	}
	return page, nil
}

// updateSession runs an UPDATE of one session by id (the last argument),
// not_found when it changes nothing.
func (c *Registry) updateSession(ctx context.Context, what, id, query string, args ...any) error {
	return c.changeOne(ctx, what, "session", id, query, args...)
}

// TouchSession implements sessiondb.AgentSessionService.
func (c *Registry) TouchSession(ctx context.Context, id string) error {
	return c.updateSession(ctx, "touch session", id, "UPDATE sessions SET last_active = ? WHERE id = ?", c.stamp(), id)
}

// SetContainerStatus implements sessiondb.AgentSessionService.
func (c *Registry) SetContainerStatus(ctx context.Context, id string, st sessiondb.ContainerStatus) error {
	if err := st.Validate(); err != nil {
		return err
	}
	if st == sessiondb.ContainerRunning {
		return c.updateSession(ctx, "mark session running", id, "UPDATE sessions SET container_status = 'running', last_active = ? WHERE id = ?", c.stamp(), id)
	}
	return c.updateSession(ctx, "set container status", id, "UPDATE sessions SET container_status = ? WHERE id = ?", string(st), id)
}

// StopAllContainers implements sessiondb.AgentSessionService.
func (c *Registry) StopAllContainers(ctx context.Context) (int, error) {
	n, err := c.changeRows(ctx, "stop all containers", "UPDATE sessions SET container_status = 'stopped' WHERE container_status IN ('running', 'idle')")
	return int(n), err
}

// CloseSession implements sessiondb.AgentSessionService.
func (c *Registry) CloseSession(ctx context.Context, id string) error {
	return c.updateSession(ctx, "close session", id, "UPDATE sessions SET status = 'closed' WHERE id = ?", id)
}
