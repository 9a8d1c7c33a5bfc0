package hostd

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb/internal/backoff"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// drainerConfig configures a drainer.
type drainerConfig struct {
	host *mailbox.Host
	// deliverer is what every drain delivers through.
	deliverer  mailbox.Deliverer
	workers    int
	backoffMin time.Duration
	backoffMax time.Duration
	log        *slog.Logger
	// serves, when set, fences every delivery: a session this host does
	// not serve (now) is not delivered for.
	serves   func(mailbox.SessionRef) bool
	observer Observer
}

// drainer delivers the sessions' outbound rows on its own workers, one
// drain per session at a time. Requests that arrive during a session's
// drain (outbound change, the tick while the container runs, the full
// sweep, the container's exit, a due retry) coalesce into one more drain
// after it. A session whose drain fails is backed off exponentially.
type drainer struct {
	cfg drainerConfig

	// stopping refuses new deliveries once Stop began: ErrNotReady leaves a
	// row pending without counting an attempt, for the next daemon to send.
	stopping atomic.Bool
	workers  sync.WaitGroup

	mu     sync.Mutex
	slots  map[mailbox.SessionRef]*drainSlot
	queue  []mailbox.SessionRef
	wakeQ  chan struct{}
	closed bool
}

// drainSlot is the drainer's bookkeeping for one session.
type drainSlot struct {
	queued, active, again bool
	// changed is an outbound change reported while a drain ran and before
	// its read: the read saw that commit, so it is dropped there (sawRead).
	changed      bool
	outSig       filesig.Sig
	failures     int
	backoffUntil time.Time
	// retryAt is when a delivery retry or a deliver_after falls due.
	retryAt time.Time
	lastErr string
}

func newDrainer(cfg drainerConfig) *drainer {
	return &drainer{cfg: cfg, slots: map[mailbox.SessionRef]*drainSlot{}, wakeQ: make(chan struct{}, 1)}
}

// start starts the workers. Drains are detached from ctx's cancellation:
// once started, a delivery must be recorded even when ctx ends, or a later
// daemon would send it again. Only stop ends them.
func (d *drainer) start(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for range d.cfg.workers {
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			d.work(ctx)
		}()
	}
}

// stop refuses new deliveries, drops the queued requests, and returns once
// the drains in flight have finished and been recorded.
func (d *drainer) stop() {
	d.stopping.Store(true)
	d.mu.Lock()
	d.closed = true
	d.queue = nil
	for _, s := range d.slots {
		s.queued, s.again, s.changed = false, false, false
	}
	d.mu.Unlock()
	close(d.wakeQ)
	d.workers.Wait()
}

// request asks for one drain of ref soon; while a drain of ref runs,
// requests coalesce into one more drain after it. After stop it does
// nothing.
func (d *drainer) request(ref mailbox.SessionRef) { d.ask(ref, false) }

// changed asks for a drain of ref after a commit to its outbound.db (the
// watcher's wake). It is request, except while a drain of ref runs: then
// one more drain is owed only for a commit that ended after the running
// drain's read, which drops the changes reported until then (sawRead); a
// commit the read saw needs no second drain.
func (d *drainer) changed(ref mailbox.SessionRef) { d.ask(ref, true) }

// ask is request (change false) and changed (change true).
func (d *drainer) ask(ref mailbox.SessionRef, change bool) {
	if ref.Validate() != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	s := d.slot(ref)
	switch {
	case s.active && change:
		s.changed = true
	case s.active:
		s.again = true
	default:
		d.enqueueLocked(ref, s)
	}
}

// sawRead is called inside a drain's read of ref's outbound.db
// (mailbox.DrainOptions.Read): the changes reported until then are in it.
func (d *drainer) sawRead(ref mailbox.SessionRef) {
	d.mu.Lock()
	d.slot(ref).changed = false
	d.mu.Unlock()
}

// enqueueLocked queues ref once; d.mu must be held.
func (d *drainer) enqueueLocked(ref mailbox.SessionRef, s *drainSlot) {
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
func (d *drainer) slot(ref mailbox.SessionRef) *drainSlot {
	s := d.slots[ref]
	if s == nil {
		s = &drainSlot{}
		d.slots[ref] = s
	}
	return s
}

// plan picks the sessions among refs that need a drain: on a full pass,
// when its outbound.db changed, while its container runs, when a retry fell
// due, or when its back-off ended after a failure; never while it is backed
// off. Folders without both files are left out. live holds the sessions
// (folders with both files) whose container runs.
func (d *drainer) plan(refs []mailbox.SessionRef, running map[mailbox.SessionRef]bool, full bool, now time.Time) (drain []mailbox.SessionRef, live map[mailbox.SessionRef]bool) {
	root := d.cfg.host.Layout().Root
	live = map[mailbox.SessionRef]bool{}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ref := range refs {
		dir := filepath.Join(root, ref.AgentGroupID, ref.SessionID)
		sig := filesig.Of(filepath.Join(dir, mailbox.OutboundFile))
		if !sig.Found() || !filesig.Of(filepath.Join(dir, mailbox.InboundFile)).Found() {
			continue // not a session (yet): nothing to deliver, nowhere to record
		}
		run := running[ref]
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
		// A requeue in another process left its mark: drain now, not at
		// the next full sweep. The mark is looked for only when nothing
		// else drains the session (the drain itself takes it), sparing the
		// stat on the sessions that drain anyway.
		if full || changed || run || due || retryAfterBackoff ||
			filesig.Of(filepath.Join(dir, mailbox.RequeueMarkFile)).Found() {
			drain = append(drain, ref)
		}
	}
	return drain, live
}

// next takes the next queued session, or reports false once stop began.
func (d *drainer) next() (mailbox.SessionRef, bool) {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return mailbox.SessionRef{}, false
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
			return mailbox.SessionRef{}, false
		}
	}
}

func (d *drainer) work(ctx context.Context) {
	h := d.cfg.host
	del := gatedDeliverer{d}
	for {
		ref, ok := d.next()
		if !ok {
			return
		}
		res, err := h.DrainWith(ctx, ref, del, mailbox.DrainOptions{Read: func() { d.sawRead(ref) }})
		if d.cfg.observer != nil {
			d.cfg.observer.Drained(ref, res, err)
		}
		var retryAt time.Time
		if err == nil {
			retryAt, err = h.NextDeliveryDue(ctx, ref)
		}
		d.finish(ref, res, err, retryAt, h.Now())
		switch {
		case err != nil && !d.stopping.Load():
			d.cfg.log.Warn("mailbox: drain failed; backing off", "session", ref.String(), "code", sqlitedb.Code(err), "err", err)
		case res.Delivered+res.Failed+res.Retrying > 0:
			d.cfg.log.Info("mailbox: drained", "session", ref.String(), "delivered", res.Delivered,
				"failed", res.Failed, "retrying", res.Retrying, "deferred", res.Deferred)
		}
	}
}

// finish records the end of a drain of ref at now: its error or the next
// due retry, and queues one more drain when one was asked for meanwhile (a
// request, a change its read did not see) or the drain was skipped.
func (d *drainer) finish(ref mailbox.SessionRef, res mailbox.DrainResult, err error, retryAt, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.slot(ref)
	s.active = false
	if err != nil {
		s.failures++
		s.backoffUntil = now.Add(backoff.Exponential(s.failures, d.cfg.backoffMin, d.cfg.backoffMax))
		s.lastErr = err.Error()
		s.again, s.changed = false, false
	} else {
		s.failures, s.backoffUntil, s.lastErr = 0, time.Time{}, ""
		s.retryAt = retryAt
	}
	// A follow-up is queued in the same critical section, so the slot
	// never looks idle while one is owed.
	if (s.again || s.changed || res.Skipped) && !d.closed {
		d.enqueueLocked(ref, s)
	}
	s.again, s.changed = false, false
}

// health adds the drainer's failures among refs to out (a drain error
// replaces the sweep's as LastError), adding sessions not yet in it.
func (d *drainer) health(refs []mailbox.SessionRef, now time.Time, out map[mailbox.SessionRef]SessionHealth) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ref := range refs {
		s := d.slots[ref]
		if s == nil || s.failures == 0 {
			continue
		}
		hh := out[ref]
		hh.DrainFailures, hh.LastError = s.failures, s.lastErr
		if s.backoffUntil.After(now) {
			hh.DrainBackoffUntil = s.backoffUntil
		}
		out[ref] = hh
	}
}

// gatedDeliverer refuses to start deliveries once the drainer is stopping,
// or for a session this host no longer serves: ErrNotReady leaves the row
// pending without counting an attempt, for the next daemon (or this one,
// should it serve the session again) to send.
type gatedDeliverer struct{ d *drainer }

func (g gatedDeliverer) Deliver(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	if g.d.stopping.Load() || (g.d.cfg.serves != nil && !g.d.cfg.serves(ref)) {
		return "", mailbox.ErrNotReady
	}
	return g.d.cfg.deliverer.Deliver(ctx, ref, row)
}
