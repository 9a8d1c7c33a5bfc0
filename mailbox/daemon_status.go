package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiondb/sessiondb"
)

// HostStatusFile is the file a running Daemon keeps in its data root so
// that other processes (`sessiondb mailbox status`) can see what only the
// daemon knows: which sessions it backed off or quarantined, and why. It is
// removed when Run ends. Being a file, not a folder, it is never mistaken
// for an agent group.
const HostStatusFile = ".sessiondb-host.json"

// HostStatus is the content of HostStatusFile.
type HostStatus struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// FullSweep is the daemon's full-sweep interval: the file is rewritten
	// at least that often while the daemon runs.
	FullSweep time.Duration `json:"full_sweep_ns"`
	// Sessions lists, by "<group>/<session>", the sessions with trouble or
	// a running container; healthy idle sessions are absent.
	Sessions map[string]SessionHealth `json:"sessions,omitempty"`
}

// SessionHealth is the daemon's view of one session.
type SessionHealth struct {
	Running           bool      `json:"running,omitempty"`
	Quarantined       bool      `json:"quarantined,omitempty"`
	SweepFailures     int       `json:"sweep_failures,omitempty"`
	SweepBackoffUntil time.Time `json:"sweep_backoff_until,omitzero"`
	DrainFailures     int       `json:"drain_failures,omitempty"`
	DrainBackoffUntil time.Time `json:"drain_backoff_until,omitzero"`
	LastError         string    `json:"last_error,omitempty"`
}

// BackoffUntil is the later of the two back-offs (zero: none).
func (s SessionHealth) BackoffUntil() time.Time {
	if s.DrainBackoffUntil.After(s.SweepBackoffUntil) {
		return s.DrainBackoffUntil
	}
	return s.SweepBackoffUntil
}

// Live reports whether the status was written recently enough (within two
// full-sweep intervals of now) to come from a running daemon.
func (s HostStatus) Live(now time.Time) bool {
	return !s.UpdatedAt.IsZero() && now.Sub(s.UpdatedAt) < 2*max(s.FullSweep, time.Minute)
}

// ReadHostStatus reads root's HostStatusFile; found is false when there is
// none (no daemon runs, or it stopped cleanly).
func ReadHostStatus(root string) (st HostStatus, found bool, err error) {
	b, err := os.ReadFile(filepath.Join(root, HostStatusFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read host status")
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, sessiondb.Errorf(sessiondb.EINTERNAL, "host status %s is not valid JSON: %v", filepath.Join(root, HostStatusFile), err)
	}
	return st, true, nil
}

// health collects the sessions worth reporting; running is the tick's
// Runtime verdict per folder (asked once per tick, not again here). d.mu
// must not be held.
func (d *Daemon) health(refs []SessionRef, running map[SessionRef]bool) map[string]SessionHealth {
	out := map[string]SessionHealth{}
	now := d.h.now()
	d.h.mu.Lock()
	for _, ref := range refs {
		s := d.h.sessions[ref]
		if s == nil || (s.failures == 0 && !s.quarantined) {
			continue
		}
		hh := out[ref.String()]
		hh.Quarantined, hh.SweepFailures = s.quarantined, s.failures
		if s.backoffUntil.After(now) {
			hh.SweepBackoffUntil = s.backoffUntil
		}
		out[ref.String()] = hh
	}
	d.h.mu.Unlock()
	d.mu.Lock()
	for _, ref := range refs {
		hh, trouble := out[ref.String()]
		if trouble {
			hh.LastError = d.sweepErr[ref]
		}
		if s := d.slots[ref]; s != nil && s.failures > 0 {
			hh.DrainFailures, hh.LastError = s.failures, s.lastErr
			if s.backoffUntil.After(now) {
				hh.DrainBackoffUntil = s.backoffUntil
			}
			trouble = true
		}
		if running[ref] {
			hh.Running, trouble = true, true
		}
		if trouble {
			out[ref.String()] = hh
		}
	}
	d.mu.Unlock()
	return out
}

// writeStatus rewrites HostStatusFile when the sessions' health changed or
// a full-sweep interval passed since the last write. Failures are logged:
// the status file is a window, never a reason to stop.
func (d *Daemon) writeStatus(refs []SessionRef, running map[SessionRef]bool, force bool) {
	now := d.h.now()
	sessions := d.health(refs, running)
	body, _ := json.Marshal(sessions)
	if !force && bytes.Equal(body, d.lastHealth) && now.Sub(d.lastStatusAt) < d.opts.FullSweep && !now.Before(d.lastStatusAt) {
		return
	}
	st := HostStatus{PID: os.Getpid(), StartedAt: d.started, UpdatedAt: now, FullSweep: d.opts.FullSweep, Sessions: sessions}
	b, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(d.h.layout.Root, HostStatusFile), append(b, '\n'))
	}
	if err != nil {
		d.log.Warn("mailbox: cannot write the host status file", "err", err)
		return
	}
	d.lastHealth, d.lastStatusAt = body, now
}

// writeFileAtomic writes path through a temporary file and a rename, so a
// reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
	}
	return werr
}
