package mailbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestWatcherWakesOnChange(t *testing.T) {
	cases := []struct {
		name     string
		noNotify bool
		interval time.Duration
	}{
		{"notification", false, time.Hour},
		{"polling fallback", true, 20 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewWatcher(dir, []string{"watched.db"}, WatchOptions{Interval: c.interval, NoNotify: c.noNotify})
			must(t, err)
			defer w.Close()
			if w.Notifying() == c.noNotify {
				t.Fatalf("Notifying() = %v with NoNotify %v", w.Notifying(), c.noNotify)
			}
			// An unrelated file does not wake the waiter.
			must(t, os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o600))
			if changed, _ := w.Wait(ctxb, 100*time.Millisecond); changed {
				t.Fatal("woken by an unwatched file")
			}
			must(t, os.WriteFile(filepath.Join(dir, "watched.db"), []byte("x"), 0o600))
			changed, err := w.Wait(ctxb, 10*time.Second)
			if err != nil || !changed {
				t.Fatalf("Wait = %v, %v; want a change", changed, err)
			}
			ctx, cancel := context.WithCancel(ctxb)
			cancel()
			if _, err := w.Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait on a cancelled context = %v", err)
			}
			must(t, w.Close())
			must(t, w.Close())
		})
	}
}

func TestOnEnqueueHookAndListings(t *testing.T) {
	f := newFixture(t)
	var got []string
	f.host.opts.OnEnqueue = func(_ context.Context, ref SessionRef, id string, seq int64) {
		got = append(got, ref.String()+"/"+id+"/"+itoa(seq))
	}
	f.enqueue(chat("m1", "x"))
	f.enqueue(chat("m1", "x")) // duplicate: no call
	f.enqueue(chat("m2", "x"))
	if !slices.Equal(got, []string{"ag-1/sess-1/m1/2", "ag-1/sess-1/m2/4"}) {
		t.Errorf("hook calls %v", got)
	}
	must(t, f.host.InitSession(ctxb, SessionRef{AgentGroupID: "ag-2", SessionID: "s"}))
	// Folders that are not sessions are ignored.
	must(t, os.MkdirAll(filepath.Join(f.host.layout.Root, "ag-1", ".claude-shared"), 0o700))
	refs, err := f.host.Sessions(ctxb)
	if err != nil || !slices.Equal(refs, []SessionRef{{AgentGroupID: "ag-1", SessionID: "sess-1"}, {AgentGroupID: "ag-2", SessionID: "s"}}) {
		t.Fatalf("Sessions = %v, %v", refs, err)
	}
	rows, err := f.host.InboundRows(ctxb, f.ref, 1)
	if err != nil || len(rows) != 1 || rows[0].ID != "m2" || !rows[0].Trigger || rows[0].Status != "pending" {
		t.Fatalf("InboundRows = %+v, %v", rows, err)
	}
	f.send("o1", `{"text":"x"}`)
	out, err := f.host.OutboundRows(ctxb, f.ref, 0)
	if err != nil || len(out) != 1 || out[0].Seq != 5 {
		t.Fatalf("OutboundRows = %+v, %v", out, err)
	}
	_, err = f.host.InboundRow(ctxb, f.ref, "nope")
	wantCode(t, err, sessiondb.ENOTFOUND)
}

func TestRouteTo(t *testing.T) {
	f, a := newAgentFixture(t)
	must(t, f.host.PrepareSpawn(ctxb, f.ref, Spawn{
		Routing: Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T1"},
		Destinations: []Destination{
			{Name: "home", Type: DestinationChannel, ChannelType: "slack", PlatformID: "C1"},
			{Name: "ops", Type: DestinationChannel, ChannelType: "slack", PlatformID: "C2"},
			{Name: "peer", Type: DestinationAgent, AgentGroupID: "ag-2"},
		},
	}))
	cases := []struct {
		name string
		want Routing
		code string
	}{
		{"", Routing{"slack", "C1", "T1"}, ""},
		{"home", Routing{"slack", "C1", "T1"}, ""},
		{"ops", Routing{"slack", "C2", ""}, ""},
		{"peer", Routing{"agent", "ag-2", ""}, ""},
		{"nobody", Routing{}, sessiondb.ENOTFOUND},
	}
	for _, c := range cases {
		t.Run("to "+c.name, func(t *testing.T) {
			r, err := a.RouteTo(ctxb, c.name)
			if c.code != "" {
				wantCode(t, err, c.code)
				return
			}
			if err != nil || r != c.want {
				t.Fatalf("RouteTo = %+v, %v; want %+v", r, err, c.want)
			}
		})
	}
}

func TestPollReportsPersistentCorruption(t *testing.T) {
	f, a := newAgentFixture(t)
	in, _ := f.host.layout.InboundPath(f.ref)
	must(t, os.WriteFile(in, []byte("garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage"), 0o600))
	for i := 1; i <= MaxMalformedPolls; i++ {
		_, err := a.Poll(ctxb, PollOptions{})
		if err == nil {
			t.Fatalf("poll %d over a garbage file succeeded", i)
		}
		if got := errors.Is(err, ErrInboundMalformed); got != (i == MaxMalformedPolls) {
			t.Fatalf("poll %d: ErrInboundMalformed = %v (%v)", i, got, err)
		}
	}
}

func TestSharedGroupModes(t *testing.T) {
	gid := 0
	if groups, _ := os.Getgroups(); len(groups) > 0 {
		for _, g := range groups {
			if g > 0 {
				gid = g
				break
			}
		}
	}
	if gid == 0 && os.Geteuid() == 0 {
		gid = 4242 // root may hand files to any group
	}
	if gid == 0 {
		gid = os.Getgid()
	}
	h, err := NewHost(HostOptions{Layout: Layout{Root: filepath.Join(t.TempDir(), "v2")}, SharedGID: gid})
	must(t, err)
	ref := SessionRef{AgentGroupID: "g", SessionID: "s"}
	must(t, h.InitSession(ctxb, ref))
	dir, _ := h.layout.SessionDir(ref)
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o770}, {filepath.Join(dir, InboundFile), 0o660}, {filepath.Join(dir, OutboundFile), 0o660}, {filepath.Join(dir, OutboxDirName), 0o770}} {
		fi, err := os.Stat(c.path)
		must(t, err)
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s mode %v, want %v", c.path, fi.Mode().Perm(), c.mode)
		}
		if fi.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s grants world access", c.path)
		}
	}
	a, err := OpenAgent(ctxb, dir, AgentOptions{SharedGroup: true})
	must(t, err)
	defer a.Close()
	_, err = a.Send(ctxb, OutboundMessage{ID: "o", Content: []byte(`{}`), Files: []string{writeTemp(t, "f.txt", "x")}})
	must(t, err)
	if fi, _ := os.Stat(filepath.Join(dir, OutboxDirName, "o", "f.txt")); fi.Mode().Perm() != 0o660 {
		t.Errorf("shared outbox file mode %v", fi.Mode().Perm())
	}
}

// TestCancelledReadsAreBusy checks that the mailbox classifies SQLite
// errors like the history store does (sqlitedb.Code): a read cut off by its
// context is busy, on the host's read-only opens and on the agent's own
// connection, and still says it was cancelled.
func TestCancelledReadsAreBusy(t *testing.T) {
	f, a := newAgentFixture(t)
	ctx, cancel := context.WithCancel(ctxb)
	cancel()
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"host outbound rows", func() error { _, err := f.host.OutboundRows(ctx, f.ref, 0); return err }},
		{"agent state list", func() error { _, err := a.StateList(ctx); return err }},
		{"agent acks", func() error { _, err := a.Acks(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			wantCode(t, err, sessiondb.EBUSY)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v does not wrap context.Canceled", err)
			}
		})
	}
}
