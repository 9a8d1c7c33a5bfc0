package hostd

import "github.com/sessiondb/sessiondb/mailbox"

// Observer is told what the daemon and its router do, so a metrics
// exporter (the host command's /metrics) can count it without hostd
// knowing any metrics library. Its methods are called from the daemon's
// goroutines, several at once: they must be quick and safe for concurrent
// use.
type Observer interface {
	// Swept reports one session's sweep: its due inbound rows, whether its
	// container was stopped as stuck, and the error that failed the sweep.
	Swept(ref mailbox.SessionRef, due int, stuckStopped bool, err error)
	// Drained reports one drain of a session: what was delivered, failed
	// or retried, or the error that stopped it.
	Drained(ref mailbox.SessionRef, res mailbox.DrainResult, err error)
	// Routed reports one inbound event through the router's endpoint:
	// its outcome and deliveries (the rows appended to mailboxes), or the
	// error that refused it.
	Routed(res RouteResult, err error)
}
