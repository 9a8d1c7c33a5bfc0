package hostd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// TestDaemonRetriesWhenDue checks that a failed delivery is tried again
// when its back-off ends on the host's clock (no file changes, no full
// sweep in between), and only then.
func TestDaemonRetriesWhenDue(t *testing.T) {
	f := newFixture(t)
	clk, h, ref, dir := f.clk, f.host, f.ref, f.dir
	if _, err := f.openAgent().Send(ctxb, mailbox.OutboundMessage{ID: "o-1", Content: json.RawMessage(`{"text":"x"}`), Routing: mailbox.Routing{ChannelType: "test", PlatformID: "c"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var attempts []time.Time
	del := mailbox.DelivererFunc(func(ctx context.Context, r mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, clk.Now())
		if len(attempts) == 1 {
			return "", errors.New("upstream down")
		}
		return "P-1", nil
	})
	n := func() int { mu.Lock(); defer mu.Unlock(); return len(attempts) }
	dm, err := New(h, Config{Deliverer: del, Poll: 10 * time.Millisecond, FullSweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dm.Run(ctx) }()
	testkit.WaitFor(t, "the first attempt", func() bool { return n() == 1 })
	// Many ticks pass on a stopped clock: the row must not be retried
	// before its back-off (2 s on the host clock) ends.
	testkit.WaitFor(t, "the retry time to be known", func() bool {
		dm.drainer.mu.Lock()
		defer dm.drainer.mu.Unlock()
		s := dm.drainer.slots[ref]
		return s != nil && !s.active && !s.retryAt.IsZero()
	})
	dm.drainer.mu.Lock()
	retryAt := dm.drainer.slots[ref].retryAt
	dm.drainer.mu.Unlock()
	if want := clk.Now().Add(2 * time.Second); !retryAt.Equal(want) {
		t.Fatalf("retry at %v, want %v", retryAt, want)
	}
	if got := n(); got != 1 {
		t.Fatalf("%d attempts before the back-off ended, want 1", got)
	}
	clk.Advance(2 * time.Second)
	testkit.WaitFor(t, "the retry", func() bool { return n() == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rows := sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.InboundFile), "SELECT status, platform_message_id FROM delivered WHERE message_out_id = 'o-1'")
	if len(rows) != 1 || rows[0][0] != mailbox.DeliveredOK || rows[0][1] != "P-1" {
		t.Fatalf("delivered %v", rows)
	}
	if got := n(); got != 2 {
		t.Fatalf("%d attempts, want 2", got)
	}
}

// TestDaemonCoalescesDrainRequests checks that drain requests arriving
// while a drain runs cause one more drain, not one each, and that no row is
// delivered twice.
func TestDaemonCoalescesDrainRequests(t *testing.T) {
	f := newFixture(t)
	a := f.openAgent()
	for i := range 3 {
		if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: fmt.Sprintf("o-%d", i), Content: json.RawMessage(`{"text":"x"}`), Routing: mailbox.Routing{ChannelType: "test", PlatformID: "c"}}); err != nil {
			t.Fatal(err)
		}
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	counts := map[string]int{}
	calls := 0
	del := mailbox.DelivererFunc(func(ctx context.Context, r mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		mu.Lock()
		calls++
		first := calls == 1
		counts[row.ID]++
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
		return "", nil
	})
	dm, err := New(f.host, Config{Deliverer: del, Poll: time.Hour, FullSweep: time.Hour, DrainWorkers: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dm.Run(ctx) }()
	<-entered
	for range 20 {
		dm.RequestDrain(f.ref)
	}
	dm.drainer.mu.Lock()
	s := dm.drainer.slots[f.ref]
	queued, again := s.queued, s.again
	dm.drainer.mu.Unlock()
	if queued || !again {
		t.Fatalf("during a drain: queued=%v again=%v, want one follow-up marked, nothing queued", queued, again)
	}
	close(release)
	testkit.WaitFor(t, "the follow-up drain", func() bool {
		dm.drainer.mu.Lock()
		defer dm.drainer.mu.Unlock()
		return !s.active && !s.again && !s.queued
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 3 {
		if id := fmt.Sprintf("o-%d", i); counts[id] != 1 {
			t.Fatalf("%s delivered %d times", id, counts[id])
		}
	}
}

// TestDaemonDeliversWhatAnotherProcessRequeued: a row that failed for good
// is requeued through another Host (as `sessiondb mailbox requeue` does
// from its own process) while the daemon runs with no full sweep due and
// no outbound change: the daemon notices at its next tick, delivers the
// row again, once, and records it delivered.
func TestDaemonDeliversWhatAnotherProcessRequeued(t *testing.T) {
	f := newFixture(t)
	if _, err := f.openAgent().Send(ctxb, mailbox.OutboundMessage{ID: "o-1", Content: json.RawMessage(`{"text":"x"}`), Routing: mailbox.Routing{ChannelType: "test", PlatformID: "c"}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	del := mailbox.DelivererFunc(func(ctx context.Context, r mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return "", mailbox.Permanent(errors.New("adapter refused"))
		}
		return "P-1", nil
	})
	n := func() int { mu.Lock(); defer mu.Unlock(); return calls }
	dm, err := New(f.host, Config{Deliverer: del, Poll: 10 * time.Millisecond, FullSweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dm.Run(ctx) }()
	// Read through another Host, as the requeuing process would: it
	// waits for the daemon's locks.
	other, err := mailbox.NewHost(mailbox.HostOptions{Layout: f.host.Layout(), Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		st, err := other.DeliveryStates(ctxb, f.ref)
		if err != nil {
			t.Fatal(err)
		}
		return st["o-1"].Status
	}
	testkit.WaitFor(t, "the row to fail for good", func() bool { return status() == mailbox.DeliveredFailed })

	if res, err := other.Requeue(ctxb, f.ref, []string{"o-1"}); err != nil || res.Outbound != 1 {
		t.Fatalf("requeue %+v %v", res, err)
	}
	testkit.WaitFor(t, "the requeued row delivered", func() bool { return status() == mailbox.DeliveredOK })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := n(); got != 2 {
		t.Fatalf("%d delivery calls, want 2 (the failure, then the requeued row once)", got)
	}
}
