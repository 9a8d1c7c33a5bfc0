package hostd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Defaults of Config.
const (
	DefaultPoll         = time.Second
	DefaultFullSweep    = 60 * time.Second
	DefaultDrainWorkers = 2
)

// Config configures a Daemon. Zero values give the defaults.
type Config struct {
	// Deliverer hands channel rows to their destination. The daemon puts a
	// HostDeliverer in front of it, which runs kind='system' actions and
	// agent-to-agent rows itself. Nil leaves channel rows pending (nothing
	// is lost: a later daemon with a deliverer sends them).
	Deliverer mailbox.Deliverer
	// Waker starts a container for a session with due work and none
	// running; nil never wakes (agents are started some other way).
	Waker Waker
	// Runtime says which containers run and stops stuck ones. Nil: the
	// Waker when it is also a Runtime (ExecWaker is), else a
	// HeartbeatRuntime (agents started outside the daemon).
	Runtime Runtime
	// Logger receives the daemon's logs; nil discards them.
	Logger *slog.Logger
	// Observer, when set, is told each sweep and drain of a session (the
	// host command's metrics); the router's events it learns through
	// RouterConfig.Observer.
	Observer Observer
	// Poll is the change-detection tick: every Poll the daemon runs the
	// changed-only sweep and drains sessions whose outbound.db changed or
	// whose container runs. Default 1 s.
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
	// BackoffMin and BackoffMax bound the per-session back-off after a
	// failed sweep or drain; defaults 1 s and 5 min.
	BackoffMin, BackoffMax time.Duration
	// Router connects the daemon to the control plane (a central
	// registry). With it, every wake first writes the session's
	// session_routing and destinations from the registry and records the
	// spawn (container_status, last_active); every outbound row is checked
	// against the registry's destinations before delivery, ask_question
	// cards are recorded for their clicks, and agent-to-agent rows reach
	// the session the registry picks; the registry's container_status
	// follows the Runtime; the card expiry sweeps run every ExpiryEvery;
	// and the router wakes the sessions it writes to through the daemon's
	// waker. Nil: a plain mailbox host.
	Router *Router
	// ExpiryEvery is the interval of the card expiry sweeps (Router
	// only); default DefaultExpiryEvery.
	ExpiryEvery time.Duration
	// RootLock is the data root's lock when the caller took it already
	// (LockRoot: the host command takes it before it opens anything else);
	// the caller releases it after Run. Nil: Run takes it, refusing to run
	// (conflict) while another daemon serves the root, and releases it
	// when it returns.
	RootLock *FileLock
}

// DefaultExpiryEvery is how often a daemon with a Router expires cards.
const DefaultExpiryEvery = 10 * time.Second

// Daemon runs a Host over every session folder under its data root: the
// sweep (acks, wake, stuck check, reset of dead containers' claims,
// recurrences, system-row expiry), and delivery. Sessions are handled
// independently: a failing session is backed off exponentially (BackoffMin
// → BackoffMax) and never stalls the others.
//
// Delivery runs on its own workers, one drain per session at a time;
// triggers that arrive during a drain (outbound change, the Poll tick while
// the container runs, the full sweep, the container's exit, a due retry)
// coalesce into one more drain after it.
type Daemon struct {
	h   *mailbox.Host
	cfg Config
	rt  Runtime
	log *slog.Logger

	sweeper  *Sweeper
	drainer  *drainer
	watchers *watchSet
	status   *statusWriter

	// stopping refuses new wakes once Run is ending.
	stopping atomic.Bool

	// containers is the registry's view of the containers (Router only).
	containers containerTracker

	// leases is the Router's Leases: several hosts share the registry.
	leases *Leases
	// foreign holds the folders whose sessions another host served when
	// last asked, and when that was (tick loop only).
	foreign map[string]time.Time

	// rootLock is the data root's lock while Run runs.
	rootLock *FileLock

	mu         sync.Mutex
	running    bool
	lastFull   time.Time // used by the tick loop only
	lastExpiry time.Time // used by the tick loop only
}

// New returns a daemon for h. It starts nothing until Run.
func New(h *mailbox.Host, cfg Config) (*Daemon, error) {
	if h == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "daemon: no host")
	}
	cfg.Poll = positiveOr(cfg.Poll, DefaultPoll)
	cfg.FullSweep = positiveOr(cfg.FullSweep, DefaultFullSweep)
	cfg.DrainWorkers = positiveOr(cfg.DrainWorkers, DefaultDrainWorkers)
	cfg.StopTimeout = positiveOr(cfg.StopTimeout, DefaultStopGrace+time.Second)
	cfg.ExpiryEvery = positiveOr(cfg.ExpiryEvery, DefaultExpiryEvery)
	d := &Daemon{h: h, cfg: cfg, log: cfg.Logger}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.rt = cfg.Runtime
	if d.rt == nil {
		if r, ok := cfg.Waker.(Runtime); ok {
			d.rt = r
		} else {
			d.rt = &HeartbeatRuntime{Host: h, Logger: d.log}
		}
	}
	d.containers.known = map[mailbox.SessionRef]sessiondb.ContainerStatus{}
	var serves func(mailbox.SessionRef) bool
	if cfg.Router != nil && cfg.Router.cfg.Leases != nil {
		d.leases = cfg.Router.cfg.Leases
		d.foreign = map[string]time.Time{}
		serves = func(ref mailbox.SessionRef) bool { return d.leases.Holds(ref.SessionID) }
	}
	var waker Waker
	if cfg.Waker != nil {
		waker = gatedWaker{d}
		if cfg.Router != nil {
			waker = &spawnWaker{d: d, r: cfg.Router, next: waker, locks: map[mailbox.SessionRef]*sync.Mutex{}}
		}
	}
	if cfg.Router != nil {
		if cfg.Router.h != h {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "daemon: the router writes another host's mailboxes")
		}
		cfg.Router.setWaker(waker)
	}
	// The sweep never drains itself (no Deliverer): delivery runs on the
	// drainer's workers, detached from ctx, so cancelling a sweep never
	// cuts a delivery off between the send and its record.
	var err error
	d.sweeper, err = NewSweeper(SweeperConfig{Host: h, Runtime: d.rt, Waker: waker, BackoffMin: cfg.BackoffMin, BackoffMax: cfg.BackoffMax, Serves: serves, Observer: cfg.Observer})
	if err != nil {
		return nil, err
	}
	// Drains back off like sweeps, within the bounds the sweeper settled.
	var deliverer mailbox.Deliverer = &HostDeliverer{Host: h, Next: cfg.Deliverer, Logger: d.log}
	if cfg.Router != nil {
		deliverer = &centralDeliverer{r: cfg.Router, host: deliverer.(*HostDeliverer), next: cfg.Deliverer}
	}
	d.drainer = newDrainer(drainerConfig{host: h, deliverer: deliverer,
		workers: cfg.DrainWorkers, backoffMin: d.sweeper.cfg.BackoffMin, backoffMax: d.sweeper.cfg.BackoffMax, log: d.log, serves: serves, observer: cfg.Observer})
	d.watchers = newWatchSet(h.Layout(), cfg.Poll, d.drainer.changed)
	d.status = &statusWriter{root: h.Layout().Root, fullSweep: cfg.FullSweep, log: d.log}
	return d, nil
}

// RequestDrain asks for one drain of ref soon; while a drain of ref runs,
// requests coalesce into one more drain after it. Safe to call at any time,
// also before Run and after it returned (then it does nothing).
func (d *Daemon) RequestDrain(ref mailbox.SessionRef) { d.drainer.request(ref) }

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
	if err := d.lockRoot(); err != nil {
		return err
	}
	if d.cfg.RootLock == nil {
		defer d.rootLock.Close()
	}
	if w, ok := d.cfg.Waker.(*ExecWaker); ok {
		// One drain right after the container exits: what it wrote last
		// goes out now, not at the next sweep.
		w.addOnExit(func(ref mailbox.SessionRef, _ error) { d.RequestDrain(ref) })
	}

	d.status.started = d.h.Now()
	if d.leases != nil {
		// Other hosts' containers run: only the sessions this host serves
		// are marked stopped (the first tick marks those that run).
		d.serveFolders(ctx, true)
		d.leases.Start(ctx)
	} else if r := d.cfg.Router; r != nil {
		// This host owns no container yet; the first tick marks those the
		// Runtime sees running.
		if n, err := r.reg.StopAllContainers(ctx); err != nil {
			d.log.Warn("router: could not reset the registry's container statuses", "err", err)
		} else if n > 0 {
			d.log.Info("router: marked containers of a previous host stopped", "sessions", n)
		}
	}
	d.recoverAll(ctx)
	d.drainer.start(ctx)

	d.tick(ctx)
	t := time.NewTicker(d.cfg.Poll)
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
	d.drainer.stop()
	d.watchers.close()
	if w, ok := d.cfg.Waker.(interface {
		StopAll(context.Context, string)
	}); ok {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StopTimeout)
		w.StopAll(sctx, "host stopping")
		cancel()
	}
	if d.leases != nil {
		// Nothing is delivered or woken any more: another host may serve
		// the sessions at once.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StopTimeout)
		d.leases.Stop(sctx)
		cancel()
	}
	d.status.remove()
	d.log.Info("mailbox: daemon stopped")
	return nil
}

// lockRoot holds the data root's lock for Run: the one the caller took
// (which must be this root's), else one taken now.
func (d *Daemon) lockRoot() error {
	root := d.h.Layout().Root
	if l := d.cfg.RootLock; l != nil {
		a, aerr := os.Stat(filepath.Dir(l.Path()))
		b, berr := os.Stat(root)
		if aerr != nil || berr != nil || !os.SameFile(a, b) || filepath.Base(l.Path()) != sessiondb.HostLockFile {
			return sessiondb.Errorf(sessiondb.EINVALID, "daemon: Config.RootLock (%s) is not the lock of the data root %s", l.Path(), root)
		}
		d.rootLock = l
		return nil
	}
	l, err := LockRoot(root)
	if err != nil {
		return err
	}
	d.rootLock = l
	return nil
}

// recoverAll opens each session's inbound.db read-write once (contract
// section 14), each under its own deadline; failures are logged.
func (d *Daemon) recoverAll(ctx context.Context) {
	refs, err := d.h.Sessions(ctx)
	if err != nil {
		d.log.Warn("mailbox: cannot list sessions", "root", d.h.Layout().Root, "err", err)
		return
	}
	for _, ref := range refs {
		if ctx.Err() != nil {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, d.h.Options().OpTimeout)
		if err := d.h.RecoverInbound(sctx, ref); err != nil {
			d.log.Warn("mailbox: inbound recovery failed", "session", ref.String(), "err", err)
		}
		cancel()
	}
}

// tick runs one sweep (full every FullSweep, else changed-only), queues the
// drains it calls for, keeps the watchers on the running sessions and
// rewrites the status file.
func (d *Daemon) tick(ctx context.Context) {
	now := d.h.Now()
	full := d.lastFull.IsZero() || now.Sub(d.lastFull) >= d.cfg.FullSweep || now.Before(d.lastFull)
	if full {
		d.lastFull = now
	}
	if d.leases != nil {
		d.serveFolders(ctx, false)
		if n, err := d.cfg.Router.TakeHandOffs(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("router: taking handed-off rows failed", "written", n, "err", err)
		} else if n > 0 {
			d.log.Info("router: wrote rows handed off by other hosts", "rows", n)
		}
	}
	res, err := d.sweeper.Sweep(ctx, full)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("mailbox: sweep failed", "err", err)
	}
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
	refs, err := d.h.SessionFolders(ctx)
	if err != nil {
		return
	}
	if d.leases != nil {
		refs = slices.DeleteFunc(refs, func(ref mailbox.SessionRef) bool { return !d.leases.Holds(ref.SessionID) })
	}
	// The Runtime is asked once per folder per tick; the drain plan and
	// the status file share its answer.
	running := map[mailbox.SessionRef]bool{}
	for _, ref := range refs {
		if d.rt.Running(ref) {
			running[ref] = true
		}
	}
	if d.cfg.Router != nil {
		d.centralTick(ctx, refs, running, now)
	}
	drain, live := d.drainer.plan(refs, running, full, now)
	d.watchers.sync(live)
	for _, ref := range drain {
		d.RequestDrain(ref)
	}
	snow := d.h.Now()
	health := d.sweeper.health(refs, snow)
	d.drainer.health(refs, snow, health)
	// The file's Running names a container the runtime knows runs, as
	// NanoClaw's host calls running only a container it started and has
	// not seen exit. A HeartbeatRuntime only infers a live agent from a
	// fresh heartbeat: readers show that as "recently seen", from the
	// heartbeat itself, and do not refuse a requeue for it.
	if _, inferred := d.rt.(*HeartbeatRuntime); !inferred {
		for ref := range running {
			hh := health[ref]
			hh.Running = true
			health[ref] = hh
		}
	}
	d.status.write(health, snow, full)
}

// gatedWaker refuses to start containers once the daemon is stopping.
type gatedWaker struct{ d *Daemon }

func (g gatedWaker) Wake(ctx context.Context, ref mailbox.SessionRef) error {
	if g.d.stopping.Load() {
		return sessiondb.Errorf(sessiondb.EBUSY, "wake %s: the host is stopping", ref)
	}
	if g.d.leases != nil && !g.d.leases.Holds(ref.SessionID) {
		return sessiondb.Errorf(sessiondb.EBUSY, "wake %s: another host serves the session", ref)
	}
	return g.d.cfg.Waker.Wake(ctx, ref)
}

// centralTick keeps the registry's container_status in step with the
// Runtime and runs the card expiry sweeps every ExpiryEvery.
func (d *Daemon) centralTick(ctx context.Context, refs []mailbox.SessionRef, running map[mailbox.SessionRef]bool, now time.Time) {
	for _, ref := range refs {
		st := sessiondb.ContainerStopped
		if running[ref] {
			st = sessiondb.ContainerRunning
		}
		d.containerStatus(ctx, ref, st)
	}
	if !d.lastExpiry.IsZero() && now.Sub(d.lastExpiry) < d.cfg.ExpiryEvery && !now.Before(d.lastExpiry) {
		return
	}
	d.lastExpiry = now
	res, err := d.cfg.Router.Expire(ctx)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("router: expiry sweep failed", "err", err)
	}
	if res.Questions+res.Approvals > 0 {
		d.log.Info("router: cards expired", "questions", res.Questions, "approvals", res.Approvals)
	}
}

// serveFolders claims the lease of every session folder under the data
// root this host does not serve yet: at start the folders it served
// before, later those another process made (route --direct). A folder
// whose session another host serves is asked about again once a lease
// could have run out. At start the sessions it serves are marked stopped
// in the registry (this host runs no container yet).
func (d *Daemon) serveFolders(ctx context.Context, start bool) {
	refs, err := d.h.SessionFolders(ctx)
	if err != nil {
		return
	}
	now := d.h.Now()
	for _, ref := range refs {
		if ctx.Err() != nil {
			return
		}
		if d.leases.Holds(ref.SessionID) {
			continue
		}
		if at, ok := d.foreign[ref.SessionID]; ok && now.Sub(at) < d.leases.TTL() && !now.Before(at) {
			continue
		}
		held, holder, err := d.leases.Acquire(ctx, ref.SessionID)
		switch {
		case err != nil:
			d.log.Warn("leases: cannot claim a session", "session", ref.String(), "err", err)
		case !held:
			if _, seen := d.foreign[ref.SessionID]; !seen {
				d.log.Info("leases: another host serves this folder's session; left alone", "session", ref.String(), "host", holder)
			}
			d.foreign[ref.SessionID] = now
		default:
			delete(d.foreign, ref.SessionID)
			if start {
				if err := d.cfg.Router.reg.SetContainerStatus(ctx, ref.SessionID, sessiondb.ContainerStopped); err != nil && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
					d.log.Warn("router: could not reset a session's container status", "session", ref.String(), "err", err)
				}
			}
		}
	}
}
