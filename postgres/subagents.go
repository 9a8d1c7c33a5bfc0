package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// Subagents is janebot's subagent store (sessiondb.SubagentService) in a
// PostgreSQL schema, which may be the history store's: its table and its
// ledger have names of their own. Every transition is one conditional
// UPDATE (compare-and-set on the status and job it expects), so handles
// in many processes never overwrite a newer job.
type Subagents struct {
	*conn
}

var _ sessiondb.SubagentService = (*Subagents)(nil)

// OpenSubagents opens (creating or migrating) the subagent store in the
// schema url and o name, as Open does for the history store.
func OpenSubagents(ctx context.Context, url string, o Options) (*Subagents, error) {
	c, err := openConn(ctx, url, o, subagentMigrations)
	if err != nil {
		return nil, err
	}
	return &Subagents{conn: c}, nil
}

// Close closes the pool.
func (s *Subagents) Close() error {
	s.pool.Close()
	return nil
}

const subagentCols = "id, thread_key, channel_id, thread_ts, sandbox_name, pi_session_file, status, running_job_id, last_job_id, last_error, turns, created_at, updated_at"

func scanSubagent(r pgx.Row) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	var status string
	var running, last, lastErr *string
	err := r.Scan(&a.ID, &a.Key, &a.ChannelID, &a.ThreadTS, &a.SandboxName, &a.PISessionFile, &status, &running, &last, &lastErr, &a.Turns, &a.CreatedAt, &a.UpdatedAt)
	a.Status = sessiondb.SubagentStatus(status)
	for _, f := range []struct {
		dst *string
		src *string
	}{{&a.RunningJobID, running}, {&a.LastJobID, last}, {&a.LastError, lastErr}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return a, err
}

// oneSubagent reads the record where names; not_found when there is none.
func (s *Subagents) oneSubagent(ctx context.Context, q querier, what, key, where string, args ...any) (sessiondb.Subagent, error) {
	a, err := scanSubagent(q.QueryRow(ctx, "SELECT "+subagentCols+" FROM subagent_sessions WHERE "+where, args...))
	if noRows(err) {
		return sessiondb.Subagent{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "%s %q not found", what, key)
	}
	if err != nil {
		return sessiondb.Subagent{}, s.readErr(err, "get %s %s", what, key)
	}
	return a, nil
}

// GetSubagent implements sessiondb.SubagentService.
func (s *Subagents) GetSubagent(ctx context.Context, id string) (sessiondb.Subagent, error) {
	return s.oneSubagent(ctx, s.pool, "subagent", id, "id = $1", id)
}

// GetSubagentByThread implements sessiondb.SubagentService.
func (s *Subagents) GetSubagentByThread(ctx context.Context, channelID, threadTS string) (sessiondb.Subagent, error) {
	key := sessiondb.SubagentThreadKey(channelID, threadTS)
	return s.oneSubagent(ctx, s.pool, "subagent of thread", key, "thread_key = $1", key)
}

// EnsureSubagent implements sessiondb.SubagentService: the insert of a
// fresh record does nothing when the thread has one already (ON CONFLICT
// on the thread key), so racing handles agree on one record.
func (s *Subagents) EnsureSubagent(ctx context.Context, channelID, threadTS, sessionsDir string) (sessiondb.Subagent, bool, error) {
	fresh := sessiondb.NewSubagent(channelID, threadTS, sessionsDir, s.now())
	if err := fresh.Validate(); err != nil {
		return sessiondb.Subagent{}, false, err
	}
	var a sessiondb.Subagent
	created := false
	err := s.write(ctx, "ensure subagent", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO subagent_sessions ("+subagentCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL, NULL, $8, $9, $10) ON CONFLICT (thread_key) DO NOTHING",
			fresh.ID, fresh.Key, fresh.ChannelID, fresh.ThreadTS, fresh.SandboxName, fresh.PISessionFile, string(fresh.Status), fresh.Turns, fresh.CreatedAt, fresh.UpdatedAt)
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		a, err = s.oneSubagent(ctx, tx, "subagent of thread", fresh.Key, "thread_key = $1", fresh.Key)
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
	return s.write(ctx, "upsert subagent", func(tx pgx.Tx) error {
		var owner string
		err := tx.QueryRow(ctx, "SELECT id FROM subagent_sessions WHERE thread_key = $1 AND id <> $2", a.Key, a.ID).Scan(&owner)
		if err == nil {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "thread %q belongs to subagent %q, not %q", a.Key, owner, a.ID)
		}
		if !noRows(err) {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO subagent_sessions (`+subagentCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (id) DO UPDATE SET thread_key = excluded.thread_key, channel_id = excluded.channel_id, thread_ts = excluded.thread_ts,
  sandbox_name = excluded.sandbox_name, pi_session_file = excluded.pi_session_file, status = excluded.status,
  running_job_id = excluded.running_job_id, last_job_id = excluded.last_job_id, last_error = excluded.last_error,
  turns = excluded.turns, updated_at = excluded.updated_at`,
			a.ID, a.Key, a.ChannelID, a.ThreadTS, a.SandboxName, a.PISessionFile, string(a.Status),
			nullStr(a.RunningJobID), nullStr(a.LastJobID), nullStr(a.LastError), a.Turns, a.CreatedAt, a.UpdatedAt)
		if sqlState(err) == pgUniqueViolation {
			return sessiondb.Wrap(sessiondb.ECONFLICT, err, "thread %q belongs to another subagent", a.Key)
		}
		return err
	})
}

// subagentWhere returns the WHERE clause of f, numbering its arguments.
func subagentWhere(f sessiondb.SubagentFilter) (string, []any) {
	where := " WHERE true"
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where += " AND " + cond + " $" + strconv.Itoa(len(args))
	}
	if f.ChannelID != "" {
		add("channel_id =", f.ChannelID)
	}
	if f.Status != "" {
		add("status =", string(f.Status))
	}
	if f.UpdatedBefore != 0 {
		add("updated_at <", f.UpdatedBefore)
	}
	if f.UpdatedAfter != 0 {
		add("updated_at >", f.UpdatedAfter)
	}
	return where, args
}

// ListSubagents implements sessiondb.SubagentService: newest first, a
// keyset page at a time.
func (s *Subagents) ListSubagents(ctx context.Context, f sessiondb.SubagentFilter) (sessiondb.SubagentPage, error) {
	if err := f.Validate(); err != nil {
		return sessiondb.SubagentPage{}, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	where, args := subagentWhere(f)
	if f.Cursor != "" {
		ms, id, err := sessiondb.ParseSubagentCursor(f.Cursor)
		if err != nil {
			return sessiondb.SubagentPage{}, err
		}
		args = append(args, ms, id)
		where += " AND (updated_at, id) < ($" + strconv.Itoa(len(args)-1) + ", $" + strconv.Itoa(len(args)) + ")"
	}
	args = append(args, limit+1)
	rows := []sessiondb.Subagent{}
	err := each(ctx, s.pool, "SELECT "+subagentCols+" FROM subagent_sessions"+where+" ORDER BY updated_at DESC, id DESC LIMIT $"+strconv.Itoa(len(args)), args, func(r pgx.Rows) error {
		a, err := scanSubagent(r)
		rows = append(rows, a)
		return err
	})
	if err != nil {
		return sessiondb.SubagentPage{}, s.readErr(err, "list subagents")
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
	where, args := subagentWhere(f)
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM subagent_sessions"+where, args...).Scan(&n); err != nil {
		return 0, s.readErr(err, "count subagents")
	}
	return n, nil
}

// DeleteSubagent implements sessiondb.SubagentService.
func (s *Subagents) DeleteSubagent(ctx context.Context, id string, force bool) (bool, error) {
	deleted := false
	err := s.write(ctx, "delete subagent", func(tx pgx.Tx) error {
		deleted = false
		var status string
		err := tx.QueryRow(ctx, "SELECT status FROM subagent_sessions WHERE id = $1 FOR UPDATE", id).Scan(&status)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if status == string(sessiondb.SubagentRunning) && !force {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "subagent %q is running a job; stop it first or force the delete", id)
		}
		_, err = tx.Exec(ctx, "DELETE FROM subagent_sessions WHERE id = $1", id)
		deleted = err == nil
		return err
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
	words := make([]string, len(statuses))
	for i, st := range statuses {
		if err := st.Validate(); err != nil {
			return 0, err
		}
		words[i] = string(st)
	}
	cutoff := s.now().Add(-olderThan).UnixMilli()
	n := 0
	err := s.write(ctx, "prune subagents", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM subagent_sessions WHERE updated_at < $1 AND status <> 'running' AND status = ANY($2)", cutoff, words)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// transition runs one compare-and-set UPDATE on the record id and returns
// it as it is afterwards; when the UPDATE changed nothing, lost tells why
// from the record as it is.
func (s *Subagents) transition(ctx context.Context, what, id string, lost func(sessiondb.Subagent) error, sql string, args ...any) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	err := s.write(ctx, what, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return err
		}
		if a, err = s.oneSubagent(ctx, tx, "subagent", id, "id = $1", id); err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
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
	var a sessiondb.Subagent
	err = s.write(ctx, "dispatch job", func(tx pgx.Tx) error {
		now := s.now().UnixMilli()
		if stale != "" {
			if _, err := tx.Exec(ctx, "UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = $1 WHERE id = $2 AND status = 'running' AND running_job_id = $3",
				now, id, stale); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, "UPDATE subagent_sessions SET status = 'running', running_job_id = $1, updated_at = $2 WHERE id = $3 AND status <> 'running'", job, now, id)
		if err != nil {
			return err
		}
		if a, err = s.oneSubagent(ctx, tx, "subagent", id, "id = $1", id); err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return sessiondb.SubagentBusy(id, a.RunningJobID)
		}
		return nil
	})
	if err != nil {
		return sessiondb.Subagent{}, err
	}
	return a, nil
}

// CompleteJob implements sessiondb.SubagentService.
func (s *Subagents) CompleteJob(ctx context.Context, id, job string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "complete job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'idle', last_job_id = $1, running_job_id = NULL, last_error = NULL, turns = turns + 1, updated_at = $2
WHERE id = $3 AND status = 'running' AND running_job_id = $1`, job, s.now().UnixMilli(), id)
}

// FailJob implements sessiondb.SubagentService.
func (s *Subagents) FailJob(ctx context.Context, id, job, message string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	if err := checkText("message", &message); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "fail job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'error', last_error = $1, running_job_id = NULL, updated_at = $2
WHERE id = $3 AND status = 'running' AND running_job_id = $4`, message, s.now().UnixMilli(), id, job)
}

// AbortJob implements sessiondb.SubagentService.
func (s *Subagents) AbortJob(ctx context.Context, id, job string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "abort job", id, notRunningJob(job),
		`UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = $1
WHERE id = $2 AND status = 'running' AND running_job_id = $3`, s.now().UnixMilli(), id, job)
}

// ReconcileRunning implements sessiondb.SubagentService.
func (s *Subagents) ReconcileRunning(ctx context.Context, alive func(sessiondb.Subagent) bool) ([]string, error) {
	if alive == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "alive is nil: reconciling needs a way to probe the sandbox")
	}
	var running []sessiondb.Subagent
	err := each(ctx, s.pool, "SELECT "+subagentCols+" FROM subagent_sessions WHERE status = 'running' ORDER BY id", nil, func(r pgx.Rows) error {
		a, err := scanSubagent(r)
		running = append(running, a)
		return err
	})
	if err != nil {
		return nil, s.readErr(err, "list running subagents")
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
	err = s.write(ctx, "reconcile running subagents", func(tx pgx.Tx) error {
		reset = reset[:0]
		now := s.now().UnixMilli()
		for _, a := range dead {
			tag, err := tx.Exec(ctx, "UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = $1 WHERE id = $2 AND status = 'running' AND running_job_id = $3",
				now, a.ID, a.RunningJobID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() > 0 {
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
