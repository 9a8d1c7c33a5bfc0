package mailbox

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Defaults of AgentOptions and the agent's waits.
const (
	DefaultPollInterval      = time.Second
	DefaultPollLimit         = 10
	DefaultQuestionTimeout   = 300 * time.Second
	DefaultCLIResponseTimout = 30 * time.Second
)

// AgentOptions configure an Agent. Zero values give the defaults.
type AgentOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval is the fallback poll of the waits (default 1 s); file
	// change notification wakes them earlier.
	PollInterval time.Duration
	// NoNotify turns file-change notification off: waits only poll.
	NoNotify bool
	// Provider names the model provider whose continuation a legacy
	// sdk_session_id row is adopted into at open; empty skips adoption (the
	// legacy row is still deleted).
	Provider string
	// WriteBudget bounds the wait for outbound's write lock; default
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// Agent is the container side of one session folder: it reads inbound.db
// read-only (a fresh connection per messages_in poll) and writes outbound.db
// through one long-lived connection. It is safe for concurrent use by the
// goroutines of one process; a second process may open its own Agent on the
// same folder (seq allocation serializes under the write lock).
type Agent struct {
	dir          string
	opts         AgentOptions
	now          func() time.Time
	log          *slog.Logger
	inboundPath  string
	outboundPath string

	out *sql.DB
	w   *sqlitedb.Writer

	mu         sync.Mutex
	lastInSeq  int64
	hasOnWake  int // 0 unknown, 1 yes, -1 no
	watcher    *Watcher
	watchErr   error
	closed     bool
	malformedN int
}

// PollOptions configure Agent.Poll. Limit ≤ 0 means DefaultPollLimit.
type PollOptions struct {
	FirstPoll bool
	Limit     int
}

// OpenAgent opens the session folder dir as its agent: outbound.db read-write
// (created with the contract's DDL when missing; older files get the agent's
// lazy migrations), and adopts a legacy sdk_session_id state row. inbound.db
// is opened later, read-only, per poll.
func OpenAgent(ctx context.Context, dir string, opts AgentOptions) (*Agent, error) {
	return nil, notImplemented("OpenAgent")
}

// Close closes the outbound handle and the watcher.
func (a *Agent) Close() error { return notImplemented("Agent.Close") }

// Dir returns the session folder.
func (a *Agent) Dir() string { return a.dir }

// ClearStaleProcessing deletes processing acks left by a previous container
// (run at start); returns the rows deleted.
func (a *Agent) ClearStaleProcessing(ctx context.Context) (int, error) {
	return 0, notImplemented("ClearStaleProcessing")
}

// Poll returns the next batch, oldest first: the newest opts.Limit due rows
// that are neither acked nor kind='system' (on_wake rows only on FirstPoll),
// the window ending at the newest trigger=1 row when the newest rows are
// all context. A window without a trigger=1 row returns nil: nothing to do.
func (a *Agent) Poll(ctx context.Context, opts PollOptions) ([]InboundRow, error) {
	return nil, notImplemented("Poll")
}

// MarkProcessing acks ids as processing (claimed by this container).
func (a *Agent) MarkProcessing(ctx context.Context, ids ...string) error {
	return notImplemented("MarkProcessing")
}

// MarkCompleted acks ids as completed (idempotent).
func (a *Agent) MarkCompleted(ctx context.Context, ids ...string) error {
	return notImplemented("MarkCompleted")
}

// MarkFailed acks ids as failed.
func (a *Agent) MarkFailed(ctx context.Context, ids ...string) error {
	return notImplemented("MarkFailed")
}

// Send writes m into messages_out with the next odd seq (max over both
// tables, taken under outbound's write lock) and returns the seq. Files are
// copied into outbox/<id>/ first.
func (a *Agent) Send(ctx context.Context, m OutboundMessage) (int64, error) {
	return 0, notImplemented("Send")
}

// MessageIDBySeq names the message with the given seq for edits and
// reactions: even → the inbound id; odd → the delivered platform message id
// if any, else the outbound id. A seq absent from its parity's table is
// looked up in the other. Unknown → not_found.
func (a *Agent) MessageIDBySeq(ctx context.Context, seq int64) (string, error) {
	return "", notImplemented("MessageIDBySeq")
}

// RoutingBySeq returns the routing of the message with the given seq.
func (a *Agent) RoutingBySeq(ctx context.Context, seq int64) (Routing, error) {
	return Routing{}, notImplemented("RoutingBySeq")
}

// SessionRouting returns session_routing row 1 (zero when absent).
func (a *Agent) SessionRouting(ctx context.Context) (Routing, error) {
	return Routing{}, notImplemented("SessionRouting")
}

// DefaultRouting is where a send without a target goes: session_routing if
// set, else the single destination if exactly one exists; not_found
// otherwise.
func (a *Agent) DefaultRouting(ctx context.Context) (Routing, error) {
	return Routing{}, notImplemented("DefaultRouting")
}

// Destinations lists the destinations table by name.
func (a *Agent) Destinations(ctx context.Context) ([]Destination, error) {
	return nil, notImplemented("Destinations")
}

// Destination resolves a destination name; unknown → not_found listing the
// known names.
func (a *Agent) Destination(ctx context.Context, name string) (Destination, error) {
	return Destination{}, notImplemented("Destination")
}

// AwaitQuestionResponse waits (timeout ≤ 0: 300 s) for a pending, unacked
// kind='system' row whose content holds "questionId":"<id>". It is woken by
// inbound changes and polls at PollInterval. Timeout → busy... see errors.
func (a *Agent) AwaitQuestionResponse(ctx context.Context, questionID string, timeout time.Duration) (InboundRow, error) {
	return InboundRow{}, notImplemented("AwaitQuestionResponse")
}

// AwaitCLIResponse waits (timeout ≤ 0: 30 s) for the row cli-resp-<requestID>.
func (a *Agent) AwaitCLIResponse(ctx context.Context, requestID string, timeout time.Duration) (InboundRow, error) {
	return InboundRow{}, notImplemented("AwaitCLIResponse")
}

// WaitInbound blocks until inbound.db changes, PollInterval passes, or ctx
// ends (then ctx's error). The agent's poll loop calls it between polls.
func (a *Agent) WaitInbound(ctx context.Context) error {
	return notImplemented("WaitInbound")
}

// StateGet returns a session_state value; found is false when absent.
func (a *Agent) StateGet(ctx context.Context, key string) (value string, found bool, err error) {
	return "", false, notImplemented("StateGet")
}

// StateSet upserts a session_state value.
func (a *Agent) StateSet(ctx context.Context, key, value string) error {
	return notImplemented("StateSet")
}

// StateDelete deletes a session_state key (absent is not an error).
func (a *Agent) StateDelete(ctx context.Context, key string) error {
	return notImplemented("StateDelete")
}

// StateList returns every session_state key and value.
func (a *Agent) StateList(ctx context.Context) (map[string]string, error) {
	return nil, notImplemented("StateList")
}

// Continuation returns the provider's resume id (key
// continuation:<provider lowercased>), "" when none.
func (a *Agent) Continuation(ctx context.Context, provider string) (string, error) {
	return "", notImplemented("Continuation")
}

// SetContinuation stores the provider's resume id.
func (a *Agent) SetContinuation(ctx context.Context, provider, id string) error {
	return notImplemented("SetContinuation")
}

// ClearContinuation deletes the provider's resume id.
func (a *Agent) ClearContinuation(ctx context.Context, provider string) error {
	return notImplemented("ClearContinuation")
}

// TouchHeartbeat sets .heartbeat's mtime to now, creating it if missing.
func (a *Agent) TouchHeartbeat() error { return notImplemented("TouchHeartbeat") }

// SetToolInFlight records the tool now running and its declared timeout.
func (a *Agent) SetToolInFlight(ctx context.Context, tool string, declaredTimeoutMS int64) error {
	return notImplemented("SetToolInFlight")
}

// ClearToolInFlight records that no tool is running.
func (a *Agent) ClearToolInFlight(ctx context.Context) error {
	return notImplemented("ClearToolInFlight")
}

var _ = sessiondb.EINVALID
