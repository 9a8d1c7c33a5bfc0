package regsql

import (
	"context"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Subagents implements janebot's subagent store (sessiondb.SubagentService)
// over a Backend, on janebot's subagent_sessions table (the backends create
// it and keep its ledger). Every transition is one conditional UPDATE, a
// compare-and-set on the status and job it expects, so handles in many
// processes never overwrite a newer job. Timestamps are epoch
// milliseconds.
type Subagents struct {
	b  Backend
	rq Querier
}

// NewSubagents returns the subagent store over b.
func NewSubagents(b Backend) *Subagents { return &Subagents{b: b, rq: b.Reader()} }

const subagentCols = "id, thread_key, channel_id, thread_ts, sandbox_name, pi_session_file, status, running_job_id, last_job_id, last_error, turns, created_at, updated_at"

func scanSubagent(r Scanner) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	var status string
	err := r.Scan(&a.ID, &a.Key, &a.ChannelID, &a.ThreadTS, &a.SandboxName, &a.PISessionFile, &status,
		intoText(&a.RunningJobID), intoText(&a.LastJobID), intoText(&a.LastError), &a.Turns, &a.CreatedAt, &a.UpdatedAt)
	a.Status = sessiondb.SubagentStatus(status)
	return a, err
}

// one reads the record where names; not_found naming what and key when
// there is none.
func (s *Subagents) one(ctx context.Context, q Querier, what, key, where string, args ...any) (sessiondb.Subagent, error) {
	rows, err := AppendRows(ctx, q, "SELECT "+subagentCols+" FROM subagent_sessions WHERE "+where, args, nil, scanSubagent)
	if err != nil {
		return sessiondb.Subagent{}, sessiondb.Wrap(s.b.Code(err), err, "read %s %q", what, key)
	}
	if len(rows) == 0 {
		return sessiondb.Subagent{}, sessiondb.NotFound(what, key)
	}
	return rows[0], nil
}

// GetSubagent implements sessiondb.SubagentService.
func (s *Subagents) GetSubagent(ctx context.Context, id string) (sessiondb.Subagent, error) {
	return s.one(ctx, s.rq, "subagent", id, "id = ?", id)
}

// GetSubagentByThread implements sessiondb.SubagentService.
func (s *Subagents) GetSubagentByThread(ctx context.Context, channelID, threadTS string) (sessiondb.Subagent, error) {
	key := sessiondb.SubagentThreadKey(channelID, threadTS)
	return s.one(ctx, s.rq, "subagent of thread", key, "thread_key = ?", key)
}

// EnsureSubagent implements sessiondb.SubagentService: a thread's record
// is read first; a fresh one is inserted unless the thread has one by then
// (ON CONFLICT on the thread key), so racing handles agree on one record.
func (s *Subagents) EnsureSubagent(ctx context.Context, channelID, threadTS, sessionsDir string) (sessiondb.Subagent, bool, error) {
	fresh := sessiondb.NewSubagent(channelID, threadTS, sessionsDir, s.b.Now())
	if err := fresh.Validate(); err != nil {
		return sessiondb.Subagent{}, false, err
	}
	if a, err := s.GetSubagentByThread(ctx, channelID, threadTS); err == nil || sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		return a, false, err
	}
	var a sessiondb.Subagent
	created := false
	err := s.b.Write(ctx, "ensure subagent", func(tx Tx) error {
		n, err := Changed(tx, "INSERT INTO subagent_sessions ("+subagentCols+") VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?) ON CONFLICT (thread_key) DO NOTHING",
			fresh.ID, fresh.Key, fresh.ChannelID, fresh.ThreadTS, fresh.SandboxName, fresh.PISessionFile, string(fresh.Status), fresh.Turns, fresh.CreatedAt, fresh.UpdatedAt)
		if err != nil {
			return err
		}
		created = n == 1
		a, err = s.one(tx.Context(), tx, "subagent of thread", fresh.Key, "thread_key = ?", fresh.Key)
		return err
	})
	if err != nil {
		return sessiondb.Subagent{}, false, err
	}
	return a, created, nil
}

// UpsertSubagent implements sessiondb.SubagentService.
func (s *Subagents) UpsertSubagent(ctx context.Context, a sessiondb.Subagent) error {
	if err := a.Validate(); err != nil {
		return err
	}
	return s.b.Write(ctx, "upsert subagent", func(tx Tx) error {
		owners, err := AppendRows(tx.Context(), tx, "SELECT id FROM subagent_sessions WHERE thread_key = ? AND id <> ?", []any{a.Key, a.ID}, nil, valueOf[string])
		if err != nil {
			return err
		}
		if len(owners) > 0 {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "thread %q belongs to subagent %q, not %q", a.Key, owners[0], a.ID)
		}
		_, err = tx.Exec(`INSERT INTO subagent_sessions (`+subagentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET thread_key = excluded.thread_key, channel_id = excluded.channel_id, thread_ts = excluded.thread_ts,
  sandbox_name = excluded.sandbox_name, pi_session_file = excluded.pi_session_file, status = excluded.status,
  running_job_id = excluded.running_job_id, last_job_id = excluded.last_job_id, last_error = excluded.last_error,
  turns = excluded.turns, updated_at = excluded.updated_at`,
			a.ID, a.Key, a.ChannelID, a.ThreadTS, a.SandboxName, a.PISessionFile, string(a.Status),
			nullText(a.RunningJobID), nullText(a.LastJobID), nullText(a.LastError), a.Turns, a.CreatedAt, a.UpdatedAt)
		return err
	})
}

// subagentWhere builds the WHERE clause of f (Limit and Cursor aside).
func subagentWhere(f sessiondb.SubagentFilter) where {
	var w where
	w.equal("channel_id", f.ChannelID)
	w.equal("status", string(f.Status))
	if f.UpdatedBefore != 0 {
		w.and("updated_at < ?", f.UpdatedBefore)
	}
	if f.UpdatedAfter != 0 {
		w.and("updated_at > ?", f.UpdatedAfter)
	}
	return w
}

// ListSubagents implements sessiondb.SubagentService: newest first, a
// keyset page at a time.
func (s *Subagents) ListSubagents(ctx context.Context, f sessiondb.SubagentFilter) (sessiondb.SubagentPage, error) {
	if err := f.Validate(); err != nil {
		return sessiondb.SubagentPage{}, err
	}
	limit := pageLimit(f.Limit)
	w := subagentWhere(f)
	if f.Cursor != "" {
		ms, id, err := sessiondb.ParseSubagentCursor(f.Cursor)
		if err != nil {
			return sessiondb.SubagentPage{}, err
		}
		w.and("(updated_at < ? OR (updated_at = ? AND id < ?))", ms, ms, id)
	}
	rows, err := AppendRows(ctx, s.rq, "SELECT "+subagentCols+" FROM subagent_sessions"+w.String()+" ORDER BY updated_at DESC, id DESC LIMIT ?",
		append(w.args, limit+1), []sessiondb.Subagent{}, scanSubagent)
	if err != nil {
		return sessiondb.SubagentPage{}, sessiondb.Wrap(s.b.Code(err), err, "list subagents")
	}
	page := sessiondb.SubagentPage{Subagents: rows}
	if len(rows) > limit {
		page.Subagents = rows[:limit]
		page.NextCursor = sessiondb.SubagentCursor(rows[limit-1])
	}
	return page, nil
}

// CountSubagents implements sessiondb.SubagentService.
func (s *Subagents) CountSubagents(ctx context.Context, f sessiondb.SubagentFilter) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	w := subagentWhere(f)
	n, err := AppendRows(ctx, s.rq, "SELECT COUNT(*) FROM subagent_sessions"+w.String(), w.args, nil, valueOf[int64])
	if err != nil || len(n) == 0 {
		return 0, sessiondb.Wrap(s.b.Code(err), err, "count subagents")
	}
	return n[0], nil
}

// DeleteSubagent implements sessiondb.SubagentService: one conditional
// DELETE, so a record that starts running meanwhile is not deleted
// without force.
func (s *Subagents) DeleteSubagent(ctx context.Context, id string, force bool) (bool, error) {
	deleted := false
	err := s.b.Write(ctx, "delete subagent", func(tx Tx) error {
		n, err := Changed(tx, "DELETE FROM subagent_sessions WHERE id = ? AND (status <> 'running' OR ?)", id, force)
		if err != nil || n > 0 {
			deleted = n > 0
			return err
		}
		st, err := AppendRows(tx.Context(), tx, "SELECT status FROM subagent_sessions WHERE id = ?", []any{id}, nil, valueOf[string])
		if err != nil || len(st) == 0 {
			return err
		}
		return sessiondb.Errorf(sessiondb.ECONFLICT, "subagent %q is running a job; stop it first or force the delete", id)
	})
	return deleted, err
}

// PruneSubagents implements sessiondb.SubagentService; a running record is
// never pruned.
func (s *Subagents) PruneSubagents(ctx context.Context, olderThan time.Duration, statuses ...sessiondb.SubagentStatus) (int, error) {
	if olderThan < 0 {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "older-than %s is negative", olderThan)
	}
	if len(statuses) == 0 {
		statuses = []sessiondb.SubagentStatus{sessiondb.SubagentIdle, sessiondb.SubagentError}
	}
	args := []any{s.b.Now().Add(-olderThan).UnixMilli()}
	for _, st := range statuses {
		if err := st.Validate(); err != nil {
			return 0, err
		}
		args = append(args, string(st))
	}
	n := 0
	err := s.b.Write(ctx, "prune subagents", func(tx Tx) error {
		m, err := Changed(tx, "DELETE FROM subagent_sessions WHERE updated_at < ? AND status <> 'running' AND status IN ("+qmarks(len(statuses))+")", args...)
		n = int(m)
		return err
	})
	return n, err
}

// transition runs one compare-and-set UPDATE of id inside a write
// transaction and returns the record after it. When it changes nothing,
// the record is missing (not_found) or was not in the expected state
// (lost tells why from the record as it is).
func (s *Subagents) transition(ctx context.Context, what, id string, lost func(sessiondb.Subagent) error, query string, args ...any) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	err := s.b.Write(ctx, what, func(tx Tx) error {
		n, err := Changed(tx, query, args...)
		if err != nil {
			return err
		}
		if a, err = s.one(tx.Context(), tx, "subagent", id, "id = ?", id); err != nil {
			return err
		}
		if n == 0 {
			return lost(a)
		}
		return nil
	})
	if err != nil {
		return sessiondb.Subagent{}, err
	}
	return a, nil
}

func notRunningJob(job string) func(sessiondb.Subagent) error {
	return func(a sessiondb.Subagent) error { return sessiondb.SubagentNotRunningJob(a, job) }
}

// DispatchJob implements sessiondb.SubagentService. The liveness probe is
// I/O, so it runs outside the transaction; the reset of a dead job is a
// compare-and-set on the job it probed.
func (s *Subagents) DispatchJob(ctx context.Context, id, job string, alive func(sessiondb.Subagent) bool) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	cur, err := s.GetSubagent(ctx, id)
	if err != nil {
		return sessiondb.Subagent{}, err
	}
	stale := ""
	if cur.Status == sessiondb.SubagentRunning {
		if alive == nil || alive(cur) {
			return sessiondb.Subagent{}, sessiondb.SubagentBusy(id, cur.RunningJobID)
		}
		stale = cur.RunningJobID
	}
	// One compare-and-set: a record not running, or still running the
	// dead job the probe found (NULL when there is none: it equals no job).
	return s.transition(ctx, "dispatch job", id, func(a sessiondb.Subagent) error { return sessiondb.SubagentBusy(id, a.RunningJobID) },
		"UPDATE subagent_sessions SET status = 'running', running_job_id = ?, updated_at = ? WHERE id = ? AND (status <> 'running' OR running_job_id = ?)",
		job, s.b.Now().UnixMilli(), id, nullText(stale))
}

// CompleteJob implements sessiondb.SubagentService.
func (s *Subagents) CompleteJob(ctx context.Context, id, job string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "complete job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'idle', last_job_id = ?1, running_job_id = NULL, last_error = NULL, turns = turns + 1, updated_at = ?2
WHERE id = ?3 AND status = 'running' AND running_job_id = ?1`, job, s.b.Now().UnixMilli(), id)
}

// FailJob implements sessiondb.SubagentService.
func (s *Subagents) FailJob(ctx context.Context, id, job, message string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "fail job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'error', last_error = ?1, running_job_id = NULL, updated_at = ?2
WHERE id = ?3 AND status = 'running' AND running_job_id = ?4`, message, s.b.Now().UnixMilli(), id, job)
}

// AbortJob implements sessiondb.SubagentService.
func (s *Subagents) AbortJob(ctx context.Context, id, job string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "abort job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = ?1
WHERE id = ?2 AND status = 'running' AND running_job_id = ?3`, s.b.Now().UnixMilli(), id, job)
}

// ReconcileRunning implements sessiondb.SubagentService.
func (s *Subagents) ReconcileRunning(ctx context.Context, alive func(sessiondb.Subagent) bool) ([]string, error) {
	if alive == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "alive is nil: reconciling needs a way to probe the sandbox")
	}
	running, err := AppendRows(ctx, s.rq, "SELECT "+subagentCols+" FROM subagent_sessions WHERE status = 'running' ORDER BY id", nil, nil, scanSubagent)
	if err != nil {
		return nil, sessiondb.Wrap(s.b.Code(err), err, "list running subagents")
	}
	var dead []sessiondb.Subagent
	for _, a := range running {
		if !alive(a) {
			dead = append(dead, a)
		}
	}
	reset := []string{}
	if len(dead) == 0 {
		return reset, nil
	}
	err = s.b.Write(ctx, "reconcile running subagents", func(tx Tx) error {
		reset = reset[:0]
		now := s.b.Now().UnixMilli()
		for _, a := range dead {
			if n, err := Changed(tx, "UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = ? WHERE id = ? AND status = 'running' AND running_job_id = ?",
				now, a.ID, a.RunningJobID); err != nil {
				return err
			} else if n > 0 {
				reset = append(reset, a.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return reset, nil
}
