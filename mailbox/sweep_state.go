package mailbox

import "time"

// fileSig is what the sweep remembers of a file to notice a change without
// opening it.
type fileSig struct {
	size  int64
	mtime time.Time
	found bool
}

// sweepState is the per-session bookkeeping of the change-driven sweep.
type sweepState struct {
	seen      bool
	dir       fileSig
	inbound   fileSig
	outbound  fileSig
	heartbeat fileSig
	// nextDue is the earliest time a timed event (process_after, retry,
	// system-row expiry) needs the session looked at again; zero = none.
	nextDue time.Time
}
