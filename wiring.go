package sessiondb

import (
	"context"
	"regexp"
	"time"
)

// EngageMode is when a wiring's agent answers a message (spec A4).
type EngageMode string

const (
	// EngagePattern engages when EngagePattern matches the text ('.' or ""
	// engages on everything, even empty text).
	EngagePattern EngageMode = "pattern"
	// EngageMention engages when the bot is mentioned (a DM counts).
	EngageMention EngageMode = "mention"
	// EngageMentionSticky engages on a mention, and in a group chat also on
	// every message of a (chat, thread) where the agent already has an
	// active session.
	EngageMentionSticky EngageMode = "mention-sticky"
)

// Validate refuses a word other than the three modes.
func (m EngageMode) Validate() error {
	return checkWord("engage_mode", m, EngagePattern, EngageMention, EngageMentionSticky)
}

// SenderScope is who a wiring answers.
type SenderScope string

const (
	// ScopeAll answers whoever passes the chat's access gate.
	ScopeAll SenderScope = "all"
	// ScopeKnown additionally needs an identified user who may access the
	// agent group (CanAccessAgentGroup).
	ScopeKnown SenderScope = "known"
)

// Validate refuses a word other than all and known.
func (s SenderScope) Validate() error { return checkWord("sender_scope", s, ScopeAll, ScopeKnown) }

// IgnoredMessagePolicy is what a wiring does with a message it does not
// engage on.
type IgnoredMessagePolicy string

const (
	// IgnoredDrop discards it (for this wiring).
	IgnoredDrop IgnoredMessagePolicy = "drop"
	// IgnoredAccumulate stores it as context (mailbox trigger 0) without
	// waking the agent.
	IgnoredAccumulate IgnoredMessagePolicy = "accumulate"
)

// Validate refuses a word other than drop and accumulate.
func (p IgnoredMessagePolicy) Validate() error {
	return checkWord("ignored_message_policy", p, IgnoredDrop, IgnoredAccumulate)
}

// SessionMode is how a wiring picks the session a message lands in (spec
// A4, ResolveSession).
type SessionMode string

const (
	// ModeShared is one session per (agent group, chat).
	ModeShared SessionMode = "shared"
	// ModePerThread is one session per (agent group, chat, thread).
	ModePerThread SessionMode = "per-thread"
	// ModeAgentShared is the agent group's newest active session, whatever
	// the chat.
	ModeAgentShared SessionMode = "agent-shared"
)

// Validate refuses a word other than the three modes.
func (m SessionMode) Validate() error {
	return checkWord("session_mode", m, ModeShared, ModePerThread, ModeAgentShared)
}

// Wiring connects one chat to one agent group: a row of
// messaging_group_agents, unique by (MessagingGroupID, AgentGroupID).
// Backends read NULL engage columns (rows written by other tools) as the
// spec says: engage_mode mention, sender_scope all, ignored_message_policy
// drop; a NULL session_mode is shared (the column's default). An empty
// EngagePattern in pattern mode matches everything, as '.' does.
type Wiring struct {
	ID                   string               `json:"id"`
	MessagingGroupID     string               `json:"messaging_group_id"`
	AgentGroupID         string               `json:"agent_group_id"`
	EngageMode           EngageMode           `json:"engage_mode"`
	EngagePattern        string               `json:"engage_pattern,omitempty"`
	SenderScope          SenderScope          `json:"sender_scope"`
	IgnoredMessagePolicy IgnoredMessagePolicy `json:"ignored_message_policy"`
	SessionMode          SessionMode          `json:"session_mode"`
	Priority             int                  `json:"priority"`
	CreatedAt            time.Time            `json:"created_at"`
}

// WithDefaults returns w with its empty value words replaced by what a
// NULL column reads as (mention, all, drop, shared). Backends call it on
// every row they read.
func (w Wiring) WithDefaults() Wiring {
	if w.EngageMode == "" {
		w.EngageMode = EngageMention
	}
	if w.SenderScope == "" {
		w.SenderScope = ScopeAll
	}
	if w.IgnoredMessagePolicy == "" {
		w.IgnoredMessagePolicy = IgnoredDrop
	}
	if w.SessionMode == "" {
		w.SessionMode = ModeShared
	}
	return w
}

// NewWiring is the input of CreateWiring. An empty ID gets a generated
// "mga-<ms>-<rand6>"; empty value words take the defaults WithDefaults
// gives, except that pattern mode with no pattern stores '.'.
type NewWiring struct {
	ID                   string
	MessagingGroupID     string
	AgentGroupID         string
	EngageMode           EngageMode
	EngagePattern        string
	SenderScope          SenderScope
	IgnoredMessagePolicy IgnoredMessagePolicy
	SessionMode          SessionMode
	Priority             int
}

// Validate checks n: both group ids set, every value word valid (or
// empty), and a pattern only in pattern mode, compiling under Go's RE2
// (CheckEngagePattern). The error is invalid and names the field.
func (n NewWiring) Validate() error {
	w := Wiring{EngageMode: n.EngageMode, EngagePattern: n.EngagePattern, SenderScope: n.SenderScope,
		IgnoredMessagePolicy: n.IgnoredMessagePolicy, SessionMode: n.SessionMode}
	return firstError(
		checkID("id", n.ID, false),
		checkID("messaging_group_id", n.MessagingGroupID, true),
		checkID("agent_group_id", n.AgentGroupID, true),
		w.WithDefaults().validateWords(),
	)
}

// Normalized returns n with the defaults filled in: the value words
// WithDefaults gives and '.' for pattern mode without a pattern.
func (n NewWiring) Normalized() NewWiring {
	w := Wiring{EngageMode: n.EngageMode, SenderScope: n.SenderScope,
		IgnoredMessagePolicy: n.IgnoredMessagePolicy, SessionMode: n.SessionMode}.WithDefaults()
	n.EngageMode, n.SenderScope, n.IgnoredMessagePolicy, n.SessionMode = w.EngageMode, w.SenderScope, w.IgnoredMessagePolicy, w.SessionMode
	if n.EngageMode == EngagePattern && n.EngagePattern == "" {
		n.EngagePattern = MatchEverything
	}
	return n
}

// validateWords checks w's value words and pattern.
func (w Wiring) validateWords() error {
	if err := w.EngageMode.Validate(); err != nil {
		return err
	}
	if w.EngagePattern != "" && w.EngageMode != EngagePattern {
		return Errorf(EINVALID, "engage_pattern is set but engage_mode is %s, not pattern", w.EngageMode)
	}
	if err := CheckEngagePattern(w.EngagePattern); err != nil {
		return err
	}
	if err := w.SenderScope.Validate(); err != nil {
		return err
	}
	if err := w.IgnoredMessagePolicy.Validate(); err != nil {
		return err
	}
	return w.SessionMode.Validate()
}

// MatchEverything is the engage pattern that engages on every message.
const MatchEverything = "."

// CheckEngagePattern refuses a pattern Go's RE2 cannot compile, including
// JavaScript-only syntax (lookaround, backreferences) that NanoClaw
// accepted: invalid, naming engage_pattern, with the compiler's reason.
// The empty pattern and '.' are fine.
func CheckEngagePattern(p string) error {
	if err := checkText("engage_pattern", p, false, MaxNameText); err != nil {
		return err
	}
	if p == "" || p == MatchEverything {
		return nil
	}
	if _, err := regexp.Compile(p); err != nil {
		return Errorf(EINVALID, "engage_pattern %q does not compile as a Go (RE2) regular expression: %v", clip(p), err)
	}
	return nil
}

// WiringUpdate changes the fields that are not nil. Setting EngageMode to
// something other than pattern clears the pattern unless EngagePattern is
// set too (which is then refused).
type WiringUpdate struct {
	EngageMode           *EngageMode
	EngagePattern        *string
	SenderScope          *SenderScope
	IgnoredMessagePolicy *IgnoredMessagePolicy
	SessionMode          *SessionMode
	Priority             *int
}

// Apply returns w changed by u, normalized as NewWiring is, and checked
// as NewWiring.Validate checks (invalid, naming the field). Backends read
// the row, Apply, and write the result in one transaction.
func (u WiringUpdate) Apply(w Wiring) (Wiring, error) {
	w = w.WithDefaults()
	if u.EngageMode != nil {
		w.EngageMode = *u.EngageMode
		if *u.EngageMode != EngagePattern && u.EngagePattern == nil {
			w.EngagePattern = ""
		}
	}
	if u.EngagePattern != nil {
		w.EngagePattern = *u.EngagePattern
	}
	if u.SenderScope != nil {
		w.SenderScope = *u.SenderScope
	}
	if u.IgnoredMessagePolicy != nil {
		w.IgnoredMessagePolicy = *u.IgnoredMessagePolicy
	}
	if u.SessionMode != nil {
		w.SessionMode = *u.SessionMode
	}
	if u.Priority != nil {
		w.Priority = *u.Priority
	}
	if err := w.validateWords(); err != nil {
		return Wiring{}, err
	}
	if w.EngageMode == EngagePattern && w.EngagePattern == "" {
		w.EngagePattern = MatchEverything
	}
	return w, nil
}

// WiringFilter selects wirings; empty fields do not filter.
type WiringFilter struct {
	MessagingGroupID string
	AgentGroupID     string
}

// Wired is what CreateWiring did: the new wiring, and the channel
// destination it added for the agent group (nil when the group already
// had one for that chat).
type Wired struct {
	Wiring      Wiring       `json:"wiring"`
	Destination *Destination `json:"destination,omitempty"`
}

// WiringService keeps the wirings.
type WiringService interface {
	// CreateWiring inserts a wiring (created_at = now) and, in the same
	// transaction, a ('channel', messaging group) destination for the
	// agent group unless it has one for that chat already; the local name
	// is DestinationBaseName of the chat made unique with UniqueLocalName
	// (spec A8). An unknown chat or group is not_found; a second wiring of
	// the same pair, or a taken id, is a conflict. The caller re-projects
	// the group's destinations into its active sessions.
	CreateWiring(ctx context.Context, n NewWiring) (Wired, error)
	// GetWiring returns the wiring or not_found.
	GetWiring(ctx context.Context, id string) (Wiring, error)
	// ListWirings returns the wirings f selects ordered by priority
	// (highest first), then created_at and id: the order the router
	// evaluates them in.
	ListWirings(ctx context.Context, f WiringFilter) ([]Wiring, error)
	// UpdateWiring applies u (WiringUpdate.Apply) and returns the new row;
	// unknown id is not_found.
	UpdateWiring(ctx context.Context, id string, u WiringUpdate) (Wiring, error)
	// DeleteWiring removes the wiring. The destination its creation added
	// stays: permission to send to a chat is kept apart from answering it.
	// Unknown id: not_found.
	DeleteWiring(ctx context.Context, id string) error
}
