package hostd

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Defaults of LeaseConfig.
const (
	DefaultLeaseTTL = 30 * time.Second
	// DefaultEventTTL is how long a routed event's key is remembered: an
	// adapter redelivering an event later than that gets it routed again.
	DefaultEventTTL = 24 * time.Hour
)

// LeaseConfig configures Leases. Service and Host are required.
type LeaseConfig struct {
	// Service is the registry's lease service (the PostgreSQL registry).
	Service sessiondb.HostLeaseService
	// Host names this host daemon; every host sharing the registry needs
	// its own.
	Host string
	// TTL is how long a lease lasts unless renewed; it is renewed every
	// TTL/3, and another host takes a dead host's sessions once it has run
	// out. Default DefaultLeaseTTL.
	TTL time.Duration
	// EventTTL is how long routed events are remembered; default
	// DefaultEventTTL.
	EventTTL time.Duration
	// Now is the clock; nil is time.Now. The hosts' clocks must agree to
	// well within TTL (the registry compares each host's own reading).
	Now sessiondb.Clock
	// Logger receives lease changes; nil discards them.
	Logger *slog.Logger
}

// Leases is one host daemon's share of the sessions when several hosts
// share one central registry (sessiondb.HostLeaseService): it takes a
// session's lease before the host writes into, wakes or delivers for the
// session, renews every lease it holds while the host lives (Start), and
// hands them back when it stops cleanly (Stop). A session is served by one
// host at a time: a lease is trusted only until a quarter of TTL before the
// registry's expiry, so a host that cannot renew (cut off, or too slow)
// stops serving its sessions before another host may take them.
type Leases struct {
	svc sessiondb.HostLeaseService
	cfg LeaseConfig
	log *slog.Logger

	mu   sync.Mutex
	held map[string]heldLease
	// lastPrune is when routed events were last pruned.
	lastPrune time.Time

	stop chan struct{}
	done chan struct{}
	// stopped: the host no longer serves sessions; it takes no lease.
	stopped bool
}

// heldLease is a lease this host holds: its epoch, and until when this
// host trusts it.
type heldLease struct {
	epoch int64
	until time.Time
	// at is when the claim or renewal that set until began.
	at time.Time
}

// NewLeases checks cfg and returns a Leases holding nothing yet.
func NewLeases(cfg LeaseConfig) (*Leases, error) {
	if cfg.Service == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "leases: LeaseConfig.Service is required")
	}
	if err := sessiondb.CheckHost(cfg.Host); err != nil {
		return nil, err
	}
	if cfg.TTL < 0 || cfg.EventTTL < 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "leases: negative TTL")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Leases{svc: cfg.Service, cfg: cfg, log: cfg.Logger, held: map[string]heldLease{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// Host is this host's name.
func (l *Leases) Host() string { return l.cfg.Host }

// TTL is the lease duration.
func (l *Leases) TTL() time.Duration { return l.cfg.TTL }

// trust is how long after a claim or renewal began this host serves under
// the lease: a quarter of TTL before the registry lets another host take it.
func (l *Leases) trust(start time.Time) time.Time { return start.Add(l.cfg.TTL - l.cfg.TTL/4) }

// Acquire makes sure this host holds the session's lease: at once when it
// holds one it trusts, else by claiming it in the registry. held false
// names the host that serves the session instead.
func (l *Leases) Acquire(ctx context.Context, sessionID string) (held bool, holder string, err error) {
	if l.Holds(sessionID) {
		return true, l.cfg.Host, nil
	}
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		// A row routed while the host stops is handed off: the next host
		// to claim the session writes it.
		return false, "", nil
	}
	start := l.cfg.Now()
	lease, held, err := l.svc.ClaimSession(ctx, sessionID, l.cfg.Host, l.cfg.TTL)
	if err != nil {
		return false, "", err
	}
	l.mu.Lock()
	prev, had := l.held[sessionID]
	if held {
		l.held[sessionID] = heldLease{epoch: lease.Epoch, until: l.trust(start), at: start}
	} else {
		delete(l.held, sessionID)
	}
	l.mu.Unlock()
	switch {
	case held && had && prev.epoch != lease.Epoch:
		l.log.Warn("leases: session taken back after another host served it", "session", sessionID, "epoch", lease.Epoch)
	case held && !had:
		l.log.Debug("leases: serving session", "session", sessionID, "epoch", lease.Epoch)
	case !held && had:
		l.log.Warn("leases: session lost to another host", "session", sessionID, "host", lease.Host)
	}
	return held, lease.Host, nil
}

// Holds reports whether this host serves the session now: it holds its
// lease and the lease has not come near its expiry unrenewed.
func (l *Leases) Holds(sessionID string) bool {
	l.mu.Lock()
	h, ok := l.held[sessionID]
	l.mu.Unlock()
	return ok && l.cfg.Now().Before(h.until)
}

// Epoch returns the fencing epoch of the session's lease as this host
// holds it, or 0 when it does not hold it.
func (l *Leases) Epoch(sessionID string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[sessionID]; ok && l.cfg.Now().Before(h.until) {
		return h.epoch
	}
	return 0
}

// ClaimEvent reports whether this host is the first to route the event
// named key (sessiondb.HostLeaseService.ClaimEvent).
func (l *Leases) ClaimEvent(ctx context.Context, key string) (bool, error) {
	return l.svc.ClaimEvent(ctx, key, l.cfg.Host)
}

// Renew extends every lease this host holds, in one write, and forgets
// those it no longer holds (they ran out: another host may serve them
// now). Once an hour it also prunes the routed events older than
// EventTTL.
func (l *Leases) Renew(ctx context.Context) error {
	start := l.cfg.Now()
	got, err := l.svc.RenewSessions(ctx, l.cfg.Host, l.cfg.TTL)
	if err != nil {
		return err
	}
	renewed := make(map[string]int64, len(got))
	for _, g := range got {
		renewed[g.SessionID] = g.Epoch
	}
	var lost []string
	l.mu.Lock()
	for id, h := range l.held {
		if e, ok := renewed[id]; ok && e == h.epoch {
			l.held[id] = heldLease{epoch: e, until: l.trust(start), at: start}
			continue
		}
		if !h.at.Before(start) {
			continue // claimed while the renewal was under way
		}
		delete(l.held, id)
		lost = append(lost, id)
	}
	prune := start.Sub(l.lastPrune) >= time.Hour || start.Before(l.lastPrune)
	if prune {
		l.lastPrune = start
	}
	l.mu.Unlock()
	for _, id := range lost {
		l.log.Warn("leases: lease ran out before it was renewed; the session is left to whichever host claims it", "session", id)
	}
	if prune {
		if _, err := l.svc.PruneEvents(ctx, l.cfg.EventTTL); err != nil {
			l.log.Warn("leases: could not prune routed events", "err", err)
		}
	}
	return nil
}

// Start renews the leases every TTL/3 until Stop.
func (l *Leases) Start(ctx context.Context) {
	l.mu.Lock()
	if l.stop != nil {
		l.mu.Unlock()
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	stop, done := l.stop, l.done
	l.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(done)
		t := time.NewTicker(l.cfg.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, l.cfg.TTL/3)
				if err := l.Renew(rctx); err != nil {
					l.log.Warn("leases: renewal failed; sessions are served until their leases come near expiry", "err", err)
				}
				cancel()
			}
		}
	}()
}

// Stop ends the renewals and hands every lease back, so another host may
// serve the sessions at once; from then on Acquire takes no lease (rows
// routed meanwhile are handed off to whichever host claims the session).
// Call it once the host no longer delivers or wakes anything.
func (l *Leases) Stop(ctx context.Context) {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop = nil
	l.stopped = true
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	l.held = map[string]heldLease{}
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	for _, id := range ids {
		if err := l.svc.ReleaseSession(ctx, id, l.cfg.Host); err != nil {
			l.log.Warn("leases: could not release a session; another host takes it once the lease runs out", "session", id, "err", err)
		}
	}
}

// NotServing returns, for a registry that several hosts share (one with
// sessiondb.HostLeaseService), the Leases of a process that routes but
// serves no session (`sessiondb route --direct`, `admin`): it claims each
// event as the hosts do, and hands every row off to the host serving its
// session (or the next to claim it), never writing a mailbox of its own.
// For other registries it returns nil: the process writes the mailboxes
// under its data root, as the one host does.
func NotServing(reg sessiondb.Registry, name string) *Leases {
	svc, ok := reg.(sessiondb.HostLeaseService)
	if !ok {
		return nil
	}
	return &Leases{svc: svc, cfg: LeaseConfig{Service: svc, Host: name, TTL: DefaultLeaseTTL, EventTTL: DefaultEventTTL, Now: time.Now},
		log: slog.New(slog.DiscardHandler), held: map[string]heldLease{}, stopped: true}
}
