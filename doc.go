// Package sessiondb is the domain of the session store for AI agents: the
// plain types, the service interfaces with their contracts, the error codes,
// and pure functions such as title sanitizing and lineage numbering.
//
// It imports nothing outside the standard library. Backends live in their own
// packages: sqlite (the embedded default, whose file is a Hermes Agent
// state.db at schema version 6), and later postgres. The per-session mailbox
// files live in package mailbox.
package sessiondb

import "time"

// Clock returns the current time. Stores take one so tests can set the time;
// nil means time.Now.
type Clock func() time.Time

// EpochSeconds converts t to the REAL epoch seconds state.db stores.
func EpochSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// FromEpochSeconds converts REAL epoch seconds back to a time.Time.
func FromEpochSeconds(s float64) time.Time {
	sec := int64(s)
	return time.Unix(sec, int64((s-float64(sec))*1e9))
}
