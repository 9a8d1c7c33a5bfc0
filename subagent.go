package sessiondb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"path/filepath"
	"time"
)

// SubagentStatus is a stored subagent session status (spec B4). The API
// words completed, aborted and not_found exist only in results, never in
// the file.
type SubagentStatus string

const (
	SubagentIdle    SubagentStatus = "idle"
	SubagentRunning SubagentStatus = "running"
	SubagentError   SubagentStatus = "error"
)

// Validate refuses a word other than idle, running and error.
func (s SubagentStatus) Validate() error {
	return checkWord("status", s, SubagentIdle, SubagentRunning, SubagentError)
}

// JobAlreadyRunning is janebot's answer to a dispatch while a job runs.
const JobAlreadyRunning = "A coding job is already running for this thread."

// Subagent is janebot's record of the coding subagent of one Slack thread
// (spec part B): a row of subagent_sessions. Its JSON is janebot's
// camelCase record; empty optional fields are absent. CreatedAt and
// UpdatedAt are epoch milliseconds, the file's own form.
type Subagent struct {
	ID            string         `json:"id"`
	Key           string         `json:"key"`
	ChannelID     string         `json:"channelId"`
	ThreadTS      string         `json:"threadTs"`
	SandboxName   string         `json:"sandboxName"`
	PISessionFile string         `json:"piSessionFile"`
	Status        SubagentStatus `json:"status"`
	RunningJobID  string         `json:"runningJobId,omitempty"`
	LastJobID     string         `json:"lastJobId,omitempty"`
	LastError     string         `json:"lastError,omitempty"`
	Turns         int64          `json:"turns"`
	CreatedAt     int64          `json:"createdAt"`
	UpdatedAt     int64          `json:"updatedAt"`
}

// JobID is what a status query reports: the running job if any, else the
// last successful one.
func (s Subagent) JobID() string {
	if s.RunningJobID != "" {
		return s.RunningJobID
	}
	return s.LastJobID
}

// Validate checks s as the input of UpsertSubagent: every required field
// set, the status a stored word, the key "<channelId>:<threadTs>", turns
// not negative, a running record naming its job. The id is not held to
// SubagentID: rows written by other versions keep theirs. The error is
// invalid and names the field.
func (s Subagent) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"id", s.ID}, {"key", s.Key}, {"channelId", s.ChannelID}, {"threadTs", s.ThreadTS},
		{"sandboxName", s.SandboxName}, {"piSessionFile", s.PISessionFile},
	} {
		if err := checkText(f.name, f.v, true, MaxPlatformID); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"runningJobId", s.RunningJobID}, {"lastJobId", s.LastJobID}} {
		if err := checkText(f.name, f.v, false, MaxNameText); err != nil {
			return err
		}
	}
	if err := s.Status.Validate(); err != nil {
		return err
	}
	if want := SubagentThreadKey(s.ChannelID, s.ThreadTS); s.Key != want {
		return Errorf(EINVALID, "key %q is not <channelId>:<threadTs> (%q)", clip(s.Key), clip(want))
	}
	if s.Turns < 0 {
		return Errorf(EINVALID, "turns %d is negative", s.Turns)
	}
	if s.Status == SubagentRunning && s.RunningJobID == "" {
		return Errorf(EINVALID, "runningJobId is empty although status is running")
	}
	return nil
}

// SubagentThreadKey is "<channel id>:<thread ts>", a subagent's unique key
// (spec B2).
func SubagentThreadKey(channelID, threadTS string) string { return channelID + ":" + threadTS }

// SubagentID derives a subagent's id from its thread key: "sa_" and the
// first 16 hex digits of SHA-256(key), so a thread always maps to the same
// subagent.
func SubagentID(threadKey string) string { return "sa_" + sha256Hex(threadKey)[:16] }

// SubagentSandboxName derives the sandbox name from the thread key:
// "jane-" and the first 12 hex digits of SHA-256(key).
func SubagentSandboxName(threadKey string) string { return "jane-" + sha256Hex(threadKey)[:12] }

// SubagentSessionFile is the transcript path inside the sandbox:
// <sessionsDir>/<id>.jsonl.
func SubagentSessionFile(sessionsDir, id string) string {
	return path.Join(sessionsDir, id+".jsonl")
}

// NewSubagentJobID returns "job_" and 8 random hex digits (janebot takes
// the first 8 characters of a random UUID, which are hex digits too).
func NewSubagentJobID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "job_" + hex.EncodeToString(b[:])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// NewSubagent is a fresh record for a thread (spec B4 "start"): idle, no
// turns, created_at = updated_at = now, identity derived from the thread,
// transcript under sessionsDir.
func NewSubagent(channelID, threadTS, sessionsDir string, now time.Time) Subagent {
	key := SubagentThreadKey(channelID, threadTS)
	id := SubagentID(key)
	ms := now.UnixMilli()
	return Subagent{ID: id, Key: key, ChannelID: channelID, ThreadTS: threadTS,
		SandboxName: SubagentSandboxName(key), PISessionFile: SubagentSessionFile(sessionsDir, id),
		Status: SubagentIdle, CreatedAt: ms, UpdatedAt: ms}
}

// SubagentFilter selects subagent sessions; empty fields do not filter.
// UpdatedBefore and UpdatedAfter bound updated_at (exclusive, epoch ms,
// 0 = unbounded). Listings are ordered by updated_at, newest first, then id;
// Limit 0 means 100; Cursor continues after the previous page.
type SubagentFilter struct {
	ChannelID     string
	Status        SubagentStatus
	UpdatedBefore int64
	UpdatedAfter  int64
	Limit         int
	Cursor        string
}

// Validate checks the status word and the limit; the error is invalid and
// names the field.
func (f SubagentFilter) Validate() error {
	return firstError(unlessEmpty(f.Status, f.Status.Validate), CheckWindow(f.Limit, 0))
}

// SubagentPage is one page of a listing; NextCursor is empty on the last.
type SubagentPage struct {
	Subagents  []Subagent `json:"subagents"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// SubagentService is janebot's subagent store (spec part B). Every method
// returns its storage errors with their codes; none is swallowed, and a
// failed transition leaves the row as it was. Every transition sets
// updated_at = now and runs as one compare-and-set, so a stale job never
// overwrites a newer one: a lost race is a conflict.
type SubagentService interface {
	// GetSubagent returns the record or not_found.
	GetSubagent(ctx context.Context, id string) (Subagent, error)
	// GetSubagentByThread returns the thread's record (by its indexed
	// key) or not_found.
	GetSubagentByThread(ctx context.Context, channelID, threadTS string) (Subagent, error)
	// EnsureSubagent returns the thread's record, creating it with
	// NewSubagent when absent; created says which.
	EnsureSubagent(ctx context.Context, channelID, threadTS, sessionsDir string) (Subagent, bool, error)
	// UpsertSubagent writes s whole (janebot's upsert): inserted when the
	// id is new, else every column but created_at replaced. A thread key
	// held by another id is a conflict.
	UpsertSubagent(ctx context.Context, s Subagent) error
	// ListSubagents returns one page of the records f selects.
	ListSubagents(ctx context.Context, f SubagentFilter) (SubagentPage, error)
	// CountSubagents counts the records f selects (Limit and Cursor
	// ignored).
	CountSubagents(ctx context.Context, f SubagentFilter) (int64, error)
	// DeleteSubagent deletes the record and reports whether it was there.
	// A running record is a conflict unless force.
	DeleteSubagent(ctx context.Context, id string, force bool) (bool, error)
	// PruneSubagents deletes the records with the given statuses (none
	// given: idle and error) last updated before now - olderThan, never a
	// running one, and returns how many.
	PruneSubagents(ctx context.Context, olderThan time.Duration, statuses ...SubagentStatus) (int, error)

	// DispatchJob starts job on an idle or error record: running,
	// running_job_id = job. On a running record it first asks alive (nil
	// means "assume alive"): a job whose process is gone is reset to idle
	// (a compare-and-set on the job it saw) and the dispatch goes ahead;
	// a live one refuses with conflict and JobAlreadyRunning. Unknown id:
	// not_found.
	DispatchJob(ctx context.Context, id, job string, alive func(Subagent) bool) (Subagent, error)
	// CompleteJob ends job successfully: idle, last_job_id = job,
	// running_job_id and last_error cleared, turns + 1. Only while the
	// record is running job; otherwise conflict.
	CompleteJob(ctx context.Context, id, job string) (Subagent, error)
	// FailJob ends job with an error: status error, last_error = message,
	// running_job_id cleared (last_job_id keeps the last success). Only
	// while the record is running job; otherwise conflict.
	FailJob(ctx context.Context, id, job, message string) (Subagent, error)
	// AbortJob stops job: idle, running_job_id cleared. Only while the
	// record is running job; otherwise conflict.
	AbortJob(ctx context.Context, id, job string) (Subagent, error)
	// ReconcileRunning asks alive about every running record and resets
	// those whose process is gone to idle (each a compare-and-set on the
	// job it saw); it returns the ids it reset. Run it at startup.
	ReconcileRunning(ctx context.Context, alive func(Subagent) bool) ([]string, error)
	Close() error
}

// DefaultSubagentPath is where janebot keeps its store (spec B1):
// SESSION_DB_PATH when set and not empty, else
// <WORKSPACE_DIR>/.janebot/state.sqlite, with cwd when WORKSPACE_DIR is
// unset (set but empty, it gives a relative path, as in janebot). lookupEnv
// reads the environment (os.LookupEnv).
func DefaultSubagentPath(lookupEnv func(string) (string, bool), cwd string) string {
	if p, _ := lookupEnv("SESSION_DB_PATH"); p != "" {
		return p
	}
	ws, ok := lookupEnv("WORKSPACE_DIR")
	if !ok {
		ws = cwd
	}
	return filepath.Join(ws, ".janebot", "state.sqlite")
}
