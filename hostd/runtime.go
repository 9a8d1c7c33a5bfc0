package hostd

import (
	"context"
	"log/slog"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

// Waker starts a container for a session that has due work and none running.
type Waker interface {
	Wake(ctx context.Context, ref mailbox.SessionRef) error
}

// Runtime tells the sweep whether a session's container is running and can
// stop one. Running must be cheap (it is asked for every session of every
// tick). Stop must return only once the container is confirmed dead.
type Runtime interface {
	Running(ref mailbox.SessionRef) bool
	Stop(ctx context.Context, ref mailbox.SessionRef, reason string) error
}

// HeartbeatRuntime is the Runtime for agents the daemon did not start (a
// shell loop, a container managed elsewhere): a session's agent counts as
// running while its .heartbeat is younger than Window. It cannot stop an
// agent: Stop logs and returns nil, so a stuck agent's claims are reset
// like a dead one's.
type HeartbeatRuntime struct {
	Host *mailbox.Host
	// Window is how fresh the heartbeat must be; default
	// mailbox.DefaultStuckCeiling.
	Window time.Duration
	Logger *slog.Logger
}

// Running reports whether ref's .heartbeat is younger than Window.
func (r *HeartbeatRuntime) Running(ref mailbox.SessionRef) bool {
	hb, err := r.Host.Heartbeat(ref)
	if err != nil || hb.IsZero() {
		return false
	}
	return r.Host.Now().Sub(hb) < positiveOr(r.Window, mailbox.DefaultStuckCeiling)
}

// Stop cannot stop an agent it did not start; it logs and returns nil.
func (r *HeartbeatRuntime) Stop(ctx context.Context, ref mailbox.SessionRef, reason string) error {
	if r.Logger != nil {
		r.Logger.Warn("mailbox: agent looks stuck but was not started by this host; resetting its claims", "session", ref.String(), "reason", reason)
	}
	return nil
}
