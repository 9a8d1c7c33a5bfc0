package mailbox

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
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
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].AgentGroupID != refs[j].AgentGroupID {
			return refs[i].AgentGroupID < refs[j].AgentGroupID
		}
		return refs[i].SessionID < refs[j].SessionID
	})
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
		sctx, cancel := context.WithTimeout(ctx, h.opts.OpTimeout)
		nextDue, err := h.sweepSession(sctx, ref, o, running, &res)
		cancel()
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
				res.Quarantined = append(res.Quarantined, ref)
			}
			res.Errors = append(res.Errors, newSessionError(ref, err))
		} else {
			s.failures = 0
			s.backoffUntil = time.Time{}
		}
		// Our own writes changed the files: remember them as they are now,
		// so the next tick does not reopen the session for nothing.
		s.sweep = sweepState{seen: true, nextDue: nextDue,
			dir:       statSig(dir),
			inbound:   statSig(filepath.Join(dir, InboundFile)),
			outbound:  statSig(filepath.Join(dir, OutboundFile)),
			heartbeat: statSig(filepath.Join(dir, HeartbeatFile))}
		h.mu.Unlock()
		if err != nil {
			h.log.Warn("mailbox: sweep failed for session", "session", ref.String(), "err", err)
		}
	}
	return res, nil
}

// sweepSession runs one session's sweep steps and returns when it next needs
// a look without any file change.
func (h *Host) sweepSession(ctx context.Context, ref SessionRef, o SweepOptions, running bool, res *SweepResult) (time.Time, error) {
	if !running {
		// A journal left by a killed agent makes every read-only read of
		// outbound fail; with no container alive it is safe to roll back
		// first.
		if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
			return time.Time{}, err
		}
	}
	if _, err := h.SyncAcks(ctx, ref); err != nil {
		return time.Time{}, err
	}
	woken := false
	if !running && o.Waker != nil {
		n, err := h.CountDue(ctx, ref)
		if err != nil {
			return time.Time{}, err
		}
		if n > 0 {
			if err := o.Waker.Wake(ctx, ref); err != nil {
				return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "wake %s", ref)
			}
			woken = true
			res.Woken = append(res.Woken, ref)
		}
	}
	if running {
		v, err := h.CheckStuck(ctx, ref)
		if err != nil {
			return time.Time{}, err
		}
		if v != StuckOK {
			if err := o.Runtime.Stop(ctx, ref, v.String()); err != nil {
				return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stop stuck container of %s (%s)", ref, v)
			}
			res.Stopped = append(res.Stopped, ref)
			running = false
		}
	}
	if !running && !woken {
		if _, err := h.RecoverHotJournal(ctx, ref); err != nil {
			return time.Time{}, err
		}
		r, err := h.ResetProcessing(ctx, ref)
		if err != nil {
			return time.Time{}, err
		}
		if r.AcksCleared > 0 || r.Retried > 0 || r.Failed > 0 {
			res.Reset = append(res.Reset, ref)
		}
	}
	if _, err := h.AdvanceRecurrences(ctx, ref); err != nil {
		return time.Time{}, err
	}
	if _, err := h.ExpireSystemRows(ctx, ref); err != nil {
		return time.Time{}, err
	}
	if o.Deliverer != nil {
		if _, err := h.Drain(ctx, ref, o.Deliverer); err != nil {
			return time.Time{}, err
		}
	}
	return h.nextDue(ctx, ref)
}

// nextDue returns the earliest future time at which a timed event of the
// session needs the sweep: a pending row's process_after, a delivery retry,
// a pending system row's expiry, or an outbound deliver_after. Zero: none.
func (h *Host) nextDue(ctx context.Context, ref SessionRef) (time.Time, error) {
	now := FormatTime(h.now())
	var times []sql.NullString
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		times = times[:0]
		for _, q := range []string{
			"SELECT min(datetime(process_after)) FROM messages_in WHERE status = 'pending' AND process_after IS NOT NULL AND datetime(process_after) > datetime(?1)",
			"SELECT min(datetime(next_attempt_at)) FROM delivery_attempts WHERE next_attempt_at IS NOT NULL AND datetime(next_attempt_at) > datetime(?1)",
			"SELECT min(datetime(timestamp, '+" + itoa(int64(h.opts.SystemRowTTL/time.Second)+1) + " seconds')) FROM messages_in WHERE kind = 'system' AND status = 'pending' AND ?1 IS NOT NULL",
		} {
			var t sql.NullString
			if err := tx.QueryRow(q, now).Scan(&t); err != nil {
				return err
			}
			times = append(times, t)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	err = h.withOutboundRO(ctx, ref, func(q queryer) error {
		rows, err := q.Query("SELECT min(datetime(deliver_after)) FROM messages_out WHERE deliver_after IS NOT NULL AND datetime(deliver_after) > datetime(?)", now)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t sql.NullString
			if err := rows.Scan(&t); err != nil {
				return err
			}
			times = append(times, t)
		}
		return rows.Err()
	})
	if err != nil {
		return time.Time{}, err
	}
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
	return next, nil
}
