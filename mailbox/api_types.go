package mailbox

import (
	"context"
	"errors"
)

// Spawn is what PrepareSpawn writes before a container starts: the session
// routing, the destinations projection (rewritten wholesale) and rows that
// only the fresh container's first poll sees (on_wake=1 is forced).
type Spawn struct {
	Routing      Routing
	Destinations []Destination
	OnWake       []InboundMessage
}

// AckSync counts what SyncAcks mirrored into messages_in.
type AckSync struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// ResetResult counts what ResetProcessing did.
type ResetResult struct {
	Retried     int `json:"retried"`      // rows rescheduled with back-off
	Failed      int `json:"failed"`       // rows failed for good (tries ≥ 5)
	Skipped     int `json:"skipped"`      // already rescheduled
	AcksCleared int `json:"acks_cleared"` // processing acks deleted
}

// DrainResult counts one Drain.
type DrainResult struct {
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`   // marked failed (attempts exhausted or permanent)
	Retrying  int `json:"retrying"` // failed this time, will be retried
	Deferred  int `json:"deferred"` // not attempted (edit target undelivered, deliverer not ready)
	// Skipped is true when another drain of the session was running: the
	// rows are that drain's to deliver.
	Skipped bool `json:"skipped"`
}

// Deliverer hands one outbound row to its destination (a channel adapter,
// another agent's session, or the host action registry for kind='system')
// and returns the platform's message id ("" when there is none, e.g. edits
// and reactions). Returning an error marked with Permanent fails the row at
// once; ErrNotReady leaves it pending without counting an attempt; any
// other error counts an attempt and retries with back-off.
type Deliverer interface {
	Deliver(ctx context.Context, ref SessionRef, row OutboundRow) (platformMessageID string, err error)
}

// DelivererFunc adapts a function to Deliverer.
type DelivererFunc func(ctx context.Context, ref SessionRef, row OutboundRow) (string, error)

// Deliver calls f.
func (f DelivererFunc) Deliver(ctx context.Context, ref SessionRef, row OutboundRow) (string, error) {
	return f(ctx, ref, row)
}

// ErrNotReady is returned by a Deliverer that cannot deliver yet (no channel
// adapter configured): the row stays pending and no attempt is counted.
var ErrNotReady = errors.New("mailbox: deliverer not ready")

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a permanent delivery failure (ACL denial, unknown
// destination, malformed content, no channel): the row fails at once and the
// agent is notified. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// StuckVerdict is DecideStuck's answer.
type StuckVerdict int

// Verdicts of DecideStuck.
const (
	StuckOK StuckVerdict = iota
	StuckKillCeiling
	StuckKillClaim
)

func (v StuckVerdict) String() string {
	switch v {
	case StuckKillCeiling:
		return "kill-ceiling"
	case StuckKillClaim:
		return "kill-claim"
	}
	return "ok"
}
