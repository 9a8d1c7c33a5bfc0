package hostd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"

	"github.com/sessiondb/sessiondb/mailbox"
)

// fakeRuntime records wakes and stops; running sessions are a set.
type fakeRuntime struct {
	mu      sync.Mutex
	running map[mailbox.SessionRef]bool
	woken   []mailbox.SessionRef
	stopped []mailbox.SessionRef
	wakeErr error
}

func newFakeRuntime() *fakeRuntime { return &fakeRuntime{running: map[mailbox.SessionRef]bool{}} }

func (r *fakeRuntime) Running(ref mailbox.SessionRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[ref]
}

func (r *fakeRuntime) Stop(_ context.Context, ref mailbox.SessionRef, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, ref)
	r.stopped = append(r.stopped, ref)
	return nil
}

func (r *fakeRuntime) Wake(_ context.Context, ref mailbox.SessionRef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wakeErr != nil {
		return r.wakeErr
	}
	r.running[ref] = true
	r.woken = append(r.woken, ref)
	return nil
}

// newSweeper returns a Sweeper over h with rt as its Runtime, and as its
// Waker too when wake is set.
func newSweeper(t *testing.T, h *mailbox.Host, rt *fakeRuntime, wake bool) *Sweeper {
	t.Helper()
	cfg := SweeperConfig{Host: h, Runtime: rt}
	if wake {
		cfg.Waker = rt
	}
	sw, err := NewSweeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

func TestSweepSessionSteps(t *testing.T) {
	f := newFixture(t)
	rt := newFakeRuntime()
	sw := newSweeper(t, f.host, rt, true)
	f.enqueue(chat("m1", "x"))
	res, err := sw.Sweep(ctxb, false)
	must(t, err)
	if !slices.Equal(res.Woken, []mailbox.SessionRef{f.ref}) || res.Sessions != 1 || res.Examined != 1 {
		t.Fatalf("first tick %+v", res)
	}
	// The container claims the row, then goes silent.
	a := f.openAgent()
	must(t, a.MarkProcessing(ctxb, "m1"))
	f.clk.Advance(30 * time.Second)
	res, err = sw.Sweep(ctxb, false)
	must(t, err)
	if len(res.Stopped) != 0 || len(res.Woken) != 0 {
		t.Fatalf("second tick acted too early: %+v", res)
	}
	f.clk.Advance(45 * time.Second)
	res, err = sw.Sweep(ctxb, false)
	must(t, err)
	if !slices.Equal(res.Stopped, []mailbox.SessionRef{f.ref}) || !slices.Equal(res.Reset, []mailbox.SessionRef{f.ref}) {
		t.Fatalf("stuck tick %+v", res)
	}
	row := f.query(mailbox.InboundFile, "SELECT status, tries, process_after FROM messages_in")[0]
	if row[0] != "pending" || row[1] != int64(1) || row[2] != mailbox.FormatTime(f.clk.Now().Add(5*time.Second)) {
		t.Errorf("after reset %v", row)
	}
	// Not due yet: the sweep must not wake; once due, it does.
	res, _ = sw.Sweep(ctxb, false)
	if len(res.Woken) != 0 {
		t.Fatalf("woke before process_after: %+v", res)
	}
	f.clk.Advance(5 * time.Second)
	res, _ = sw.Sweep(ctxb, false)
	if len(res.Woken) != 1 {
		t.Fatalf("not woken when the retry became due (nextDue bookkeeping): %+v", res)
	}
	// Completed ack synced, recurrence advanced and system rows expired in
	// the same tick.
	must(t, a.MarkCompleted(ctxb, "m1"))
	f.enqueue(mailbox.InboundMessage{ID: "qr-1", Kind: mailbox.KindSystem, Content: jsonc(t, map[string]any{"type": "question_response", "questionId": "q"})})
	f.clk.Advance(11 * time.Minute)
	_, err = sw.Sweep(ctxb, false)
	must(t, err)
	if got := f.one(mailbox.InboundFile, "SELECT group_concat(id || '=' || status) FROM messages_in ORDER BY seq"); got != "m1=completed,qr-1=failed" {
		t.Errorf("statuses %v", got)
	}
}

func TestSweepOnlyExaminesChangedSessions(t *testing.T) {
	f := newFixture(t)
	other := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-2"}
	must(t, f.host.InitSession(ctxb, other))
	rt := newFakeRuntime()
	sw := newSweeper(t, f.host, rt, false)
	res, _ := sw.Sweep(ctxb, false)
	if res.Examined != 2 {
		t.Fatalf("first tick examined %d, want 2", res.Examined)
	}
	res, _ = sw.Sweep(ctxb, false)
	if res.Examined != 0 || res.Sessions != 2 {
		t.Fatalf("idle tick %+v, want nothing examined", res)
	}
	f.enqueue(chat("m", "x"))
	res, _ = sw.Sweep(ctxb, false)
	if res.Examined != 1 {
		t.Fatalf("after one change examined %d, want 1", res.Examined)
	}
	res, _ = sw.Sweep(ctxb, true)
	if res.Examined != 2 {
		t.Fatalf("full pass examined %d", res.Examined)
	}
	rt.running[other] = true
	res, _ = sw.Sweep(ctxb, false)
	if res.Examined != 1 {
		t.Fatalf("running session not examined: %+v", res)
	}
}

func TestSweepIsolatesBrokenSessions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2")
	clk := newClock()
	h, _ := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Now: clk.Now, OpTimeout: 5 * time.Second})
	const n = 100
	for i := 0; i < n; i++ {
		ref := mailbox.SessionRef{AgentGroupID: fmt.Sprintf("g%d", i%7), SessionID: fmt.Sprintf("s%03d", i)}
		must(t, h.InitSession(ctxb, ref))
		if _, _, err := h.Enqueue(ctxb, ref, chat("m", "x")); err != nil {
			t.Fatal(err)
		}
	}
	bad := mailbox.SessionRef{AgentGroupID: "g0", SessionID: "zz-broken"}
	must(t, h.InitSession(ctxb, bad))
	badOut, _ := h.Layout().OutboundPath(bad)
	must(t, os.WriteFile(badOut, []byte("this is not a database, just garbage bytes......................................................................................"), 0o600))
	rt := newFakeRuntime()
	sw := newSweeper(t, h, rt, true)
	res, err := sw.Sweep(ctxb, false)
	must(t, err)
	if len(res.Woken) != n {
		t.Errorf("woken %d of %d healthy sessions", len(res.Woken), n)
	}
	if !slices.Equal(res.Quarantined, []mailbox.SessionRef{bad}) || len(res.Errors) != 1 || res.Errors[0].Ref != bad {
		t.Fatalf("quarantine %+v errors %+v", res.Quarantined, res.Errors)
	}
	if !sqlitedb.IsCorrupt(res.Errors[0].Err) {
		t.Errorf("error is not classified as corrupt: %v", res.Errors[0].Err)
	}
	// Quarantined sessions are skipped until their files change, even once
	// the back-off ends.
	clk.Advance(time.Hour)
	res, _ = sw.Sweep(ctxb, false)
	if len(res.Errors) != 0 {
		t.Errorf("quarantined session retried without change: %+v", res.Errors)
	}
}

func TestSweepBacksOffFailingSessions(t *testing.T) {
	f := newFixture(t)
	rt := newFakeRuntime()
	rt.wakeErr = errors.New("runtime down")
	f.enqueue(chat("m", "x"))
	sw := newSweeper(t, f.host, rt, true)
	res, _ := sw.Sweep(ctxb, false)
	if len(res.Errors) != 1 {
		t.Fatalf("errors %+v", res.Errors)
	}
	for _, step := range []struct {
		advance time.Duration
		retried bool
	}{
		{500 * time.Millisecond, false}, // 1 s back-off
		{500 * time.Millisecond, true},
		{1500 * time.Millisecond, false}, // 2 s back-off
		{500 * time.Millisecond, true},
	} {
		f.clk.Advance(step.advance)
		res, _ = sw.Sweep(ctxb, false)
		if (len(res.Errors) == 1) != step.retried || (res.BackedOff == 1) == step.retried {
			t.Fatalf("after +%v: %+v", step.advance, res)
		}
	}
	rt.wakeErr = nil
	f.clk.Advance(time.Hour)
	res, _ = sw.Sweep(ctxb, false)
	if len(res.Woken) != 1 || len(res.Errors) != 0 {
		t.Fatalf("recovery tick %+v", res)
	}
}
