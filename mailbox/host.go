package mailbox

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Defaults of HostOptions.
const (
	DefaultOpTimeout           = 10 * time.Second
	DefaultSystemRowTTL        = 10 * time.Minute
	DefaultMaxDeliveryAttempts = 3
	DefaultStuckCeiling        = 30 * time.Minute
	DefaultClaimTimeout        = 60 * time.Second
	// MaxTries is the retry count after which a claimed row fails for good.
	MaxTries = 5
)

// HostOptions configure a Host. Zero values give the documented defaults.
type HostOptions struct {
	// Layout locates the session folders (required: Layout.Root).
	Layout Layout
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Location is the time zone recurrences are computed in; nil means UTC.
	Location *time.Location
	// Logger receives debug/warn logs; nil discards them.
	Logger *slog.Logger
	// SharedGID, when > 0, makes folders 0770 and files 0660 owned by that
	// group (the container runs as another uid); else 0700/0600.
	SharedGID int
	// OpTimeout bounds each delivery inside Drain (and a daemon's work on
	// one session); default 10 s.
	OpTimeout time.Duration
	// WriteBudget bounds the wait for a file's write lock; default
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// SystemRowTTL is how long a pending kind='system' row may wait before
	// it is marked failed; default 10 min.
	SystemRowTTL time.Duration
	// MaxDeliveryAttempts is how many failed deliveries make a row failed;
	// default 3.
	MaxDeliveryAttempts int
	// NotifyFailureTrigger makes delivery-failure notifications wake the
	// agent (trigger=1); by default they are context only (trigger=0).
	NotifyFailureTrigger bool
	// OnEnqueue, when set, is called after a row is inserted into a
	// session's inbound.db (not for duplicates), e.g. to bump the central
	// session's last_active. It must not block for long.
	OnEnqueue func(ctx context.Context, ref SessionRef, id string, seq int64)
}

// Host is the host side of every session mailbox under one data root. It
// is safe for concurrent use. Host methods that write inbound.db open it,
// write in one transaction and close it again, so the agent's read-only
// handle never sees stale pages; outbound.db is only ever opened read-only,
// except for recovery once the container is confirmed dead.
type Host struct {
	opts   HostOptions
	layout Layout
	now    func() time.Time
	loc    *time.Location
	log    *slog.Logger
	modes  modes

	mu       sync.Mutex
	sessions map[SessionRef]*hostSession
}

// hostSession is the in-memory state the Host keeps per session: a lock
// that serializes this process's writes to the session's files (so they
// queue instead of spinning on SQLite's lock), the batch writer of its
// inbound.db, a drain flag, and what it remembers of the files.
type hostSession struct {
	lock     chan struct{}
	inbound  *sqlitedb.Writer // created by withInbound, guarded by Host.mu
	draining sync.Mutex

	// guarded by Host.mu
	lastSeq   int64 // last MAX(seq) read from outbound (fallback when unreadable)
	outSeqSig filesig.Sig
	migrated  bool
	badCron   map[string]bool
	// drainMark is the highest seq up to which every outbound row is
	// resolved (delivered or failed), as this Host has seen.
	drainMark int64
}

// NewHost returns a Host over opts.Layout. It opens nothing.
func NewHost(opts HostOptions) (*Host, error) {
	if opts.Layout.Root == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "mailbox host: Layout.Root is empty")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Host{opts: opts, layout: opts.Layout, sessions: map[SessionRef]*hostSession{},
		now: opts.Now, loc: opts.Location, log: opts.Logger}
	h.modes = newModes(opts.SharedGID)
	if h.opts.OpTimeout <= 0 {
		h.opts.OpTimeout = DefaultOpTimeout
	}
	if h.opts.SystemRowTTL <= 0 {
		h.opts.SystemRowTTL = DefaultSystemRowTTL
	}
	if h.opts.MaxDeliveryAttempts <= 0 {
		h.opts.MaxDeliveryAttempts = DefaultMaxDeliveryAttempts
	}
	return h, nil
}

// Layout returns the host's layout.
func (h *Host) Layout() Layout { return h.layout }

// Options returns the options in effect: those given to NewHost with every
// default filled in (clock, zone, logger, timeouts), so that code running
// the host (a daemon) uses the same clock and limits.
func (h *Host) Options() HostOptions { return h.opts }

// Now reads the host's clock.
func (h *Host) Now() time.Time { return h.now() }

func (h *Host) session(ref SessionRef) *hostSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[ref]
	if s == nil {
		s = &hostSession{lock: make(chan struct{}, 1)}
		h.sessions[ref] = s
	}
	return s
}

// lockSession takes the per-session lock, or fails with busy when ctx ends
// first.
func (h *Host) lockSession(ctx context.Context, ref SessionRef) (unlock func(), err error) {
	s := h.session(ref)
	select {
	case s.lock <- struct{}{}:
		return func() { <-s.lock }, nil
	case <-ctx.Done():
		return nil, sessiondb.Wrap(sessiondb.EBUSY, ctx.Err(), "session %s: waiting for this process's other operation on the session", ref)
	}
}
