package hostd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/safefile"
	"github.com/sessiondb/sessiondb/mailbox"
)

// StatusFile is the file a running Daemon keeps in its data root so that
// other processes (`sessiondb mailbox status`) can see what only the daemon
// knows: which sessions it backed off or quarantined, and why. It is
// removed when Run ends. Being a file, not a folder, it is never mistaken
// for an agent group, and its name is reserved (sessiondb.HostFiles).
const StatusFile = sessiondb.HostStatusFile

// maxStatusBytes bounds what ReadStatus reads: one line per troubled
// session, far below this.
const maxStatusBytes = 16 << 20

// Status is the content of StatusFile.
type Status struct {
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
	// Running is true while a container the daemon's runtime started runs
	// (ExecWaker); never for one only inferred from a fresh heartbeat
	// (HeartbeatRuntime).
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
func (s Status) Live(now time.Time) bool {
	return !s.UpdatedAt.IsZero() && now.Sub(s.UpdatedAt) < 2*max(s.FullSweep, time.Minute)
}

// SessionReport is a session's mailbox summary with what a running daemon
// says about it (back-off, quarantine, its container), when it says
// anything. In JSON it is the summary's fields plus "host".
type SessionReport struct {
	mailbox.SessionStatus
	Host *SessionHealth `json:"host,omitempty"`
}

// ReadStatus reads root's StatusFile; found is false when there is none
// (no daemon runs, or it stopped cleanly).
func ReadStatus(root string) (st Status, found bool, err error) {
	// The file is read without following a link or waiting on a FIFO
	// planted in its place, and only up to a size no real status reaches.
	b, err := safefile.ReadFile("host status", filepath.Join(root, StatusFile), maxStatusBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, sessiondb.Errorf(sessiondb.EINTERNAL, "host status %s is not valid JSON: %v", filepath.Join(root, StatusFile), err)
	}
	return st, true, nil
}

// statusWriter keeps StatusFile up to date; it is used by the tick loop only.
type statusWriter struct {
	root      string
	fullSweep time.Duration
	started   time.Time
	log       *slog.Logger

	lastHealth   []byte
	lastStatusAt time.Time
}

// write rewrites StatusFile with sessions when their health changed, when
// force is set, or when a full-sweep interval passed since the last write.
// Failures are logged: the status file is a window, never a reason to stop.
func (w *statusWriter) write(sessions map[mailbox.SessionRef]SessionHealth, now time.Time, force bool) {
	byName := make(map[string]SessionHealth, len(sessions))
	for ref, hh := range sessions {
		byName[ref.String()] = hh
	}
	body, _ := json.Marshal(byName)
	if !force && bytes.Equal(body, w.lastHealth) && now.Sub(w.lastStatusAt) < w.fullSweep && !now.Before(w.lastStatusAt) {
		return
	}
	st := Status{PID: os.Getpid(), StartedAt: w.started, UpdatedAt: now, FullSweep: w.fullSweep, Sessions: byName}
	b, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = safefile.WriteFile("host status", filepath.Join(w.root, StatusFile), append(b, '\n'), 0o600)
	}
	if err != nil {
		w.log.Warn("mailbox: cannot write the host status file", "err", err)
		return
	}
	w.lastHealth, w.lastStatusAt = body, now
}

// remove deletes StatusFile (when Run ends).
func (w *statusWriter) remove() {
	if err := os.Remove(filepath.Join(w.root, StatusFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("mailbox: cannot remove the host status file", "err", err)
	}
}

// DataReport is every session's mailbox summary under a data root, with
// what the host daemon running on it says: `mailbox status` and the
// server's mailbox page.
type DataReport struct {
	// Host is the daemon's status file; nil when there is none.
	Host *Status `json:"host,omitempty"`
	// HostRunning is true when that file was written recently enough to
	// come from a running daemon (Status.Live).
	HostRunning bool            `json:"host_running"`
	Sessions    []SessionReport `json:"sessions"`
}

// Report reads the summary of every session under root, in name order. A
// session that cannot be read shows its error (Stuck "?") instead of
// failing the report; the daemon's view is attached only while it runs.
func Report(ctx context.Context, h *mailbox.Host, root string, now time.Time) (DataReport, error) {
	rep := DataReport{Sessions: []SessionReport{}}
	refs, err := h.Sessions(ctx)
	if err != nil {
		return rep, err
	}
	hs, found, err := ReadStatus(root)
	if err != nil {
		return rep, err
	}
	if found {
		rep.Host, rep.HostRunning = &hs, hs.Live(now)
	}
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		st, err := h.Status(ctx, ref)
		if err != nil {
			st = mailbox.SessionStatus{Ref: ref, Stuck: "?", LastError: err.Error()}
		}
		r := SessionReport{SessionStatus: st}
		if hh, ok := hs.Sessions[ref.String()]; ok && rep.HostRunning {
			r.Host = &hh
		}
		rep.Sessions = append(rep.Sessions, r)
	}
	return rep, nil
}
