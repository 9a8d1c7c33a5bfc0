package mailbox

import (
	"context"
	"time"

	"github.com/sessiondb/sessiondb"
)

func notImplemented(what string) error {
	return sessiondb.Errorf(sessiondb.EINTERNAL, "mailbox: %s is not implemented yet", what)
}

// InitSession creates the session folder, inbox/ and outbox/, and both
// files with the contract's DDL in journal_mode=DELETE. It is idempotent: an
// existing session is left as it is (older files get the lazy migrations).
func (h *Host) InitSession(ctx context.Context, ref SessionRef) error {
	return notImplemented("InitSession")
}

// Enqueue inserts m into messages_in with the next even seq (INSERT OR
// IGNORE by id): a duplicate id returns the existing row's seq and
// inserted=false. Attachments with base64 data are written to
// inbox/<id>/ first and replaced by localPath.
func (h *Host) Enqueue(ctx context.Context, ref SessionRef, m InboundMessage) (seq int64, inserted bool, err error) {
	return 0, false, notImplemented("Enqueue")
}

// EnqueueTask schedules a kind='task' row and returns its id and seq. A
// non-empty Recurrence must parse (ParseRecurrence).
func (h *Host) EnqueueTask(ctx context.Context, ref SessionRef, t Task) (id string, seq int64, err error) {
	return "", 0, notImplemented("EnqueueTask")
}

// CancelTask completes the live (pending or paused) rows of the task series
// named by id and clears their recurrence. It returns the rows touched.
func (h *Host) CancelTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return 0, notImplemented("CancelTask")
}

// PauseTask pauses the pending rows of the series; returns rows touched.
func (h *Host) PauseTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return 0, notImplemented("PauseTask")
}

// ResumeTask makes the paused rows of the series pending; returns rows
// touched.
func (h *Host) ResumeTask(ctx context.Context, ref SessionRef, id string) (int, error) {
	return 0, notImplemented("ResumeTask")
}

// UpdateTask applies u to the live rows of the series: prompt and script are
// merged into the content JSON (other keys kept); process_after and
// recurrence are set or cleared. It returns the rows touched.
func (h *Host) UpdateTask(ctx context.Context, ref SessionRef, id string, u TaskUpdate) (int, error) {
	return 0, notImplemented("UpdateTask")
}

// CountDue counts due rows with trigger=1: pending, and process_after unset
// or not after now.
func (h *Host) CountDue(ctx context.Context, ref SessionRef) (int, error) {
	return 0, notImplemented("CountDue")
}

// SyncAcks mirrors the agent's completed and failed acks into messages_in
// (pending rows only), in one inbound transaction.
func (h *Host) SyncAcks(ctx context.Context, ref SessionRef) (AckSync, error) {
	return AckSync{}, notImplemented("SyncAcks")
}

// ResetProcessing retries or fails the rows the dead container had claimed
// and deletes its processing acks. Call it only when no container runs.
func (h *Host) ResetProcessing(ctx context.Context, ref SessionRef) (ResetResult, error) {
	return ResetResult{}, notImplemented("ResetProcessing")
}

// ExpireSystemRows fails pending kind='system' rows older than
// SystemRowTTL; returns the rows touched.
func (h *Host) ExpireSystemRows(ctx context.Context, ref SessionRef) (int, error) {
	return 0, notImplemented("ExpireSystemRows")
}

// AdvanceRecurrences inserts the next occurrence of every completed or
// failed row with a recurrence, and clears the source row's recurrence, in
// one transaction. It returns the rows inserted.
func (h *Host) AdvanceRecurrences(ctx context.Context, ref SessionRef) (int, error) {
	return 0, notImplemented("AdvanceRecurrences")
}

// PrepareSpawn readies a session for a fresh container: deletes .heartbeat,
// writes session_routing and destinations, and enqueues s.OnWake rows with
// on_wake=1.
func (h *Host) PrepareSpawn(ctx context.Context, ref SessionRef, s Spawn) error {
	return notImplemented("PrepareSpawn")
}

// WriteDestinations rewrites the destinations table wholesale (one
// transaction).
func (h *Host) WriteDestinations(ctx context.Context, ref SessionRef, ds []Destination) error {
	return notImplemented("WriteDestinations")
}

// WriteSessionRouting upserts session_routing row 1.
func (h *Host) WriteSessionRouting(ctx context.Context, ref SessionRef, r Routing) error {
	return notImplemented("WriteSessionRouting")
}

// ContainerState reads outbound.db's container_state (read-only).
func (h *Host) ContainerState(ctx context.Context, ref SessionRef) (ContainerState, error) {
	return ContainerState{}, notImplemented("ContainerState")
}

// Claims reads the processing_ack rows (read-only).
func (h *Host) Claims(ctx context.Context, ref SessionRef) ([]Claim, error) {
	return nil, notImplemented("Claims")
}

// Heartbeat returns the .heartbeat mtime, zero when absent.
func (h *Host) Heartbeat(ref SessionRef) (time.Time, error) {
	return time.Time{}, notImplemented("Heartbeat")
}

// CheckStuck reads the heartbeat, container state and claims and applies
// DecideStuck at the host clock's now.
func (h *Host) CheckStuck(ctx context.Context, ref SessionRef) (StuckVerdict, error) {
	return StuckOK, notImplemented("CheckStuck")
}

// RecoverHotJournal rolls back a hot outbound journal left by a killed
// agent and deletes orphan processing acks. Call it only once the container
// is confirmed dead. It reports whether a journal was found.
func (h *Host) RecoverHotJournal(ctx context.Context, ref SessionRef) (bool, error) {
	return false, notImplemented("RecoverHotJournal")
}

// RecoverInbound opens inbound.db read-write once so SQLite rolls back a
// journal left by a killed host. Call it for each active session at host
// start.
func (h *Host) RecoverInbound(ctx context.Context, ref SessionRef) error {
	return notImplemented("RecoverInbound")
}

// Drain delivers the session's due outbound rows in seq order through d,
// recording delivered/failed rows and attempts in inbound.db, then syncs
// acks. Only one drain per session runs at a time; an overlapping call
// returns at once with Skipped set.
func (h *Host) Drain(ctx context.Context, ref SessionRef, d Deliverer) (DrainResult, error) {
	return DrainResult{}, notImplemented("Drain")
}

// Sweep runs one tick over every session folder under the root: sync acks,
// wake if due and idle, stuck check if alive, reset if not, recurrences and
// system-row expiry — each session under its own deadline, failures
// reported per session and backed off, never aborting the tick.
func (h *Host) Sweep(ctx context.Context, o SweepOptions) (SweepResult, error) {
	return SweepResult{}, notImplemented("Sweep")
}

// Sessions lists the session folders under the root (folders whose names
// are safe and that hold an inbound.db).
func (h *Host) Sessions(ctx context.Context) ([]SessionRef, error) {
	return nil, notImplemented("Sessions")
}

// InboundRows lists messages_in rows newest first (limit ≤ 0: all), for
// inspection.
func (h *Host) InboundRows(ctx context.Context, ref SessionRef, limit int) ([]InboundRow, error) {
	return nil, notImplemented("InboundRows")
}

// OutboundRows lists messages_out rows newest first (limit ≤ 0: all), for
// inspection.
func (h *Host) OutboundRows(ctx context.Context, ref SessionRef, limit int) ([]OutboundRow, error) {
	return nil, notImplemented("OutboundRows")
}
