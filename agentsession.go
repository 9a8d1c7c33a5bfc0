package sessiondb

import (
	"context"
	"time"
)

// SessionStatus is a registry session's lifecycle word.
type SessionStatus string

const (
	SessionActive SessionStatus = "active"
	// SessionClosed is set by an admin only; the router never closes a
	// session and never resolves to a closed one.
	SessionClosed SessionStatus = "closed"
)

// ContainerStatus is the registry's view of a session's agent process.
type ContainerStatus string

const (
	ContainerRunning ContainerStatus = "running"
	ContainerIdle    ContainerStatus = "idle"
	ContainerStopped ContainerStatus = "stopped"
)

// Validate refuses a word other than running, idle and stopped.
func (s ContainerStatus) Validate() error {
	return checkWord("container_status", s, ContainerRunning, ContainerIdle, ContainerStopped)
}

// AgentSession is one conversation of an agent group: a row of the
// central sessions table. Its mailbox folder is <root>/<AgentGroupID>/<ID>
// (Ref). MessagingGroupID is empty for sessions reached agent to agent;
// ThreadID is set only for per-thread sessions.
type AgentSession struct {
	ID               string          `json:"id"`
	AgentGroupID     string          `json:"agent_group_id"`
	MessagingGroupID string          `json:"messaging_group_id,omitempty"`
	ThreadID         string          `json:"thread_id,omitempty"`
	AgentProvider    string          `json:"agent_provider,omitempty"`
	Status           SessionStatus   `json:"status"`
	ContainerStatus  ContainerStatus `json:"container_status"`
	LastActive       time.Time       `json:"last_active,omitzero"`
	CreatedAt        time.Time       `json:"created_at"`
}

// Ref names the session's mailbox folder.
func (s AgentSession) Ref() SessionRef {
	return SessionRef{AgentGroupID: s.AgentGroupID, SessionID: s.ID}
}

// SessionLookup is the input of ResolveSession (spec A4).
type SessionLookup struct {
	AgentGroupID     string
	MessagingGroupID string // "" for none (agent-to-agent)
	ThreadID         string // "" for none
	Mode             SessionMode
}

// Validate checks l: the agent group set, ids safe names, the mode one of
// the three. The error is invalid and names the field.
func (l SessionLookup) Validate() error {
	return firstError(
		checkID("agent_group_id", l.AgentGroupID, true),
		checkID("messaging_group_id", l.MessagingGroupID, false),
		checkText("thread_id", l.ThreadID, false, MaxPlatformID),
		l.Mode.Validate(),
	)
}

// Key is the lookup the resolver runs for l, and the row it would insert
// (spec A4): agent-shared looks up by agent group only (any chat); shared
// looks up (agent group, chat, no thread); per-thread looks up (agent
// group, chat, thread), and with no thread finds the shared session, as
// NanoClaw does. A new session stores the thread only for per-thread.
// NoLookup is set when there is nothing to look up (no chat, not
// agent-shared): always a new session.
func (l SessionLookup) Key() SessionKey {
	k := SessionKey{AgentGroupID: l.AgentGroupID, MessagingGroupID: l.MessagingGroupID, AnyChat: l.Mode == ModeAgentShared}
	if l.Mode == ModePerThread {
		k.ThreadID = l.ThreadID
	}
	k.NoLookup = !k.AnyChat && l.MessagingGroupID == ""
	return k
}

// SessionKey is what identifies the session ResolveSession reuses: see
// SessionLookup.Key.
type SessionKey struct {
	AgentGroupID     string
	MessagingGroupID string
	ThreadID         string // "" matches thread_id IS NULL
	AnyChat          bool   // agent-shared: newest active session of the group
	NoLookup         bool   // nothing to reuse: always insert
}

// AgentSessionFilter selects registry sessions; empty fields do not
// filter. Listings are ordered newest first (created_at, then id), and
// paged with Limit (0 means 100) and the opaque Cursor of the previous
// page.
type AgentSessionFilter struct {
	AgentGroupID     string
	MessagingGroupID string
	Status           SessionStatus
	ContainerStatus  ContainerStatus
	Limit            int
	Cursor           string
}

// Validate checks the words and the limit; the error is invalid and names
// the field.
func (f AgentSessionFilter) Validate() error {
	return firstError(
		unlessEmpty(f.Status, func() error { return checkWord("status", f.Status, SessionActive, SessionClosed) }),
		unlessEmpty(f.ContainerStatus, f.ContainerStatus.Validate),
		CheckWindow(f.Limit, 0),
	)
}

// AgentSessionPage is one page of a session listing; NextCursor is empty
// on the last page.
type AgentSessionPage struct {
	Sessions   []AgentSession `json:"sessions"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// AgentSessionService is the session registry and its resolver.
type AgentSessionService interface {
	// ResolveSession returns the active session l.Key() selects, or
	// inserts a new one (id "sess-<ms>-<rand6>", status active, container
	// stopped, created_at = now; thread only for per-thread) and reports
	// created. Lookup and insert run in one write transaction, so
	// concurrent events, in this process or another, never create twins.
	// The lookup is always scoped to the agent group (fan-out safety); of
	// several matches (twins made by other programs) the newest wins.
	// Unknown agent group or chat: not_found. The caller initialises the
	// session's mailbox folder (idempotent) whether or not it was created:
	// a crash between the two must not leave a session without one.
	ResolveSession(ctx context.Context, l SessionLookup) (s AgentSession, created bool, err error)
	// FindActiveSession returns the active session l.Key() selects without
	// creating one; found is false when there is none (the mention-sticky
	// test).
	FindActiveSession(ctx context.Context, l SessionLookup) (s AgentSession, found bool, err error)
	// GetAgentSession returns the session or not_found.
	GetAgentSession(ctx context.Context, id string) (AgentSession, error)
	// ListAgentSessions returns one page of the sessions f selects.
	ListAgentSessions(ctx context.Context, f AgentSessionFilter) (AgentSessionPage, error)
	// TouchSession sets last_active = now (each inbound write). Unknown
	// id: not_found.
	TouchSession(ctx context.Context, id string) error
	// SetContainerStatus records the agent process's state; running also
	// sets last_active = now (a spawn). Unknown id: not_found.
	SetContainerStatus(ctx context.Context, id string, st ContainerStatus) error
	// StopAllContainers marks every running or idle session stopped and
	// returns how many: a host starting up owns no process yet.
	StopAllContainers(ctx context.Context) (int, error)
	// CloseSession sets status closed (admin only); closing a closed
	// session is a no-op. Unknown id: not_found.
	CloseSession(ctx context.Context, id string) error
}
