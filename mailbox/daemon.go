package mailbox

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Defaults of DaemonOptions.
const (
	DefaultDaemonPoll   = time.Second
	DefaultFullSweep    = 60 * time.Second
	DefaultDrainWorkers = 2
)

// DaemonOptions configure a Daemon. Zero values give the defaults.
type DaemonOptions struct {
	// Deliverer hands channel rows to their destination. The daemon puts a
	// HostDeliverer in front of it, which runs kind='system' actions and
	// agent-to-agent rows itself. Nil leaves channel rows pending (nothing
	// is lost: a later daemon with a deliverer sends them).
	Deliverer Deliverer
	// Waker starts a container for a session with due work and none
	// running; nil never wakes (agents are started some other way).
	Waker Waker
	// Runtime says which containers run and stops stuck ones. Nil: the
	// Waker when it is also a Runtime (ExecWaker is), else a
	// HeartbeatRuntime (agents started outside the daemon).
	Runtime Runtime
	// Logger receives the daemon's logs; nil discards them.
	Logger *slog.Logger
	// Poll is the change-detection tick: every Poll the daemon runs the
	// Host's changed-only sweep and drains sessions whose outbound.db
	// changed or whose container runs. Default 1 s.
	Poll time.Duration
	// FullSweep is the interval of sweeps (and drains) over every session,
	// changed or not. Default 60 s.
	FullSweep time.Duration
	// DrainWorkers is how many sessions are drained at once; default 2. A
	// slow destination holds one worker, never the whole loop.
	DrainWorkers int
	// StopTimeout bounds stopping the waker's containers when Run ends;
	// default DefaultStopGrace plus a second.
	StopTimeout time.Duration
}

// Daemon runs a Host's loops over every session folder under its data
// root: the sweep (acks, wake, stuck check, reset of dead containers'
// claims, recurrences, system-row expiry), and delivery. Sessions are
// handled independently: a failing session is backed off exponentially
// (BackoffMin → BackoffMax of the Host) and never stalls the others.
//
// Delivery runs on its own workers, one drain per session at a time;
// triggers that arrive during a drain (outbound change, the Poll tick while
// the container runs, the full sweep, the container's exit, a due retry)
// coalesce into one more drain after it.
type Daemon struct {
	h    *Host
	opts DaemonOptions
	rt   Runtime
	log  *slog.Logger
	del  Deliverer // HostDeliverer in front of opts.Deliverer

	stopping atomic.Bool

	mu       sync.Mutex
	slots    map[SessionRef]*drainSlot
	queue    []SessionRef
	wakeQ    chan struct{}
	closed   bool
	watchers map[SessionRef]*Watcher
	lastFull time.Time
	running  bool
	// sweepErr is the last sweep error per session, for the status file.
	sweepErr map[SessionRef]string

	// status file bookkeeping, used by the tick loop only
	started      time.Time
	lastHealth   []byte
	lastStatusAt time.Time
}

// drainSlot is the daemon's delivery bookkeeping for one session.
type drainSlot struct {
	queued, active, again bool
	outSig                fileSig
	failures              int
	backoffUntil          time.Time
	// retryAt is when a delivery retry or a deliver_after falls due.
	retryAt time.Time
	lastErr string
}

// NewDaemon returns a daemon for h. It starts nothing until Run.
func NewDaemon(h *Host, o DaemonOptions) (*Daemon, error) {
	if h == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "daemon: no host")
	}
	if o.Poll <= 0 {
		o.Poll = DefaultDaemonPoll
	}
	if o.FullSweep <= 0 {
		o.FullSweep = DefaultFullSweep
	}
	if o.DrainWorkers <= 0 {
		o.DrainWorkers = DefaultDrainWorkers
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopGrace + time.Second
	}
	d := &Daemon{h: h, opts: o, log: o.Logger, slots: map[SessionRef]*drainSlot{},
		wakeQ: make(chan struct{}, 1), watchers: map[SessionRef]*Watcher{}, sweepErr: map[SessionRef]string{}}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.del = &HostDeliverer{Host: h, Next: o.Deliverer, Logger: d.log}
	d.rt = o.Runtime
	if d.rt == nil {
		if r, ok := o.Waker.(Runtime); ok {
			d.rt = r
		} else {
			d.rt = &HeartbeatRuntime{Host: h, Logger: d.log}
		}
	}
	return d, nil
}

// RequestDrain asks for one drain of ref soon; while a drain of ref runs,
// requests coalesce into one more drain after it. Safe to call at any time,
// also before Run and after it returned (then it does nothing).
func (d *Daemon) RequestDrain(ref SessionRef) {
	if ref.Validate() != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	s := d.slot(ref)
	if s.active {
		s.again = true
		return
	}
	d.enqueueLocked(ref, s)
}

// enqueueLocked queues ref once; d.mu must be held.
func (d *Daemon) enqueueLocked(ref SessionRef, s *drainSlot) {
	if s.queued {
		return
	}
	s.queued = true
	d.queue = append(d.queue, ref)
	select {
	case d.wakeQ <- struct{}{}:
	default:
	}
}

// slot must be called with d.mu held.
func (d *Daemon) slot(ref SessionRef) *drainSlot {
	s := d.slots[ref]
	if s == nil {
		s = &drainSlot{}
		d.slots[ref] = s
	}
	return s
}

// Run runs the loops until ctx ends, then stops cleanly and returns nil:
// no new delivery starts, a delivery in flight finishes and is recorded
// (its recording is not cancelled with ctx), the waker's containers are
// stopped, and only then does Run return — so nothing is lost and nothing
// is delivered twice by a daemon started afterwards. At start it opens each
// session's inbound.db once to roll back a journal left by a killed host.
// Run may be called once.
func (d *Daemon) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return sessiondb.Errorf(sessiondb.EINVALID, "daemon: Run called twice")
	}
	d.running = true
	d.mu.Unlock()
	if w, ok := d.opts.Waker.(*ExecWaker); ok {
		// One drain right after the container exits: what it wrote last
		// goes out now, not at the next sweep.
		w.addOnExit(func(ref SessionRef, _ error) { d.RequestDrain(ref) })
	}

	d.started = d.h.now()
	d.recoverAll(ctx)

	// Drains are detached from ctx: once started, a delivery must be
	// recorded even when ctx ends, or a later daemon would send it again.
	drainCtx := context.WithoutCancel(ctx)
	var workers sync.WaitGroup
	for range d.opts.DrainWorkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			d.drainWorker(drainCtx)
		}()
	}

	d.tick(ctx)
	t := time.NewTicker(d.opts.Poll)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
			d.tick(ctx)
		}
	}
	t.Stop()

	d.log.Info("mailbox: daemon stopping")
	d.stopping.Store(true)
	d.mu.Lock()
	d.closed = true
	d.queue = nil
	for _, s := range d.slots {
		s.queued, s.again = false, false
	}
	watchers := d.watchers
	d.watchers = map[SessionRef]*Watcher{}
	d.mu.Unlock()
	close(d.wakeQ)
	workers.Wait()
	for _, w := range watchers {
		w.Close()
	}
	if w, ok := d.opts.Waker.(interface {
		StopAll(context.Context, string)
	}); ok {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.StopTimeout)
		w.StopAll(sctx, "host stopping")
		cancel()
	}
	if err := os.Remove(filepath.Join(d.h.layout.Root, HostStatusFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn("mailbox: cannot remove the host status file", "err", err)
	}
	d.log.Info("mailbox: daemon stopped")
	return nil
}

// recoverAll opens each session's inbound.db read-write once (contract
// section 14), each under its own deadline; failures are logged.
func (d *Daemon) recoverAll(ctx context.Context) {
	refs, err := d.h.Sessions(ctx)
	if err != nil {
		d.log.Warn("mailbox: cannot list sessions", "root", d.h.layout.Root, "err", err)
		return
	}
	for _, ref := range refs {
		if ctx.Err() != nil {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, d.h.opts.OpTimeout)
		if err := d.h.RecoverInbound(sctx, ref); err != nil {
			d.log.Warn("mailbox: inbound recovery failed", "session", ref.String(), "err", err)
		}
		cancel()
	}
}

// tick runs one sweep (full every FullSweep, else changed-only) and queues
// the drains it calls for.
func (d *Daemon) tick(ctx context.Context) {
	now := d.h.now()
	d.mu.Lock()
	full := d.lastFull.IsZero() || now.Sub(d.lastFull) >= d.opts.FullSweep || now.Before(d.lastFull)
	if full {
		d.lastFull = now
	}
	d.mu.Unlock()
	var waker Waker
	if d.opts.Waker != nil {
		waker = gatedWaker{d}
	}
	// The sweep never drains itself (Deliverer nil): delivery runs on the
	// workers, detached from ctx, so cancelling a sweep never cuts a
	// delivery off between the send and its record.
	res, err := d.h.Sweep(ctx, SweepOptions{Runtime: d.rt, Waker: waker, Full: full})
	if err != nil && ctx.Err() == nil {
		d.log.Warn("mailbox: sweep failed", "err", err)
	}
	d.mu.Lock()
	for _, e := range res.Errors {
		d.sweepErr[e.Ref] = e.Message
	}
	d.mu.Unlock()
	for _, e := range res.Errors {
		if ctx.Err() == nil {
			d.log.Warn("mailbox: session sweep failed; backing off", "session", e.Ref.String(), "code", e.Code, "err", e.Message)
		}
	}
	for _, r := range res.Woken {
		d.log.Info("mailbox: woke session", "session", r.String())
	}
	for _, r := range res.Stopped {
		d.log.Warn("mailbox: stopped stuck container", "session", r.String())
	}
	for _, r := range res.Quarantined {
		d.log.Error("mailbox: session quarantined (corrupt file); skipped until its files change", "session", r.String())
	}
	if ctx.Err() != nil {
		return
	}
	refs, err := d.h.listSessions()
	if err != nil {
		return
	}
	var drain []SessionRef
	// running holds every folder whose container runs (for the status
	// file); live only those that are sessions (watched for delivery).
	running, live := map[SessionRef]bool{}, map[SessionRef]bool{}
	d.mu.Lock()
	for _, ref := range refs {
		run := d.rt.Running(ref)
		if run {
			running[ref] = true
		}
		dir := filepath.Join(d.h.layout.Root, ref.AgentGroupID, ref.SessionID)
		sig := statSig(filepath.Join(dir, OutboundFile))
		if !sig.found || !statSig(filepath.Join(dir, InboundFile)).found {
			continue // not a session (yet): nothing to deliver, nowhere to record
		}
		if run {
			live[ref] = true
		}
		s := d.slot(ref)
		changed := sig != s.outSig
		s.outSig = sig
		due := !s.retryAt.IsZero() && !now.Before(s.retryAt)
		backedOff := now.Before(s.backoffUntil)
		retryAfterBackoff := s.failures > 0 && !backedOff
		if backedOff {
			continue
		}
		if full || changed || run || due || retryAfterBackoff {
			drain = append(drain, ref)
		}
	}
	d.mu.Unlock()
	d.syncWatchers(live)
	for _, ref := range drain {
		d.RequestDrain(ref)
	}
	d.writeStatus(refs, running, full)
}

// syncWatchers keeps a file watcher on the folder of every session whose
// container runs, so its outbound writes are delivered at once rather than
// at the next tick.
func (d *Daemon) syncWatchers(live map[SessionRef]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	for ref, w := range d.watchers {
		if !live[ref] {
			w.Close()
			delete(d.watchers, ref)
		}
	}
	for ref := range live {
		if d.watchers[ref] != nil {
			continue
		}
		dir, err := d.h.layout.SessionDir(ref)
		if err != nil {
			continue
		}
		w, err := NewWatcher(dir, []string{OutboundFile, OutboundFile + "-journal"}, WatchOptions{Interval: d.opts.Poll})
		if err != nil {
			continue
		}
		d.watchers[ref] = w
		go func() {
			for {
				select {
				case <-w.done:
					return
				case <-w.C():
					d.RequestDrain(ref)
				}
			}
		}()
	}
}

// next takes the next queued session, or reports false once Run is ending.
func (d *Daemon) next() (SessionRef, bool) {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return SessionRef{}, false
		}
		if len(d.queue) > 0 {
			ref := d.queue[0]
			d.queue = d.queue[1:]
			s := d.slot(ref)
			s.queued, s.active = false, true
			d.mu.Unlock()
			return ref, true
		}
		d.mu.Unlock()
		if _, ok := <-d.wakeQ; !ok {
			return SessionRef{}, false
		}
	}
}

func (d *Daemon) drainWorker(ctx context.Context) {
	del := gatedDeliverer{d}
	for {
		ref, ok := d.next()
		if !ok {
			return
		}
		res, err := d.h.Drain(ctx, ref, del)
		var retryAt time.Time
		if err == nil {
			retryAt, err = d.h.nextDeliveryDue(ctx, ref)
		}
		now := d.h.now()
		d.mu.Lock()
		s := d.slot(ref)
		s.active = false
		if err != nil {
			s.failures++
			backoff := d.h.opts.BackoffMax
			if s.failures < 30 {
				backoff = min(d.h.opts.BackoffMin<<(s.failures-1), d.h.opts.BackoffMax)
			}
			s.backoffUntil = now.Add(backoff)
			s.lastErr = err.Error()
			s.again = false
		} else {
			s.failures, s.backoffUntil, s.lastErr = 0, time.Time{}, ""
			s.retryAt = retryAt
		}
		// A follow-up is queued in the same critical section, so the slot
		// never looks idle while one is owed.
		if (s.again || res.Skipped) && !d.closed {
			d.enqueueLocked(ref, s)
		}
		s.again = false
		d.mu.Unlock()
		switch {
		case err != nil && !d.stopping.Load():
			d.log.Warn("mailbox: drain failed; backing off", "session", ref.String(), "code", sessiondb.ErrorCode(err), "err", err)
		case res.Delivered+res.Failed+res.Retrying > 0:
			d.log.Info("mailbox: drained", "session", ref.String(), "delivered", res.Delivered,
				"failed", res.Failed, "retrying", res.Retrying, "deferred", res.Deferred)
		}
	}
}

// gatedDeliverer refuses to start deliveries once the daemon is stopping:
// ErrNotReady leaves the row pending without counting an attempt, for the
// next daemon to send.
type gatedDeliverer struct{ d *Daemon }

func (g gatedDeliverer) Deliver(ctx context.Context, ref SessionRef, row OutboundRow) (string, error) {
	if g.d.stopping.Load() {
		return "", ErrNotReady
	}
	return g.d.del.Deliver(ctx, ref, row)
}

// gatedWaker refuses to start containers once the daemon is stopping.
type gatedWaker struct{ d *Daemon }

func (g gatedWaker) Wake(ctx context.Context, ref SessionRef) error {
	if g.d.stopping.Load() {
		return sessiondb.Errorf(sessiondb.EBUSY, "wake %s: the host is stopping", ref)
	}
	return g.d.opts.Waker.Wake(ctx, ref)
}

// HeartbeatRuntime is the Runtime for agents the daemon did not start (a
// shell loop, a container managed elsewhere): a session's agent counts as
// running while its .heartbeat is younger than Window. It cannot stop an
// agent: Stop logs and returns nil, so a stuck agent's claims are reset
// like a dead one's.
type HeartbeatRuntime struct {
	Host *Host
	// Window is how fresh the heartbeat must be; default DefaultStuckCeiling.
	Window time.Duration
	Logger *slog.Logger
}

// Running reports whether ref's .heartbeat is younger than Window.
func (r *HeartbeatRuntime) Running(ref SessionRef) bool {
	hb, err := r.Host.Heartbeat(ref)
	if err != nil || hb.IsZero() {
		return false
	}
	w := r.Window
	if w <= 0 {
		w = DefaultStuckCeiling
	}
	return r.Host.now().Sub(hb) < w
}

// Stop cannot stop an agent it did not start; it logs and returns nil.
func (r *HeartbeatRuntime) Stop(ctx context.Context, ref SessionRef, reason string) error {
	if r.Logger != nil {
		r.Logger.Warn("mailbox: agent looks stuck but was not started by this host; resetting its claims", "session", ref.String(), "reason", reason)
	}
	return nil
}
