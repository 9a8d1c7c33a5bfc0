package mailbox

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

func notImplemented(what string) error {
	return sessiondb.Errorf(sessiondb.EINTERNAL, "mailbox: %s is not implemented yet", what)
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
