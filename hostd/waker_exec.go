package hostd

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// DefaultStopGrace is how long ExecWaker.Stop waits after SIGTERM before it
// sends SIGKILL.
const DefaultStopGrace = 10 * time.Second

// ExecWaker wakes a session by starting Command, and is the daemon's
// Runtime for the processes it started: the process is the session's
// "container" while it runs.
//
// The command runs under /bin/sh -c with the session folder appended as its
// last argument (`sh -c 'CMD "$@"' sh DIR`, so `exec:./agent.sh` runs
// `./agent.sh DIR`), in the session folder, in its own process group, with
// SESSIONDB_AGENT_GROUP, SESSIONDB_SESSION and SESSIONDB_SESSION_DIR set.
// Before the start it deletes .heartbeat (absent = fresh spawn, for the
// stuck check). Standard output and error go to Output (default discarded).
//
// A waker serves one data root; it is safe for concurrent use.
type ExecWaker struct {
	command string
	layout  mailbox.Layout
	opts    ExecWakerOptions
	log     *slog.Logger

	mu    sync.Mutex
	procs map[mailbox.SessionRef]*wakeProc
	// outMu keeps the processes' output lines whole (wakeOutput).
	outMu sync.Mutex
}

// ExecWakerOptions configure an ExecWaker.
type ExecWakerOptions struct {
	// StopGrace is the wait between SIGTERM and SIGKILL; default 10 s.
	StopGrace time.Duration
	// Output receives the commands' standard output and error; nil
	// discards them.
	Output io.Writer
	// Env is added to the inherited environment.
	Env []string
	// OnExit is called (in its own goroutine) after a started process
	// exits, with its exit error (nil for status 0); the daemon uses it to
	// drain the session once more.
	OnExit func(ref mailbox.SessionRef, err error)
	// Logger receives start/exit logs; nil discards them.
	Logger *slog.Logger
}

type wakeProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// NewExecWaker returns a waker running command (not empty) for the
// sessions of layout.
func NewExecWaker(command string, layout mailbox.Layout, o ExecWakerOptions) (*ExecWaker, error) {
	if strings.TrimSpace(command) == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "exec waker: the command is empty")
	}
	if layout.Root == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "exec waker: layout root is empty")
	}
	o.StopGrace = positiveOr(o.StopGrace, DefaultStopGrace)
	if o.Output == nil {
		o.Output = io.Discard
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ExecWaker{command: command, layout: layout, opts: o, log: log, procs: map[mailbox.SessionRef]*wakeProc{}}, nil
}

// SetOnExit replaces the exit hook; call it before the first Wake.
func (w *ExecWaker) SetOnExit(fn func(ref mailbox.SessionRef, err error)) {
	w.mu.Lock()
	w.opts.OnExit = fn
	w.mu.Unlock()
}

// addOnExit chains fn after the exit hook already set (the daemon's drain
// after the caller's own hook).
func (w *ExecWaker) addOnExit(fn func(ref mailbox.SessionRef, err error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.opts.OnExit
	w.opts.OnExit = func(ref mailbox.SessionRef, err error) {
		if prev != nil {
			prev(ref, err)
		}
		fn(ref, err)
	}
}

// Wake starts the command for ref unless a process it started for ref still
// runs (then it does nothing). The process is not tied to ctx: it lives
// until it exits or Stop/StopAll ends it.
func (w *ExecWaker) Wake(ctx context.Context, ref mailbox.SessionRef) error {
	dir, err := w.layout.SessionDir(ref)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return sessiondb.Wrap(sessiondb.EBUSY, err, "wake %s", ref)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.procs[ref]; p != nil {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, mailbox.HeartbeatFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "wake %s: remove .heartbeat", ref)
	}
	cmd := exec.Command("/bin/sh", "-c", w.command+` "$@"`, "sessiondb-wake", dir)
	cmd.Dir = dir
	ownProcessGroup(cmd)
	// One writer for both, so the two streams are copied by one goroutine
	// (exec's rule for equal writers) and lines stay whole.
	output := &wakeOutput{mu: &w.outMu, out: w.opts.Output, prefix: "[wake " + ref.String() + "] "}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.Env = append(os.Environ(), w.opts.Env...)
	cmd.Env = append(cmd.Env, "SESSIONDB_AGENT_GROUP="+ref.AgentGroupID, "SESSIONDB_SESSION="+ref.SessionID,
		"SESSIONDB_SESSION_DIR="+dir)
	// Pipes held open by a grandchild must not keep Wait (and Running)
	// from seeing the process exit.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "wake %s: start %q", ref, errtext.Clip(w.command, 100))
	}
	p := &wakeProc{cmd: cmd, done: make(chan struct{})}
	w.procs[ref] = p
	onExit := w.opts.OnExit
	w.log.Info("mailbox: container started", "session", ref.String(), "pid", cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		output.Flush()
		w.mu.Lock()
		if w.procs[ref] == p {
			delete(w.procs, ref)
		}
		w.mu.Unlock()
		close(p.done)
		w.log.Info("mailbox: container exited", "session", ref.String(), "err", p.err)
		if onExit != nil {
			onExit(ref, p.err)
		}
	}()
	return nil
}

// Running reports whether a process this waker started for ref still runs.
func (w *ExecWaker) Running(ref mailbox.SessionRef) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.procs[ref] != nil
}

// RunningSessions lists the sessions with a running process.
func (w *ExecWaker) RunningSessions() []mailbox.SessionRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]mailbox.SessionRef, 0, len(w.procs))
	for r := range w.procs {
		out = append(out, r)
	}
	return out
}

// Stop ends ref's process: SIGTERM to its process group, SIGKILL after
// StopGrace (or when ctx ends), and returns once it has exited, so the
// caller may treat the container as confirmed dead. No process: nil.
func (w *ExecWaker) Stop(ctx context.Context, ref mailbox.SessionRef, reason string) error {
	w.mu.Lock()
	p := w.procs[ref]
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	w.log.Info("mailbox: stopping container", "session", ref.String(), "reason", reason)
	_ = terminate(p.cmd)
	t := time.NewTimer(w.opts.StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = kill(p.cmd)
	<-p.done
	return nil
}

// StopAll stops every running process (in parallel) and returns when all
// have exited.
func (w *ExecWaker) StopAll(ctx context.Context, reason string) {
	var wg sync.WaitGroup
	for _, ref := range w.RunningSessions() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Stop(ctx, ref, reason)
		}()
	}
	wg.Wait()
}
