package sessiondb

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"
)

// Session is one row of the sessions table (Hermes state.db v6). Nullable
// columns are pointers; ModelConfig is the stored JSON text.
type Session struct {
	ID               string   `json:"id"`
	Source           string   `json:"source"`
	UserID           *string  `json:"user_id"`
	Model            *string  `json:"model"`
	ModelConfig      *string  `json:"model_config"`
	SystemPrompt     *string  `json:"system_prompt"`
	ParentSessionID  *string  `json:"parent_session_id"`
	StartedAt        float64  `json:"started_at"`
	EndedAt          *float64 `json:"ended_at"`
	EndReason        *string  `json:"end_reason"`
	MessageCount     int64    `json:"message_count"`
	ToolCallCount    int64    `json:"tool_call_count"`
	InputTokens      int64    `json:"input_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	ReasoningTokens  int64    `json:"reasoning_tokens"`
	BillingProvider  *string  `json:"billing_provider"`
	BillingBaseURL   *string  `json:"billing_base_url"`
	BillingMode      *string  `json:"billing_mode"`
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	ActualCostUSD    *float64 `json:"actual_cost_usd"`
	CostStatus       *string  `json:"cost_status"`
	CostSource       *string  `json:"cost_source"`
	PricingVersion   *string  `json:"pricing_version"`
	Title            *string  `json:"title"`

	// The columns a newer Hermes added (schema 7 to 21,
	// docs/hermes-versions.md), named as its columns are; a store without
	// a column reads its default (NULL, 0).

	// APICallCount counts the model calls of the session (schema 8).
	APICallCount int64 `json:"api_call_count"`
	// Cwd, GitBranch and GitRepoRoot are where the session ran.
	Cwd         *string `json:"cwd"`
	GitBranch   *string `json:"git_branch"`
	GitRepoRoot *string `json:"git_repo_root"`
	// Archived is 1 for a session hidden from listings, kept whole.
	Archived int64 `json:"archived"`
	// RewindCount counts the session's /rewind commands.
	RewindCount int64 `json:"rewind_count"`
	// The gateway's live state: the chat the session serves (schema 17
	// and 18), a cross-platform handoff, compression's back-off.
	SessionKey                      *string  `json:"session_key"`
	ChatID                          *string  `json:"chat_id"`
	ChatType                        *string  `json:"chat_type"`
	ThreadID                        *string  `json:"thread_id"`
	DisplayName                     *string  `json:"display_name"`
	OriginJSON                      *string  `json:"origin_json"`
	ExpiryFinalized                 int64    `json:"expiry_finalized"`
	HandoffState                    *string  `json:"handoff_state"`
	HandoffPlatform                 *string  `json:"handoff_platform"`
	HandoffError                    *string  `json:"handoff_error"`
	CompressionFailureCooldownUntil *float64 `json:"compression_failure_cooldown_until"`
	CompressionFailureError         *string  `json:"compression_failure_error"`
	CompressionFallbackStreak       int64    `json:"compression_fallback_streak"`
}

// NewSession is the input of CreateSession. Source is required. ModelConfig
// is stored as JSON only when it is non-empty (nil or {} store NULL).
type NewSession struct {
	ID              string
	Source          string
	Model           string
	ModelConfig     map[string]any
	SystemPrompt    string
	UserID          string
	ParentSessionID string
}

// Validate checks n as the input of CreateSession: ID set and within
// CheckSessionID's limit, Source set, and ModelConfig encodable as JSON.
// The error is invalid and names the field.
func (n NewSession) Validate() error {
	if n.ID != "" && n.Source == "" {
		return Errorf(EINVALID, "source is required")
	}
	return n.validate()
}

// ValidateFork checks n as the input of ForkSession(src, ...): ID set,
// within CheckSessionID's limit and not src, ModelConfig encodable as
// JSON. Source may be empty (the fork inherits src's). The error is
// invalid and names the field.
func (n NewSession) ValidateFork(src string) error {
	if n.ID != "" && n.ID == src {
		return Errorf(EINVALID, "the fork needs an id of its own")
	}
	return n.validate()
}

func (n NewSession) validate() error {
	if err := CheckSessionID(n.ID); err != nil {
		return err
	}
	if len(n.ModelConfig) > 0 {
		if _, err := json.Marshal(n.ModelConfig); err != nil {
			return Errorf(EINVALID, "model_config cannot be stored as JSON: %v", err)
		}
	}
	return nil
}

// MaxSessionIDBytes is the longest session id a store takes for a new
// session (CreateSession, EnsureSession, ForkSession, ImportSession) or a
// new message (AppendMessage), in bytes. Hermes' ids are 22 to 36 bytes
// (20260315_092437_c9a6ff; a cron run's cron_<12 hex>_<time> is 33, an
// ACP session's UUID 36); 255 is also the longest name of one path
// segment (MaxNameLen). Without a limit an id of 8,000 bytes passed
// import, and every append to it failed on PostgreSQL. A longer id already in a store (a Hermes file) still reads,
// ends, exports and deletes: only new writes naming it are refused.
const MaxSessionIDBytes = 255

// CheckSessionID refuses the id of a new session or message: empty, or
// longer than MaxSessionIDBytes. The error is invalid and names the
// session id (a long one only by its length).
func CheckSessionID(id string) error {
	switch {
	case id == "":
		return Errorf(EINVALID, "session id is empty")
	case len(id) > MaxSessionIDBytes:
		return Errorf(EINVALID, "session id %s is %d bytes, the limit is %d", clipQuote(id, 32), len(id), MaxSessionIDBytes)
	}
	return nil
}

// MaxEndReasonBytes is the longest end reason EndSession takes, in bytes.
// Hermes writes short words (compression, cli_close, cron_complete,
// session_reset; orphaned_compression is the longest, 20 bytes), and its
// API server whatever a client sends, which had no bound here either: a
// reason of 900 KB was stored, and shown in every listing.
const MaxEndReasonBytes = 128

// CheckEndReason refuses the reason of EndSession (or an imported
// end_reason) unless it is one line of text: not empty, at most
// MaxEndReasonBytes, valid UTF-8, without control characters (C0, DEL and
// C1: no NUL, ESC, tab or line break). The error is invalid and names
// end_reason.
func CheckEndReason(reason string) error {
	switch {
	case reason == "":
		return Errorf(EINVALID, "end_reason is empty")
	case len(reason) > MaxEndReasonBytes:
		return Errorf(EINVALID, "end_reason %s is %d bytes, the limit is %d", clipQuote(reason, 32), len(reason), MaxEndReasonBytes)
	case !utf8.ValidString(reason):
		return Errorf(EINVALID, "end_reason %s is not valid UTF-8", clipQuote(reason, 32))
	}
	for _, r := range reason {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return Errorf(EINVALID, "end_reason %s holds a control character: it must be one line of text", clipQuote(reason, 32))
		}
	}
	return nil
}

// TokenUpdate is the input of UpdateTokenCounts. Incremental by default: the
// five token columns are added to; EstimatedCostUSD is added (nil adds 0);
// ActualCostUSD is added only when non-nil; CostStatus, CostSource and
// PricingVersion overwrite when non-nil; Model and the Billing fields only
// fill NULL columns. With Absolute the token columns are set, and
// EstimatedCostUSD replaces (nil resets to 0).
type TokenUpdate struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int64

	Model                                        *string
	EstimatedCostUSD, ActualCostUSD              *float64
	CostStatus, CostSource, PricingVersion       *string
	BillingProvider, BillingBaseURL, BillingMode *string

	Absolute bool
}

// Validate checks that the costs of u, when set, are finite numbers. The
// error is invalid and names the field.
func (u TokenUpdate) Validate() error {
	for _, c := range []struct {
		field string
		v     *float64
	}{{"estimated_cost_usd", u.EstimatedCostUSD}, {"actual_cost_usd", u.ActualCostUSD}} {
		if c.v != nil && (math.IsNaN(*c.v) || math.IsInf(*c.v, 0)) {
			return Errorf(EINVALID, "%s is %v", c.field, *c.v)
		}
	}
	return nil
}

// RichFilter selects sessions for ListSessionsRich, as Hermes'
// list_sessions_rich does. The zero value lists the 20 newest sessions
// Hermes lists (ListableSession: roots and /branch children, never a
// delegate subagent) of every source with compression tips projected
// (set NoProjection to see raw rows), leaving out archived sessions.
type RichFilter struct {
	Source          string
	ExcludeSources  []string
	Limit           int // 0 means 20
	Offset          int
	IncludeChildren bool // every session, children of every kind too
	NoProjection    bool // turns off ProjectCompressionTips (on by default)
	// IncludeArchived also lists the sessions a newer Hermes archived
	// (sessions.archived = 1, schema 21 and later), which Hermes' own
	// listing hides too. A store without that column has none to hide.
	IncludeArchived bool
	// ArchivedOnly lists the archived sessions alone.
	ArchivedOnly bool
	// Cwd keeps the sessions that ran in that directory or below it
	// (CwdFilter).
	Cwd string
	// MinMessages keeps the sessions whose message_count is at least
	// this.
	MinMessages int64
}

// Validate checks f's Limit and Offset with CheckWindow, and MinMessages.
func (f RichFilter) Validate() error {
	if f.MinMessages < 0 {
		return Errorf(EINVALID, "min messages %d is negative", f.MinMessages)
	}
	return CheckWindow(f.Limit, f.Offset)
}

// CwdFilter is how a listing keeps the sessions under a working directory
// (Hermes' cwd_prefix): dir without its trailing / and \ (all of it when
// nothing else is left) is the session's cwd, or a prefix of it followed
// by / or \. Unlike Hermes' LIKE, the comparison is exact: _ and % are no
// wildcards and case counts, as in a path. prefixes are what a cwd may
// start with; exact what it may equal.
func CwdFilter(dir string) (exact string, prefixes [2]string) {
	exact = strings.TrimRight(dir, `/\`)
	if exact == "" {
		exact = dir
	}
	return exact, [2]string{exact + "/", exact + `\`}
}

// CheckWindow refuses a negative limit or offset of a listing (invalid,
// naming which); a limit of 0 means the listing's default size. Listings
// that take them as arguments (SearchSessions) and the filters' Validate
// share it.
func CheckWindow(limit, offset int) error {
	if limit < 0 {
		return Errorf(EINVALID, "limit %d is negative", limit)
	}
	if offset < 0 {
		return Errorf(EINVALID, "offset %d is negative", offset)
	}
	return nil
}

// DefaultLimit is the page size of SearchSessions, ListSessionsRich and
// SearchMessages when the caller passes a limit of 0.
const DefaultLimit = 20

// PageSize is the page size for a limit CheckWindow accepted: DefaultLimit
// for 0.
func PageSize(limit int) int {
	if limit == 0 {
		return DefaultLimit
	}
	return limit
}

// RichSession is a session row plus its preview and last activity. When a
// compression chain was projected onto its root, LineageRootID names the
// root whose started_at the row keeps.
type RichSession struct {
	Session
	Preview       string  `json:"preview"`
	LastActive    float64 `json:"last_active"`
	LineageRootID string  `json:"_lineage_root_id,omitempty"`
	// Chain is set on a compression root shown as its chain's tip
	// (ShowTip): the whole chain's figures, Key the root's id, Sessions
	// the chain's length, counters and costs summed over its sessions.
	// The row's own fields stay Hermes' projection (the tip's counts,
	// the root's tokens and cost), so a face shows a chain's row from
	// Chain alone, every figure a total, and says so.
	Chain *UsageRow `json:"chain,omitempty"`
}

// ShowTip shows on r, the root of a compression chain, the chain's tip t
// (the projection of ListSessionsRich and ListSessions): the tip's id, end,
// counts, title, activity, preview, model, prompt and working directory
// (as Hermes' list_sessions_rich projects them), with LineageRootID naming
// the root whose started_at r keeps.
func (r *RichSession) ShowTip(t *RichSession) {
	root := r.ID
	r.ID, r.EndedAt, r.EndReason = t.ID, t.EndedAt, t.EndReason
	r.MessageCount, r.ToolCallCount, r.Title = t.MessageCount, t.ToolCallCount, t.Title
	r.LastActive, r.Preview, r.Model, r.SystemPrompt = t.LastActive, t.Preview, t.Model, t.SystemPrompt
	r.Cwd, r.GitBranch, r.GitRepoRoot = t.Cwd, t.GitBranch, t.GitRepoRoot
	r.LineageRootID = root
}

// SessionService is the session half of the history store contract
// (spec/history-store.md section 5). Every method is safe for concurrent use.
type SessionService interface {
	// CreateSession inserts a session with started_at = now, or fills the
	// NULL columns of an existing one (IMP-3). An unknown parent is invalid.
	CreateSession(ctx context.Context, s NewSession) (string, error)
	// EnsureSession inserts (id, source, model, now) if absent; else no-op.
	// An empty source means "unknown".
	EnsureSession(ctx context.Context, id, source, model string) error
	// EndSession sets ended_at and end_reason unless already ended: the first
	// reason wins. Unknown ids are a no-op; a reason CheckEndReason refuses
	// is invalid.
	EndSession(ctx context.Context, id, reason string) error
	// ReopenSession clears ended_at and end_reason.
	ReopenSession(ctx context.Context, id string) error
	UpdateSystemPrompt(ctx context.Context, id, prompt string) error
	// UpdateTokenCounts applies u (see TokenUpdate); unknown id is a no-op.
	UpdateTokenCounts(ctx context.Context, id string, u TokenUpdate) error
	// GetSession returns the row or a not_found error.
	GetSession(ctx context.Context, id string) (*Session, error)
	// ResolveSessionID resolves an exact id or a unique prefix: none is
	// not_found, two or more conflict, "" invalid.
	ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error)
	// SearchSessions lists sessions newest first; "" source means all.
	SearchSessions(ctx context.Context, source string, limit, offset int) ([]Session, error)
	SessionCount(ctx context.Context, source string) (int64, error)
	MessageCount(ctx context.Context, sessionID string) (int64, error)
	// CompressionTip follows compression continuations (at most 100 hops)
	// and returns the newest; the input when there is none.
	CompressionTip(ctx context.Context, id string) (string, error)
	ListSessionsRich(ctx context.Context, f RichFilter) ([]RichSession, error)
	// ListSessions returns one page of the sessions q selects, in q's
	// order, with the cursor of the next page: keyset paging, never an
	// offset (see SessionQuery). Invalid for what q.Validate refuses.
	ListSessions(ctx context.Context, q SessionQuery) (*SessionPage, error)

	// SetSessionTitle sanitizes and sets a title ("" clears it). A title held
	// by another session is a conflict, unless that session is a compression
	// ancestor of id, whose title then moves to id (IMP-15). Returns whether
	// a row was updated.
	SetSessionTitle(ctx context.Context, id, title string) (bool, error)
	GetSessionTitle(ctx context.Context, id string) (string, bool, error)
	GetSessionByTitle(ctx context.Context, title string) (*Session, error)
	ResolveSessionByTitle(ctx context.Context, title string) (string, error)
	NextTitleInLineage(ctx context.Context, title string) (string, error)

	// ForkSession copies src's messages up to atMessageID into a new child
	// session (IMP-11), never separating a tool call from its results.
	ForkSession(ctx context.Context, src string, atMessageID int64, s NewSession) (string, error)

	ClearMessages(ctx context.Context, id string) error
	// DeleteSession deletes the session, its messages and, as Hermes'
	// delete_session does, its delegate subagents with theirs (DelegatesOf);
	// its other children (branches, compression continuations, untagged
	// ones) are orphaned. It returns the ids it deleted, id first, then the
	// delegates sorted; none when the session did not exist.
	DeleteSession(ctx context.Context, id string) ([]string, error)
	// DelegatesOf returns the ids of the delegate subagent sessions that
	// DeleteSession(id) deletes with id (sessiondb.Delegates), sorted.
	DelegatesOf(ctx context.Context, id string) ([]string, error)
	// PruneSessions deletes ended sessions started more than olderThanDays
	// ago (optionally of one source), orphaning their children, delegates
	// too: Hermes' prune_sessions cascades nothing.
	PruneSessions(ctx context.Context, olderThanDays float64, source string) (int, error)
	// SetSessionArchived sets (archived) or clears the archived flag of
	// the session's whole compression lineage, as Hermes'
	// set_session_archived does (ArchiveLineageSQL), and returns how many
	// sessions it set: 0 when there is no such session. Archived sessions
	// keep every row; listings leave them out unless asked. A store
	// without the column (a schema-6 file) is invalid.
	SetSessionArchived(ctx context.Context, id string, archived bool) (int64, error)
}
