// Package sessiondb is the domain of the session store for AI agents: the
// plain types, the service interfaces with their contracts, the error codes,
// and the rules every backend and every face shares.
//
// The rules: each input type has a Validate method (NewSession,
// NewMessage, TokenUpdate, Page, RichFilter, SearchFilter, RetentionPolicy,
// SessionRecord, SessionRef) that every backend calls before it touches
// storage, so all refuse the same input with the same invalid error naming
// the field; CheckWindow and CheckSafeName check paging arguments and names
// used as path segments. FindSession names a session the way people type
// it (exact id, unique id prefix, title). SanitizeTitle and
// NextLineageTitle decide titles.
//
// The services: Store is SessionService, MessageService, ImportService,
// UsageService and RetentionService, the contract storetest holds every
// backend to. SQLiteMaintainer is the optional upkeep of a store kept in
// one SQLite file, which faces reach with a type assertion.
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
