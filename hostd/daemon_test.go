package hostd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// countingServer is a webhook target that counts deliveries by out id and
// can hold one request in flight.
type countingServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
	// holdAt, when > 0, holds the holdAt-th request: inFlight is closed
	// when it arrives, and it is answered once release is closed.
	holdAt   int
	n        int
	inFlight chan struct{}
	release  chan struct{}
	heldID   string
}

func newCountingServer(t *testing.T, holdAt int) *countingServer {
	s := &countingServer{counts: map[string]int{}, holdAt: holdAt, inFlight: make(chan struct{}), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env DeliveryEnvelope
		if err := json.Unmarshal(b, &env); err != nil {
			w.WriteHeader(400)
			return
		}
		s.mu.Lock()
		s.counts[env.ID]++
		s.n++
		hold := s.n == s.holdAt
		if hold {
			s.heldID = env.ID
		}
		s.mu.Unlock()
		if hold {
			close(s.inFlight)
			<-s.release
		}
		fmt.Fprintf(w, `{"ok":true,"platform_message_id":"P-%s"}`, env.ID)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// runEchoAgent answers every inbound chat with one reply until ctx ends.
func runEchoAgent(ctx context.Context, t *testing.T, dir string) <-chan struct{} {
	done := make(chan struct{})
	a, err := mailbox.OpenAgent(ctx, dir, mailbox.AgentOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		defer a.Close()
		for ctx.Err() == nil {
			batch, err := a.Poll(ctx, mailbox.PollOptions{})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("agent poll: %v", err)
				}
				return
			}
			for _, r := range batch {
				c, _ := mailbox.DecodeContent(r.Content)
				reply, _ := mailbox.MarshalContent(map[string]string{"text": "re: " + c.Text})
				if _, err := a.Send(ctx, mailbox.OutboundMessage{ID: "out-" + r.ID, Content: reply, InReplyTo: r.ID,
					Routing: mailbox.Routing{ChannelType: "test", PlatformID: "chat-1"}}); err != nil {
					t.Errorf("agent send: %v", err)
					return
				}
				if err := a.MarkCompleted(ctx, r.ID); err != nil {
					t.Errorf("agent ack: %v", err)
					return
				}
			}
			if len(batch) == 0 {
				if err := a.WaitInbound(ctx); err != nil {
					return
				}
			}
		}
	}()
	return done
}

func startDaemon(t *testing.T, root string, d mailbox.Deliverer, log *testkit.Buffer) (*mailbox.Host, context.CancelFunc, <-chan error) {
	t.Helper()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dm, err := New(h, Config{Deliverer: d, Poll: 20 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dm.Run(ctx) }()
	return h, cancel, done
}

// TestDaemonEndToEndCancelMidStream runs the host daemon in-process with a
// webhook deliverer on loopback and an agent goroutine, stops the daemon
// (as SIGINT would) while a delivery is in flight, restarts it, and checks
// at the server that every reply arrived exactly once — while a session
// with a corrupt outbound.db fails beside it without stalling anything.
func TestDaemonEndToEndCancelMidStream(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2-sessions")
	setup, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	broken := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "broken"}
	for _, r := range []mailbox.SessionRef{ref, broken} {
		if err := setup.InitSession(ctxb, r); err != nil {
			t.Fatal(err)
		}
	}
	brokenOut, _ := setup.Layout().OutboundPath(broken)
	if err := os.WriteFile(brokenOut, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, _ := setup.Layout().SessionDir(ref)
	enqueue := func(from, to int) {
		for i := from; i < to; i++ {
			if _, _, err := setup.Enqueue(ctxb, ref, chat(fmt.Sprintf("m%02d", i), fmt.Sprintf("hello %d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	const first, total = 10, 20
	enqueue(0, first)

	agentCtx, stopAgent := context.WithCancel(context.Background())
	agentDone := runEchoAgent(agentCtx, t, dir)
	defer func() { stopAgent(); <-agentDone }()

	srv := newCountingServer(t, 4)
	wh, err := NewWebhookDeliverer(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	log := &testkit.Buffer{}
	_, cancel, runDone := startDaemon(t, root, wh, log)

	// Stop the daemon while the 4th delivery is in flight.
	<-srv.inFlight
	cancel()
	select {
	case err := <-runDone:
		t.Fatalf("Run returned (%v) while a delivery was in flight", err)
	default:
	}
	close(srv.release)
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Everything the server received is recorded as delivered, with its
	// platform id, the held one included: nothing will be sent twice.
	rows := sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.InboundFile), "SELECT message_out_id, platform_message_id, status FROM delivered ORDER BY 1")
	recorded := map[string]bool{}
	for _, r := range rows {
		id := r[0].(string)
		if r[1] != "P-"+id || r[2] != mailbox.DeliveredOK {
			t.Fatalf("delivered row %v", r)
		}
		recorded[id] = true
	}
	got := srv.snapshot()
	if !recorded[srv.heldID] {
		t.Fatalf("the delivery in flight at stop (%s) was not recorded; recorded %v", srv.heldID, recorded)
	}
	for id := range got {
		if !recorded[id] {
			t.Fatalf("%s reached the server but is not recorded as delivered", id)
		}
	}

	// More traffic while the host is down, then a fresh host process.
	enqueue(first, total)
	_, cancel2, runDone2 := startDaemon(t, root, wh, log)
	testkit.WaitFor(t, "all replies at the server", func() bool { return len(srv.snapshot()) == total })
	// Meanwhile the broken session was reported as failing and backed off.
	testkit.WaitFor(t, "the broken session's back-off", func() bool {
		return strings.Contains(log.String(), `msg="mailbox: drain failed; backing off" session=ag-1/broken`)
	})
	// The running daemon's status file tells other processes about it.
	testkit.WaitFor(t, "the broken session in the host status file", func() bool {
		st, found, err := ReadStatus(root)
		if err != nil {
			t.Fatal(err)
		}
		h := st.Sessions["ag-1/broken"]
		return found && st.PID == os.Getpid() && (h.Quarantined || h.DrainFailures > 0) && h.LastError != ""
	})
	cancel2()
	if err := <-runDone2; err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if _, found, err := ReadStatus(root); found || err != nil {
		t.Fatalf("host status file left after a clean stop (err %v)", err)
	}
	got = srv.snapshot()
	for i := range total {
		id := fmt.Sprintf("out-m%02d", i)
		if got[id] != 1 {
			t.Errorf("%s delivered %d times, want 1", id, got[id])
		}
	}
	if n := len(sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.InboundFile), "SELECT 1 FROM delivered WHERE status = 'delivered'")); n != total {
		t.Fatalf("%d delivered rows, want %d", n, total)
	}
	if n := len(sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.InboundFile), "SELECT 1 FROM messages_in WHERE status = 'completed'")); n != total {
		t.Fatalf("%d completed inbound rows, want %d (acks synced)", n, total)
	}
}

// TestDaemonWakesWithExecWaker checks the wake loop: a due row in a session
// with no container starts the waker's command with the session folder,
// and its exit triggers one more drain that delivers what it wrote.
func TestDaemonWakesWithExecWaker(t *testing.T) {
	h, ref, dir := newHost(t, nil)
	marker := filepath.Join(t.TempDir(), "woken")
	// The "container": records its argument, then (as the agent) answers
	// through outbound.db from Go once woken; here the script just exits.
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1\" >> \""+marker+"\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := NewExecWaker(script, h.Layout(), ExecWakerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var delivered []string
	del := mailbox.DelivererFunc(func(ctx context.Context, r mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, row.ID)
		return "", nil
	})
	dm, err := New(h, Config{Deliverer: del, Waker: w, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The agent wrote a reply before the wake (e.g. a previous container);
	// it must be delivered by the daemon too.
	a, err := mailbox.OpenAgent(ctxb, dir, mailbox.AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: "out-1", Content: json.RawMessage(`{"text":"x"}`), Routing: mailbox.Routing{ChannelType: "test", PlatformID: "c"}}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, _, err := h.Enqueue(ctxb, ref, chat("m1", "wake up")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dm.Run(ctx) }()
	testkit.WaitFor(t, "the waker's command", func() bool { b, _ := os.ReadFile(marker); return len(b) > 0 })
	testkit.WaitFor(t, "the delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(delivered) > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(marker)
	if line := strings.SplitN(string(b), "\n", 2)[0]; line != dir {
		t.Fatalf("waker got %q, want the session folder %q", line, dir)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 1 || delivered[0] != "out-1" {
		t.Fatalf("delivered %v, want [out-1] once", delivered)
	}
	if w.Running(ref) {
		t.Fatal("container still running after Run returned")
	}
}
