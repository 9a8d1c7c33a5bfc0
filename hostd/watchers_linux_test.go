package hostd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// allRunning is a Runtime whose every container runs.
type allRunning struct{}

func (allRunning) Running(mailbox.SessionRef) bool                        { return true }
func (allRunning) Stop(context.Context, mailbox.SessionRef, string) error { return nil }

// TestDaemonWatchesManySessionsOnOneInstance: a host with 200 running
// sessions watches their outbound files through one inotify instance, not
// one each (the user's default limit is 128, shared with every other
// program), one watch per folder; a reply written in any of them is
// delivered at once, woken by notification alone (the tick is an hour
// away); stopping the daemon releases the instance.
func TestDaemonWatchesManySessionsOnOneInstance(t *testing.T) {
	const sessions = 200
	root := filepath.Join(t.TempDir(), "v2-sessions")
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]mailbox.SessionRef, sessions)
	for i := range refs {
		refs[i] = mailbox.SessionRef{AgentGroupID: fmt.Sprintf("g%d", i%4), SessionID: fmt.Sprintf("s%03d", i)}
		if err := h.InitSession(ctxb, refs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	delivered := map[string]bool{}
	d, err := New(h, Config{Runtime: allRunning{}, Poll: time.Hour, FullSweep: time.Hour,
		Deliverer: mailbox.DelivererFunc(func(_ context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			delivered[row.ID] = true
			return "", nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	baseInst, baseWatches := testkit.Inotify(t)
	ctx, cancel := context.WithCancel(ctxb)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	defer stop()
	testkit.WaitFor(t, "a watch on every running session, or a second inotify instance", func() bool {
		inst, watches := testkit.Inotify(t)
		return watches-baseWatches == sessions || inst-baseInst > 1
	})
	if inst, watches := testkit.Inotify(t); inst-baseInst != 1 || watches-baseWatches != sessions {
		t.Fatalf("%d running sessions are watched through %d inotify instances and %d watches, want 1 and %d",
			sessions, inst-baseInst, watches-baseWatches, sessions)
	}

	for i, ref := range refs {
		dir, _ := h.Layout().SessionDir(ref)
		a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Send(ctxb, mailbox.OutboundMessage{ID: fmt.Sprintf("reply-%d", i), Content: json.RawMessage(`{"text":"hi"}`),
			Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}})
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "every reply delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) == sessions
	})

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if inst, watches := testkit.Inotify(t); inst != baseInst || watches != baseWatches {
		t.Fatalf("after the daemon stopped: %d inotify instances and %d watches, want %d and %d", inst, watches, baseInst, baseWatches)
	}
}

// TestWatchSetSleepsThroughWritesThatCommitNothing: the daemon's watcher of
// a running session's outbound.db calls for a drain at the agent's commits
// (the journal's removal), not at each write to the file: a pwrite into the
// open file (the same bytes again) calls for none.
func TestWatchSetSleepsThroughWritesThatCommitNothing(t *testing.T) {
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(t.TempDir(), "v2-sessions")}})
	if err != nil {
		t.Fatal(err)
	}
	ref := mailbox.SessionRef{AgentGroupID: "g", SessionID: "s"}
	if err := h.InitSession(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	s := newWatchSet(h.Layout(), time.Hour, func(mailbox.SessionRef) { calls.Add(1) })
	defer s.close()
	s.sync(map[mailbox.SessionRef]bool{ref: true})
	dir, _ := h.Layout().SessionDir(ref)
	f, err := os.OpenFile(filepath.Join(dir, mailbox.OutboundFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.ReadAt(page, 0); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := f.WriteAt(page, 0); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // give a wrong call the time to come
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d drains called for by writes that commit nothing", n)
	}
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "reply", Content: json.RawMessage(`{"text":"hi"}`),
		Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "a drain called for by the agent's commit", func() bool { return calls.Load() > 0 })
}
