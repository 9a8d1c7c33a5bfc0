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
// The control plane (spec/control-plane.md): Registry is NanoClaw's
// central registry by aggregate (AgentGroupService, MessagingGroupService,
// WiringService, UserService, AgentSessionService with the session
// resolver, DestinationService, ApprovalService, DroppedService), and
// SubagentService is janebot's subagent store. The decisions taken over
// registry data are pure functions here, so every backend and face shares
// them: CanAccessAgentGroup, HasAdminPrivilege, AccessGate and
// SenderScopeGate (who may talk to an agent), DecideEngage and
// SummarizeEvent (what each wiring does with a message, and the one drop
// an event records), EffectiveSessionMode, Approvers and
// ApprovalDeliveryOrder (who is asked), CheckDelivery (where a session may
// send), the destination naming rules, NormalizeOptions for cards, and
// EnsureUserDM over the registry and a DMOpener. NewID, FormatTimestamp
// and ParseTimestamp are NanoClaw's id and timestamp forms.
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
