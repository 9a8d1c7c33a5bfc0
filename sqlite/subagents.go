package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SubagentOptions tune OpenSubagents. The zero value opens read-write with
// the default write budget, the wall clock and no logging.
type SubagentOptions struct {
	// WriteBudget bounds the wait for the write lock; 0 means
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// Subagents is janebot's subagent store (spec/control-plane.md part B) on
// its state.sqlite: janebot opens what we write and we open what janebot
// wrote. It implements sessiondb.SubagentService; the caller owns the
// handle (no process singleton).
type Subagents struct {
	f         *fileConns
	closeOnce sync.Once
	closeErr  error
}

var _ sessiondb.SubagentService = (*Subagents)(nil)

// janebot's ledger: version-keyed, epoch-millisecond stamps.
const ddlSubagentLedger = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at INTEGER NOT NULL
);`

const ddlSubagentSessions = `CREATE TABLE IF NOT EXISTS subagent_sessions (
  id TEXT PRIMARY KEY,
  thread_key TEXT NOT NULL UNIQUE,
  channel_id TEXT NOT NULL,
  thread_ts TEXT NOT NULL,
  sandbox_name TEXT NOT NULL,
  pi_session_file TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('idle', 'running', 'error')),
  running_job_id TEXT,
  last_job_id TEXT,
  last_error TEXT,
  turns INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_subagent_sessions_updated_at ON subagent_sessions(updated_at);`

// subagentMigration is one of janebot's versions.
type subagentMigration struct {
	version     int64
	description string
	up          string
}

// subagentMigrations are the versions we know. Version 2 lived in janebot
// for five hours (it renamed sprite_name); files from then have it in the
// ledger. We apply it only to a file that still has sprite_name, so a file
// we create carries janebot's ledger exactly: version 1.
var subagentMigrations = []subagentMigration{
	{1, "Create subagent sessions table", ddlSubagentSessions},
	{2, "Rename sprite_name column to sandbox_name", "ALTER TABLE subagent_sessions RENAME COLUMN sprite_name TO sandbox_name"},
}

// OpenSubagents opens janebot's store at path (parent created 0700, file
// 0600, WAL, synchronous NORMAL, foreign keys on, readers wait 5 s) and
// applies what its ledger lacks: version 1 in a BEGIN IMMEDIATE
// transaction that re-reads the ledger, so two processes starting together
// never both apply it; versions above the highest we know are left alone.
// A file janebot's first release wrote (column sprite_name) is healed to
// sandbox_name as janebot's short-lived version 2 did. Opening a file that
// needs nothing takes no write lock.
func OpenSubagents(ctx context.Context, path string, o SubagentOptions) (*Subagents, error) {
	f, err := openConns(ctx, connConfig{path: path, budget: o.WriteBudget, now: o.Now, log: o.Logger})
	if err != nil {
		return nil, sessiondb.Wrap("", err, "open subagent store")
	}
	s := &Subagents{f: f}
	if err := s.migrate(ctx); err != nil {
		f.close()
		return nil, err
	}
	return s, nil
}

func (s *Subagents) migrate(ctx context.Context) error {
	applied, needsRename, err := s.schemaState(ctx, s.f.rp)
	if err != nil {
		return openErr(err, s.f.path, "read the migration ledger")
	}
	if applied[1] && !needsRename {
		return nil
	}
	err = s.f.write(ctx, "migrate "+s.f.path, func(tx *sqlitedb.Tx) error {
		if err := tx.ExecScript(ddlSubagentLedger); err != nil {
			return err
		}
		applied, needsRename, err := s.schemaState(tx.Context(), tx)
		if err != nil {
			return err
		}
		now := s.f.now().UnixMilli()
		for _, m := range subagentMigrations {
			switch {
			case m.version == 1 && applied[1]:
				continue
			case m.version == 2 && !needsRename:
				continue
			}
			if err := tx.ExecScript(m.up); err != nil {
				return err
			}
			if m.version == 1 {
				// A table version 1 found already there (created
				// IF NOT EXISTS) may be the first release's.
				if _, needsRename, err = s.schemaState(tx.Context(), tx); err != nil {
					return err
				}
			}
			if applied[m.version] {
				continue
			}
			if _, err := tx.Exec("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)", m.version, m.description, now); err != nil {
				return err
			}
		}
		return nil
	})
	return sessiondb.Wrap("", err, "open %s", s.f.path)
}

// schemaState reads the applied versions and whether the table still has
// janebot's first column name.
func (s *Subagents) schemaState(ctx context.Context, q sqlitedb.Querier) (map[int64]bool, bool, error) {
	applied := map[int64]bool{}
	ledger, err := tableColumns(ctx, q, "schema_migrations")
	if err != nil {
		return nil, false, err
	}
	if ledger["version"] {
		vs, err := sqlitedb.Append(ctx, q, "SELECT version FROM schema_migrations", nil, nil, sqlitedb.Value[int64])
		if err != nil {
			return nil, false, err
		}
		for _, v := range vs {
			applied[v] = true
		}
	}
	cols, err := tableColumns(ctx, q, "subagent_sessions")
	if err != nil {
		return nil, false, err
	}
	return applied, cols["sprite_name"] && !cols["sandbox_name"], nil
}

// Close closes the file. Calling it again returns the first result.
func (s *Subagents) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = sessiondb.Wrap(sessiondb.EINTERNAL, s.f.close(), "close %s", s.f.path)
	})
	return s.closeErr
}

// Path returns the file given to OpenSubagents.
func (s *Subagents) Path() string { return s.f.path }

const subagentCols = "id, thread_key, channel_id, thread_ts, sandbox_name, pi_session_file, status, running_job_id, last_job_id, last_error, turns, created_at, updated_at"

func scanSubagent(r sqlitedb.Row) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	var status string
	var running, last, lastErr sql.NullString
	err := r.Scan(&a.ID, &a.Key, &a.ChannelID, &a.ThreadTS, &a.SandboxName, &a.PISessionFile, &status, &running, &last, &lastErr, &a.Turns, &a.CreatedAt, &a.UpdatedAt)
	a.Status, a.RunningJobID, a.LastJobID, a.LastError = sessiondb.SubagentStatus(status), running.String, last.String, lastErr.String
	return a, err
}

// one runs query and returns its only row scanned, or not_found naming
// what and id.
func one[T any](ctx context.Context, q sqlitedb.Querier, what, id, query string, args []any, scan func(sqlitedb.Row) (T, error)) (T, error) {
	rows, err := sqlitedb.Append(ctx, q, query, args, nil, scan)
	var zero T
	if err != nil {
		return zero, sqlitedb.Wrap(err, "read %s %q", what, id)
	}
	if len(rows) == 0 {
		return zero, sessiondb.NotFound(what, id)
	}
	return rows[0], nil
}

func getSubagent(ctx context.Context, q sqlitedb.Querier, id string) (sessiondb.Subagent, error) {
	return one(ctx, q, "subagent", id, "SELECT "+subagentCols+" FROM subagent_sessions WHERE id = ?", []any{id}, scanSubagent)
}

// GetSubagent implements sessiondb.SubagentService.
func (s *Subagents) GetSubagent(ctx context.Context, id string) (sessiondb.Subagent, error) {
	return getSubagent(ctx, s.f.rp, id)
}

// GetSubagentByThread implements sessiondb.SubagentService.
func (s *Subagents) GetSubagentByThread(ctx context.Context, channelID, threadTS string) (sessiondb.Subagent, error) {
	key := sessiondb.SubagentThreadKey(channelID, threadTS)
	return one(ctx, s.f.rp, "subagent of thread", key, "SELECT "+subagentCols+" FROM subagent_sessions WHERE thread_key = ?", []any{key}, scanSubagent)
}

// EnsureSubagent implements sessiondb.SubagentService.
func (s *Subagents) EnsureSubagent(ctx context.Context, channelID, threadTS, sessionsDir string) (sessiondb.Subagent, bool, error) {
	fresh := sessiondb.NewSubagent(channelID, threadTS, sessionsDir, s.f.now())
	if err := fresh.Validate(); err != nil {
		return sessiondb.Subagent{}, false, err
	}
	if a, err := s.GetSubagentByThread(ctx, channelID, threadTS); err == nil || sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		return a, false, err
	}
	var a sessiondb.Subagent
	created := false
	err := s.f.write(ctx, "ensure subagent", func(tx *sqlitedb.Tx) error {
		found, err := sqlitedb.Append(tx.Context(), tx, "SELECT "+subagentCols+" FROM subagent_sessions WHERE thread_key = ?", []any{fresh.Key}, nil, scanSubagent)
		if err != nil || len(found) > 0 {
			if len(found) > 0 {
				a = found[0]
			}
			return err
		}
		if err := insertSubagent(tx, fresh); err != nil {
			return err
		}
		a, created = fresh, true
		return nil
	})
	return a, created, err
}

func insertSubagent(tx *sqlitedb.Tx, a sessiondb.Subagent) error {
	_, err := tx.Exec(`INSERT INTO subagent_sessions (`+subagentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET thread_key = excluded.thread_key, channel_id = excluded.channel_id, thread_ts = excluded.thread_ts,
  sandbox_name = excluded.sandbox_name, pi_session_file = excluded.pi_session_file, status = excluded.status,
  running_job_id = excluded.running_job_id, last_job_id = excluded.last_job_id, last_error = excluded.last_error,
  turns = excluded.turns, updated_at = excluded.updated_at`,
		a.ID, a.Key, a.ChannelID, a.ThreadTS, a.SandboxName, a.PISessionFile, string(a.Status),
		nullStr(a.RunningJobID), nullStr(a.LastJobID), nullStr(a.LastError), a.Turns, a.CreatedAt, a.UpdatedAt)
	return err
}

// UpsertSubagent implements sessiondb.SubagentService.
func (s *Subagents) UpsertSubagent(ctx context.Context, a sessiondb.Subagent) error {
	if err := a.Validate(); err != nil {
		return err
	}
	return s.f.write(ctx, "upsert subagent", func(tx *sqlitedb.Tx) error {
		owners, err := sqlitedb.Append(tx.Context(), tx, "SELECT id FROM subagent_sessions WHERE thread_key = ? AND id <> ?", []any{a.Key, a.ID}, nil, sqlitedb.Value[string])
		if err != nil {
			return err
		}
		if len(owners) > 0 {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "thread %q belongs to subagent %q, not %q", a.Key, owners[0], a.ID)
		}
		return insertSubagent(tx, a)
	})
}

// subagentWhere builds the WHERE clause of f (Limit and Cursor aside).
func subagentWhere(f sessiondb.SubagentFilter) (string, []any) {
	where := " WHERE 1 = 1"
	var args []any
	if f.ChannelID != "" {
		where += " AND channel_id = ?"
		args = append(args, f.ChannelID)
	}
	if f.Status != "" {
		where += " AND status = ?"
		args = append(args, string(f.Status))
	}
	if f.UpdatedBefore != 0 {
		where += " AND updated_at < ?"
		args = append(args, f.UpdatedBefore)
	}
	if f.UpdatedAfter != 0 {
		where += " AND updated_at > ?"
		args = append(args, f.UpdatedAfter)
	}
	return where, args
}

// ListSubagents implements sessiondb.SubagentService.
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
		where += " AND (updated_at < ? OR (updated_at = ? AND id < ?))"
		args = append(args, ms, ms, id)
	}
	rows, err := sqlitedb.Append(ctx, s.f.rp, "SELECT "+subagentCols+" FROM subagent_sessions"+where+" ORDER BY updated_at DESC, id DESC LIMIT ?",
		append(args, limit+1), []sessiondb.Subagent{}, scanSubagent)
	if err != nil {
		return sessiondb.SubagentPage{}, sqlitedb.Wrap(err, "list subagents")
	}
	page := sessiondb.SubagentPage{Subagents: rows}
	if len(rows) > limit {
		last := rows[limit-1]
		page.Subagents = rows[:limit]
		page.NextCursor = sessiondb.SubagentCursor(last)
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
	err := s.f.rp.QueryRowContext(ctx, "SELECT COUNT(*) FROM subagent_sessions"+where, args...).Scan(&n)
	return n, sqlitedb.Wrap(err, "count subagents")
}

// DeleteSubagent implements sessiondb.SubagentService.
func (s *Subagents) DeleteSubagent(ctx context.Context, id string, force bool) (bool, error) {
	deleted := false
	err := s.f.write(ctx, "delete subagent", func(tx *sqlitedb.Tx) error {
		st, err := sqlitedb.Append(tx.Context(), tx, "SELECT status FROM subagent_sessions WHERE id = ?", []any{id}, nil, sqlitedb.Value[string])
		if err != nil || len(st) == 0 {
			return err
		}
		if st[0] == string(sessiondb.SubagentRunning) && !force {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "subagent %q is running a job; stop it first or force the delete", id)
		}
		_, err = tx.Exec("DELETE FROM subagent_sessions WHERE id = ?", id)
		deleted = err == nil
		return err
	})
	return deleted, err
}

// PruneSubagents implements sessiondb.SubagentService.
func (s *Subagents) PruneSubagents(ctx context.Context, olderThan time.Duration, statuses ...sessiondb.SubagentStatus) (int, error) {
	if olderThan < 0 {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "older-than %s is negative", olderThan)
	}
	if len(statuses) == 0 {
		statuses = []sessiondb.SubagentStatus{sessiondb.SubagentIdle, sessiondb.SubagentError}
	}
	var args []any
	cutoff := s.f.now().Add(-olderThan).UnixMilli()
	args = append(args, cutoff)
	for _, st := range statuses {
		if err := st.Validate(); err != nil {
			return 0, err
		}
		args = append(args, string(st))
	}
	n := 0
	err := s.f.write(ctx, "prune subagents", func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec("DELETE FROM subagent_sessions WHERE updated_at < ? AND status <> 'running' AND status IN ("+placeholders(len(statuses))+")", args...)
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n = int(m)
		return nil
	})
	return n, err
}

// transition runs one compare-and-set UPDATE of id inside a write
// transaction and returns the row after it. When it changes nothing, the
// row is missing (not_found) or was not in the expected state (conflict,
// with lost describing it).
func (s *Subagents) transition(ctx context.Context, what, id string, lost func(sessiondb.Subagent) error, query string, args ...any) (sessiondb.Subagent, error) {
	var a sessiondb.Subagent
	err := s.f.write(ctx, what, func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec(query, args...)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		a, err = getSubagent(tx.Context(), tx, id)
		if err != nil {
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

// DispatchJob implements sessiondb.SubagentService.
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
		// The probe is I/O: run it outside the transaction, then reset
		// only if the row still runs the job it probed.
		if alive == nil || alive(cur) {
			return sessiondb.Subagent{}, sessiondb.SubagentBusy(id, cur.RunningJobID)
		}
		stale = cur.RunningJobID
	}
	var a sessiondb.Subagent
	err = s.f.write(ctx, "dispatch job", func(tx *sqlitedb.Tx) error {
		now := s.f.now().UnixMilli()
		if stale != "" {
			if _, err := tx.Exec("UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = ? WHERE id = ? AND status = 'running' AND running_job_id = ?",
				now, id, stale); err != nil {
				return err
			}
		}
		res, err := tx.Exec("UPDATE subagent_sessions SET status = 'running', running_job_id = ?, updated_at = ? WHERE id = ? AND status <> 'running'", job, now, id)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		if a, err = getSubagent(tx.Context(), tx, id); err != nil {
			return err
		}
		if n == 0 {
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
	return s.transition(ctx, "complete job", id, func(a sessiondb.Subagent) error { return sessiondb.SubagentNotRunningJob(a, job) },
		`UPDATE subagent_sessions SET status = 'idle', last_job_id = ?1, running_job_id = NULL, last_error = NULL, turns = turns + 1, updated_at = ?2
WHERE id = ?3 AND status = 'running' AND running_job_id = ?1`, job, s.f.now().UnixMilli(), id)
}

// FailJob implements sessiondb.SubagentService.
func (s *Subagents) FailJob(ctx context.Context, id, job, message string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "fail job", id, func(a sessiondb.Subagent) error { return sessiondb.SubagentNotRunningJob(a, job) },
		`UPDATE subagent_sessions SET status = 'error', last_error = ?1, running_job_id = NULL, updated_at = ?2
WHERE id = ?3 AND status = 'running' AND running_job_id = ?4`, message, s.f.now().UnixMilli(), id, job)
}

// AbortJob implements sessiondb.SubagentService.
func (s *Subagents) AbortJob(ctx context.Context, id, job string) (sessiondb.Subagent, error) {
	if err := sessiondb.CheckSubagentJob(job); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.transition(ctx, "abort job", id, func(a sessiondb.Subagent) error { return sessiondb.SubagentNotRunningJob(a, job) },
		`UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = ?1
WHERE id = ?2 AND status = 'running' AND running_job_id = ?3`, s.f.now().UnixMilli(), id, job)
}

// ReconcileRunning implements sessiondb.SubagentService.
func (s *Subagents) ReconcileRunning(ctx context.Context, alive func(sessiondb.Subagent) bool) ([]string, error) {
	if alive == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "alive is nil: reconciling needs a way to probe the sandbox")
	}
	running, err := sqlitedb.Append(ctx, s.f.rp, "SELECT "+subagentCols+" FROM subagent_sessions WHERE status = 'running' ORDER BY id", nil, nil, scanSubagent)
	if err != nil {
		return nil, sqlitedb.Wrap(err, "list running subagents")
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
	err = s.f.write(ctx, "reconcile running subagents", func(tx *sqlitedb.Tx) error {
		reset = reset[:0]
		now := s.f.now().UnixMilli()
		for _, a := range dead {
			res, err := tx.Exec("UPDATE subagent_sessions SET status = 'idle', running_job_id = NULL, updated_at = ? WHERE id = ? AND status = 'running' AND running_job_id = ?",
				now, a.ID, a.RunningJobID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
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
