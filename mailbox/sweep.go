package mailbox

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// listSessions returns the refs of folders <root>/<group>/<session> with
// safe names, sorted. It reads folders only; callers stat the files.
func (h *Host) listSessions() ([]SessionRef, error) {
	groups, err := os.ReadDir(h.layout.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "list %s", h.layout.Root)
	}
	var refs []SessionRef
	for _, g := range groups {
		if !g.IsDir() || ValidateName("agent_group_id", g.Name()) != nil {
			continue
		}
		sess, err := os.ReadDir(filepath.Join(h.layout.Root, g.Name()))
		if err != nil {
			h.log.Warn("mailbox: cannot list agent group folder", "group", g.Name(), "err", err)
			continue
		}
		for _, s := range sess {
			if !s.IsDir() || ValidateName("session_id", s.Name()) != nil {
				continue
			}
			refs = append(refs, SessionRef{AgentGroupID: g.Name(), SessionID: s.Name()})
		}
	}
	sortRefs(refs)
	return refs, nil
}

// Sessions lists the session folders under the root: folders with safe
// names that hold an inbound.db.
func (h *Host) Sessions(ctx context.Context) ([]SessionRef, error) {
	refs, err := h.listSessions()
	if err != nil {
		return nil, err
	}
	out := refs[:0]
	for _, r := range refs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p, _ := h.layout.InboundPath(r)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, r)
		}
	}
	return out, nil
}

// Sweep runs one tick over the session folders under the root. Per session,
// in order: sync acks → wake if due and idle → stuck check if alive (and
// stop) → if not alive: roll back a hot outbound journal and reset claims →
// recurrences → system-row expiry → drain (when o.Deliverer is set).
//
// Unless o.Full, a session is opened only when its inbound.db, outbound.db
// or .heartbeat changed (size or mtime) since the last tick, its container
// runs, a timed event it holds (process_after, a delivery retry,
// deliver_after, system-row expiry) has come, or its back-off ended; an idle
// folder costs one stat (of the folder). This relies on the file system
// giving folders sub-second mtimes (ext4, xfs, btrfs, tmpfs, overlayfs and
// virtiofs do); run a Full pass now and then to cover the others. Each session runs under its own deadline
// (OpTimeout); a failure is reported in the result and backs the session
// off exponentially (BackoffMin → BackoffMax), never aborting the tick. A
// session whose outbound.db or inbound.db is corrupt is quarantined: skipped
// until its files change. The error is non-nil only when the root cannot be
// listed or ctx ends.
func (h *Host) Sweep(ctx context.Context, o SweepOptions) (SweepResult, error) {
	var res SweepResult
	if o.Runtime == nil {
		return res, sessiondb.Errorf(sessiondb.EINVALID, "sweep: SweepOptions.Runtime is required")
	}
	refs, err := h.listSessions()
	if err != nil {
		return res, err
	}
	now := h.now()
	var jobs []sweepJob
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		dir := filepath.Join(h.layout.Root, ref.AgentGroupID, ref.SessionID)
		// One stat of the folder first: every write transaction in DELETE
		// journal mode creates and removes the -journal file beside the
		// database, which moves the folder's mtime. Only a folder that moved
		// is worth the three file stats. (A heartbeat touch does not move
		// it, but heartbeats only matter while a container runs, and those
		// sessions are always examined.)
		dsig := statSig(dir)
		if !dsig.found {
			continue
		}
		running := o.Runtime.Running(ref)
		s := h.session(ref)
		h.mu.Lock()
		st := s.sweep
		dirMoved := !st.seen || st.dir != dsig
		quarantined := s.quarantined
		backedOff := now.Before(s.backoffUntil)
		due := !st.nextDue.IsZero() && !now.Before(st.nextDue)
		h.mu.Unlock()
		if !dirMoved && !running && !due && !backedOff && !o.Full {
			res.Sessions++
			continue
		}
		in := statSig(filepath.Join(dir, InboundFile))
		if !in.found {
			continue
		}
		res.Sessions++
		out := statSig(filepath.Join(dir, OutboundFile))
		hb := statSig(filepath.Join(dir, HeartbeatFile))
		changed := !st.seen || st.inbound != in || st.outbound != out || st.heartbeat != hb
		h.mu.Lock()
		if s.quarantined && changed {
			s.quarantined = false
			quarantined = false
		}
		if !changed {
			s.sweep.dir = dsig
		}
		h.mu.Unlock()
		switch {
		case quarantined && !o.Full:
			continue
		case backedOff:
			res.BackedOff++
			continue
		case !(o.Full || changed || running || due):
			continue
		}
		res.Examined++
		jobs = append(jobs, sweepJob{ref: ref, dir: dir, s: s, running: running})
	}
	workers := o.Workers
	if workers <= 0 {
		workers = DefaultSweepWorkers
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	feed := make(chan sweepJob)
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range feed {
				h.examine(ctx, j, o, now, &mu, &res)
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		feed <- j
	}
	close(feed)
	wg.Wait()
	for _, l := range [][]SessionRef{res.Woken, res.Stopped, res.Reset, res.Quarantined} {
		sortRefs(l)
	}
	sort.Slice(res.Errors, func(i, j int) bool { return refLess(res.Errors[i].Ref, res.Errors[j].Ref) })
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// DefaultSweepWorkers is how many sessions a sweep examines at once.
const DefaultSweepWorkers = 4

type sweepJob struct {
	ref     SessionRef
	dir     string
	s       *hostSession
	running bool
}

// examine runs one session's sweep under its own deadline, merges what it
// did into res (under mu) and records the session's bookkeeping.
func (h *Host) examine(ctx context.Context, j sweepJob, o SweepOptions, now time.Time, mu *sync.Mutex, res *SweepResult) {
	sctx, cancel := context.WithTimeout(ctx, h.opts.OpTimeout)
	var local SweepResult
	nextDue, err := h.sweepSession(sctx, j.ref, o, j.running, &local)
	cancel()
	s := j.s
	h.mu.Lock()
	if err != nil {
		s.failures++
		backoff := h.opts.BackoffMax
		if s.failures < 30 {
			backoff = min(h.opts.BackoffMin<<(s.failures-1), h.opts.BackoffMax)
		}
		s.backoffUntil = now.Add(backoff)
		// Look again when the back-off ends, changed or not.
		nextDue = s.backoffUntil
		if sqlitedb.IsCorrupt(err) {
			s.quarantined = true
			local.Quarantined = append(local.Quarantined, j.ref)
		}
		local.Errors = append(local.Errors, newSessionError(j.ref, err))
	} else {
		s.failures = 0
		s.backoffUntil = time.Time{}
	}
	// Our own writes changed the files: remember them as they are now, so
	// the next tick does not reopen the session for nothing.
	s.sweep = sweepState{seen: true, nextDue: nextDue,
		dir:       statSig(j.dir),
		inbound:   statSig(filepath.Join(j.dir, InboundFile)),
		outbound:  statSig(filepath.Join(j.dir, OutboundFile)),
		heartbeat: statSig(filepath.Join(j.dir, HeartbeatFile))}
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("mailbox: sweep failed for session", "session", j.ref.String(), "err", err)
	}
	mu.Lock()
	res.Woken = append(res.Woken, local.Woken...)
	res.Stopped = append(res.Stopped, local.Stopped...)
	res.Reset = append(res.Reset, local.Reset...)
	res.Quarantined = append(res.Quarantined, local.Quarantined...)
	res.Errors = append(res.Errors, local.Errors...)
	mu.Unlock()
}

func refLess(a, b SessionRef) bool {
	if a.AgentGroupID != b.AgentGroupID {
		return a.AgentGroupID < b.AgentGroupID
	}
	return a.SessionID < b.SessionID
}

func sortRefs(l []SessionRef) { sort.Slice(l, func(i, j int) bool { return refLess(l[i], l[j]) }) }

// sweepSession runs one session's sweep steps and returns when it next needs
// a look without any file change. It opens outbound.db read-only once and
// inbound.db twice (before and after the wake/stop decision).
func (h *Host) sweepSession(ctx context.Context, ref SessionRef, o SweepOptions, running bool, res *SweepResult) (time.Time, error) {
	if !running {
		// A journal left by a killed agent makes every read-only read of
		// outbound fail; with no container alive it is safe to roll back
		// first.
		if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
			return time.Time{}, err
		}
	}
	var (
		due      int
		claims   []Claim
		cstate   ContainerState
		outTimes []sql.NullString
	)
	err := h.withOutboundRO(ctx, ref, func(out queryer) error {
		var err error
		if running {
			if cstate, err = readContainerState(out); err != nil {
				return err
			}
		}
		if claims, err = readClaims(out, AckProcessing); err != nil {
			return err
		}
		var t sql.NullString
		if err := scanOne(out, &t, "SELECT min(datetime(deliver_after)) FROM messages_out WHERE deliver_after IS NOT NULL AND datetime(deliver_after) > datetime(?)", FormatTime(h.now())); err != nil {
			return err
		}
		outTimes = append(outTimes, t)
		return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
			if _, err := syncAcksTx(tx, out); err != nil {
				return err
			}
			due, err = countDueTx(tx, h.now())
			return err
		})
	})
	if err != nil {
		return time.Time{}, err
	}
	woken := false
	if !running && o.Waker != nil && due > 0 {
		if err := o.Waker.Wake(ctx, ref); err != nil {
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
		if v := DecideStuck(h.now(), hb, cstate, claims); v != StuckOK {
			if err := o.Runtime.Stop(ctx, ref, v.String()); err != nil {
				return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stop stuck container of %s (%s)", ref, v)
			}
			res.Stopped = append(res.Stopped, ref)
			running = false
			if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
				return time.Time{}, err
			}
		}
	}
	if !running && !woken && len(claims) > 0 {
		r, err := h.ResetProcessing(ctx, ref)
		if err != nil {
			return time.Time{}, err
		}
		if r.AcksCleared > 0 || r.Retried > 0 || r.Failed > 0 {
			res.Reset = append(res.Reset, ref)
		}
	}
	var inTimes []sql.NullString
	err = h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		if _, err := h.advanceTx(ctx, tx, ref); err != nil {
			return err
		}
		if _, err := h.expireTx(tx); err != nil {
			return err
		}
		var err error
		inTimes, err = h.nextDueTx(tx)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	if o.Deliverer != nil {
		if _, err := h.Drain(ctx, ref, o.Deliverer); err != nil {
			return time.Time{}, err
		}
	}
	return earliest(append(inTimes, outTimes...)), nil
}

func scanOne(q queryer, dst any, query string, args ...any) error {
	rows, err := q.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dst); err != nil {
			return err
		}
	}
	return rows.Err()
}

// nextDueTx returns the inbound side's timed events: the earliest future
// process_after of a pending row, delivery retry, and system-row expiry.
func (h *Host) nextDueTx(tx *sqlitedb.Tx) ([]sql.NullString, error) {
	now := FormatTime(h.now())
	var times []sql.NullString
	for _, q := range []string{
		"SELECT min(datetime(process_after)) FROM messages_in WHERE status = 'pending' AND process_after IS NOT NULL AND datetime(process_after) > datetime(?1)",
		"SELECT min(datetime(next_attempt_at)) FROM delivery_attempts WHERE next_attempt_at IS NOT NULL AND datetime(next_attempt_at) > datetime(?1)",
		"SELECT min(datetime(timestamp, '+" + itoa(int64(h.opts.SystemRowTTL/time.Second)+1) + " seconds')) FROM messages_in WHERE kind = 'system' AND status = 'pending' AND ?1 IS NOT NULL",
	} {
		var t sql.NullString
		if err := tx.QueryRow(q, now).Scan(&t); err != nil {
			return nil, err
		}
		times = append(times, t)
	}
	return times, nil
}

func earliest(times []sql.NullString) time.Time {
	var next time.Time
	for _, t := range times {
		if !t.Valid {
			continue
		}
		v, err := ParseTime(t.String)
		if err != nil {
			continue
		}
		if next.IsZero() || v.Before(next) {
			next = v
		}
	}
	return next
}
