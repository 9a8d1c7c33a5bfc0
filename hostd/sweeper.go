package hostd

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/backoff"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Defaults of SweeperConfig (and Config).
const (
	// DefaultSweepWorkers is how many sessions a sweep examines at once.
	DefaultSweepWorkers = 4
	DefaultBackoffMin   = time.Second
	DefaultBackoffMax   = 5 * time.Minute
)

// SweeperConfig configures a Sweeper. Zero values give the defaults.
type SweeperConfig struct {
	// Host is the host side of the data root (required).
	Host *mailbox.Host
	// Runtime says which containers run and stops stuck ones (required).
	Runtime Runtime
	// Waker wakes a session with due work and no container; nil never wakes.
	Waker Waker
	// Deliverer, when set, drains each examined session at the end of its
	// sweep; nil leaves delivery to someone else (the Daemon's drainer).
	Deliverer mailbox.Deliverer
	// Observer, when set, is told each session's sweep (metrics).
	Observer Observer
	// Workers is how many sessions are examined at once; default
	// DefaultSweepWorkers. Each session is still handled by one worker.
	Workers int
	// BackoffMin and BackoffMax bound the per-session back-off after a
	// failed sweep; defaults 1 s and 5 min.
	BackoffMin, BackoffMax time.Duration
	// Serves, when set, says which sessions this host serves: the others
	// (served by another host sharing the registry) are left alone. Nil
	// serves every folder.
	Serves func(mailbox.SessionRef) bool
}

// Sweeper runs the host's sweep over the session folders under the data
// root. Runtime, Waker and Deliverer are called from several goroutines at
// once (one session each) and must be safe for that. A Sweeper remembers
// what it saw of each session between sweeps; its Sweep calls must not
// overlap.
type Sweeper struct {
	cfg SweeperConfig

	mu       sync.Mutex
	sessions map[mailbox.SessionRef]*sweepState
}

// sweepState is the Sweeper's bookkeeping of one session.
type sweepState struct {
	// What the folder and files looked like after the last look (seen).
	seen                              bool
	dir, inbound, outbound, heartbeat filesig.Sig
	// nextDue is the earliest time a timed event (process_after, retry,
	// deliver_after, system-row expiry) needs the session looked at again;
	// zero = none.
	nextDue      time.Time
	quarantined  bool
	failures     int
	backoffUntil time.Time
	lastErr      string
}

// NewSweeper checks cfg and returns a Sweeper that has seen nothing yet.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if cfg.Host == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "sweeper: SweeperConfig.Host is required")
	}
	if cfg.Runtime == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "sweeper: SweeperConfig.Runtime is required")
	}
	cfg.Workers = positiveOr(cfg.Workers, DefaultSweepWorkers)
	cfg.BackoffMin = positiveOr(cfg.BackoffMin, DefaultBackoffMin)
	cfg.BackoffMax = positiveOr(cfg.BackoffMax, DefaultBackoffMax)
	return &Sweeper{cfg: cfg, sessions: map[mailbox.SessionRef]*sweepState{}}, nil
}

// SessionError is one session's failure in a sweep.
type SessionError struct {
	Ref mailbox.SessionRef `json:"ref"`
	Err error              `json:"-"`
	// Message is Err's text, for JSON.
	Message string `json:"error"`
	Code    string `json:"code"`
}

// SweepResult reports one sweep. Errors never abort it: each session's
// failure is listed here and the session is backed off.
type SweepResult struct {
	Sessions    int                  `json:"sessions"` // folders seen
	Examined    int                  `json:"examined"` // folders opened
	Woken       []mailbox.SessionRef `json:"woken,omitempty"`
	Stopped     []mailbox.SessionRef `json:"stopped,omitempty"`
	Reset       []mailbox.SessionRef `json:"reset,omitempty"`
	Quarantined []mailbox.SessionRef `json:"quarantined,omitempty"`
	BackedOff   int                  `json:"backed_off"`
	Errors      []SessionError       `json:"errors,omitempty"`

	// due is one session's due rows, for the Observer.
	due int
}

// Sweep runs one tick over the session folders. Per session, in order:
// sync acks → wake if due and idle → stuck check if alive (and stop) → if
// not alive: roll back a hot outbound journal and reset claims →
// recurrences → system-row expiry → drain (when a Deliverer is set).
//
// Unless full, a session is opened only when its inbound.db, outbound.db
// or .heartbeat changed (size or mtime) since the last tick, its container
// runs, a timed event it holds (process_after, a delivery retry,
// deliver_after, system-row expiry) has come, or its back-off ended; an idle
// folder costs one stat (of the folder). This relies on the file system
// giving folders sub-second mtimes (ext4, xfs, btrfs, tmpfs, overlayfs and
// virtiofs do); run a full pass now and then to cover the others. Each
// session runs under its own deadline (the Host's OpTimeout); a failure is
// reported in the result and backs the session off exponentially
// (BackoffMin → BackoffMax), never aborting the tick. A session whose
// outbound.db or inbound.db is corrupt is quarantined: skipped until its
// files change. The error is non-nil only when the root cannot be listed or
// ctx ends.
func (s *Sweeper) Sweep(ctx context.Context, full bool) (SweepResult, error) {
	var res SweepResult
	h := s.cfg.Host
	refs, err := h.SessionFolders(ctx)
	if err != nil {
		return res, err
	}
	root := h.Layout().Root
	now := h.Now()
	var jobs []sweepJob
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if s.cfg.Serves != nil && !s.cfg.Serves(ref) {
			continue
		}
		dir := filepath.Join(root, ref.AgentGroupID, ref.SessionID)
		// One stat of the folder first: every write transaction in DELETE
		// journal mode creates and removes the -journal file beside the
		// database, which moves the folder's mtime. Only a folder that moved
		// is worth the three file stats. (A heartbeat touch does not move
		// it, but heartbeats only matter while a container runs, and those
		// sessions are always examined.)
		dsig := filesig.Of(dir)
		if !dsig.Found() {
			continue
		}
		running := s.cfg.Runtime.Running(ref)
		st := s.state(ref)
		s.mu.Lock()
		dirMoved := !st.seen || st.dir != dsig
		quarantined := st.quarantined
		backedOff := now.Before(st.backoffUntil)
		due := !st.nextDue.IsZero() && !now.Before(st.nextDue)
		s.mu.Unlock()
		if !dirMoved && !running && !due && !backedOff && !full {
			res.Sessions++
			continue
		}
		in := filesig.Of(filepath.Join(dir, mailbox.InboundFile))
		if !in.Found() {
			continue
		}
		res.Sessions++
		out := filesig.Of(filepath.Join(dir, mailbox.OutboundFile))
		hb := filesig.Of(filepath.Join(dir, mailbox.HeartbeatFile))
		s.mu.Lock()
		changed := !st.seen || st.inbound != in || st.outbound != out || st.heartbeat != hb
		if st.quarantined && changed {
			st.quarantined = false
			quarantined = false
		}
		if !changed {
			st.dir = dsig
		}
		s.mu.Unlock()
		switch {
		case quarantined && !full:
			continue
		case backedOff:
			res.BackedOff++
			continue
		case !(full || changed || running || due):
			continue
		}
		res.Examined++
		jobs = append(jobs, sweepJob{ref: ref, dir: dir, st: st, running: running})
	}
	var mu sync.Mutex
	fanOut(ctx, s.cfg.Workers, jobs, func(j sweepJob) { s.examine(ctx, j, now, &mu, &res) })
	for _, l := range [][]mailbox.SessionRef{res.Woken, res.Stopped, res.Reset, res.Quarantined} {
		slices.SortFunc(l, compareRefs)
	}
	slices.SortFunc(res.Errors, func(a, b SessionError) int { return compareRefs(a.Ref, b.Ref) })
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

func compareRefs(a, b mailbox.SessionRef) int {
	return cmp.Or(strings.Compare(a.AgentGroupID, b.AgentGroupID), strings.Compare(a.SessionID, b.SessionID))
}

func (s *Sweeper) state(ref mailbox.SessionRef) *sweepState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[ref]
	if st == nil {
		st = &sweepState{}
		s.sessions[ref] = st
	}
	return st
}

type sweepJob struct {
	ref     mailbox.SessionRef
	dir     string
	st      *sweepState
	running bool
}

// examine runs one session's sweep under its own deadline, merges what it
// did into res (under mu) and records the session's bookkeeping.
func (s *Sweeper) examine(ctx context.Context, j sweepJob, now time.Time, mu *sync.Mutex, res *SweepResult) {
	h := s.cfg.Host
	sctx, cancel := context.WithTimeout(ctx, h.Options().OpTimeout)
	var local SweepResult
	nextDue, err := s.sweepSession(sctx, j.ref, j.running, &local)
	cancel()
	if s.cfg.Observer != nil {
		s.cfg.Observer.Swept(j.ref, local.due, len(local.Stopped) > 0, err)
	}
	st := j.st
	s.mu.Lock()
	if err != nil {
		st.failures++
		st.backoffUntil = now.Add(backoff.Exponential(st.failures, s.cfg.BackoffMin, s.cfg.BackoffMax))
		// Look again when the back-off ends, changed or not.
		nextDue = st.backoffUntil
		if sqlitedb.IsCorrupt(err) {
			st.quarantined = true
			local.Quarantined = append(local.Quarantined, j.ref)
		}
		st.lastErr = err.Error()
		local.Errors = append(local.Errors, SessionError{Ref: j.ref, Err: err, Message: err.Error(), Code: sqlitedb.Code(err)})
	} else {
		st.failures, st.backoffUntil, st.lastErr = 0, time.Time{}, ""
	}
	// Our own writes changed the files: remember them as they are now, so
	// the next tick does not reopen the session for nothing.
	st.seen, st.nextDue = true, nextDue
	st.dir = filesig.Of(j.dir)
	st.inbound = filesig.Of(filepath.Join(j.dir, mailbox.InboundFile))
	st.outbound = filesig.Of(filepath.Join(j.dir, mailbox.OutboundFile))
	st.heartbeat = filesig.Of(filepath.Join(j.dir, mailbox.HeartbeatFile))
	s.mu.Unlock()
	if err != nil {
		h.Options().Logger.Warn("mailbox: sweep failed for session", "session", j.ref.String(), "err", err)
	}
	mu.Lock()
	res.Woken = append(res.Woken, local.Woken...)
	res.Stopped = append(res.Stopped, local.Stopped...)
	res.Reset = append(res.Reset, local.Reset...)
	res.Quarantined = append(res.Quarantined, local.Quarantined...)
	res.Errors = append(res.Errors, local.Errors...)
	mu.Unlock()
}

// sweepSession runs one session's sweep steps and returns when it next needs
// a look without any file change. It opens outbound.db read-only once and
// inbound.db twice (before and after the wake/stop decision).
func (s *Sweeper) sweepSession(ctx context.Context, ref mailbox.SessionRef, running bool, res *SweepResult) (time.Time, error) {
	h := s.cfg.Host
	if !running {
		// A journal left by a killed agent makes every read-only read of
		// outbound fail; with no container alive it is safe to roll back
		// first.
		if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
			return time.Time{}, err
		}
	}
	chk, err := h.CheckSession(ctx, ref, running)
	if err != nil {
		return time.Time{}, err
	}
	res.due = chk.Due
	woken := false
	if !running && s.cfg.Waker != nil && chk.Due > 0 {
		if err := s.cfg.Waker.Wake(ctx, ref); err != nil {
			return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "wake %s", ref)
		}
		woken = true
		res.Woken = append(res.Woken, ref)
	}
	if running {
		hb, err := h.Heartbeat(ref)
		if err != nil {
			return time.Time{}, err
		}
		if v := mailbox.DecideStuck(h.Now(), hb, chk.Container, chk.Claims); v != mailbox.StuckOK {
			if err := s.cfg.Runtime.Stop(ctx, ref, v.String()); err != nil {
				return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stop stuck container of %s (%s)", ref, v)
			}
			res.Stopped = append(res.Stopped, ref)
			running = false
			if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
				return time.Time{}, err
			}
		}
	}
	if !running && !woken && len(chk.Claims) > 0 {
		r, err := h.ResetProcessing(ctx, ref)
		if err != nil {
			return time.Time{}, err
		}
		if r.AcksCleared > 0 || r.Retried > 0 || r.Failed > 0 {
			res.Reset = append(res.Reset, ref)
		}
	}
	next, err := h.Upkeep(ctx, ref)
	if err != nil {
		return time.Time{}, err
	}
	if s.cfg.Deliverer != nil {
		if _, err := h.Drain(ctx, ref, s.cfg.Deliverer); err != nil {
			return time.Time{}, err
		}
	}
	if next.IsZero() || (!chk.NextDeliverAfter.IsZero() && chk.NextDeliverAfter.Before(next)) {
		next = chk.NextDeliverAfter
	}
	return next, nil
}

// health reports the sessions among refs that the sweep backed off or
// quarantined, with the error that did it.
func (s *Sweeper) health(refs []mailbox.SessionRef, now time.Time) map[mailbox.SessionRef]SessionHealth {
	out := map[mailbox.SessionRef]SessionHealth{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range refs {
		st := s.sessions[ref]
		if st == nil || (st.failures == 0 && !st.quarantined) {
			continue
		}
		hh := SessionHealth{Quarantined: st.quarantined, SweepFailures: st.failures, LastError: st.lastErr}
		if st.backoffUntil.After(now) {
			hh.SweepBackoffUntil = st.backoffUntil
		}
		out[ref] = hh
	}
	return out
}
