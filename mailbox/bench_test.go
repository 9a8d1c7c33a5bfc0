package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// Sizes are small by default so `-benchtime 1x` is quick; the environment
// scales them up:
//
//	MAILBOX_BENCH_ROUNDS    round trips sampled per iteration with
//	                        notification (50); polling uses a tenth (≥ 3)

func benchHost(b testing.TB) (*Host, SessionRef, string) {
	b.Helper()
	h, err := NewHost(HostOptions{Layout: Layout{Root: filepath.Join(b.TempDir(), "v2")}})
	if err != nil {
		b.Fatal(err)
	}
	ref := SessionRef{AgentGroupID: "ag", SessionID: "s"}
	if err := h.InitSession(context.Background(), ref); err != nil {
		b.Fatal(err)
	}
	dir, _ := h.layout.SessionDir(ref)
	return h, ref, dir
}

// BenchmarkEnqueue measures Host.Enqueue (open inbound, migrate check,
// BEGIN IMMEDIATE, seq over both files, insert, commit, close) and, in the
// same run, a bare open + insert + close of the same schema, reporting both
// rates and their ratio.
func BenchmarkEnqueue(b *testing.B) {
	ctx := context.Background()
	h, ref, _ := benchHost(b)
	bare := filepath.Join(b.TempDir(), "bare.db")
	if _, _, err := sqlitedb.CreateFile(bare, 0o700, 0o600); err != nil {
		b.Fatal(err)
	}
	execFile(b, bare, "PRAGMA journal_mode=DELETE;"+InboundSchema)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, _, err := h.Enqueue(ctx, ref, chat("m-"+strconv.Itoa(i), "hello")); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	start = time.Now()
	for i := 0; i < b.N; i++ {
		db, err := sqlitedb.Open(sqlitedb.Config{Path: bare, MaxConns: 1, Pragmas: pragmasRW})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES (?, ?, 'chat', '2026-01-01T00:00:00.000Z', '{"text":"hello"}')`,
			"m-"+strconv.Itoa(i), 2*i+2); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
	bareT := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/ours.Seconds(), "enqueue/s")
	b.ReportMetric(float64(b.N)/bareT.Seconds(), "bare-insert/s")
	b.ReportMetric(ours.Seconds()/bareT.Seconds(), "cost-ratio")
}

// BenchmarkRoundTrip measures host enqueue → agent poll → agent send →
// host drain, one message at a time, with the agent and the host's drain
// loop woken by file-change notification or by 1 s polling alone. The
// agent claims each batch before it replies, as NanoClaw's poll loop does,
// and completes it in the commit of its last reply (OutboundMessage.Complete)
// where NanoClaw's loop commits the completion on its own; the clock stops
// when the host hands the reply to its deliverer.
//
// "sequential" is the floor the other two are measured against: the same
// calls (enqueue, poll, claim, reply, drain) one after another in one
// goroutine, so nothing waits for a wake, a lock or a core the other side
// holds. What it takes is the durable commits and the fresh reads the
// contract asks for on this machine's disk; notify's p50 over it is what
// waking and the two sides' overlap add. Like sequential, notify sends the
// next message once the drain that delivered the last one has recorded it
// (the record is outside the clock in both); "notify-back-to-back" sends
// it as soon as the reply reaches the deliverer, so each enqueue meets the
// record of the delivery before it (and the agent's look at that record):
// the cost of messages arriving within a millisecond of each other.
func BenchmarkRoundTrip(b *testing.B) {
	rounds := testkit.EnvInt("MAILBOX_BENCH_ROUNDS", 50)
	for _, mode := range []struct {
		name       string
		noNotify   bool
		interval   time.Duration
		rounds     int
		sequential bool
		backToBack bool
	}{
		{"notify", false, time.Second, rounds, false, false},
		{"notify-back-to-back", false, time.Second, rounds, false, true},
		{"poll1s", true, time.Second, max(3, rounds/10), false, false},
		{"sequential", false, time.Second, rounds, true, false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var lat []time.Duration
			for i := 0; i < b.N; i++ {
				if mode.sequential {
					lat = append(lat, sequentialTrips(b, mode.rounds)...)
					continue
				}
				lat = append(lat, roundTrips(b, mode.noNotify, mode.interval, mode.rounds, mode.backToBack)...)
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}

func roundTrips(b *testing.B, noNotify bool, interval time.Duration, n int, backToBack bool) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, ref, dir, a := benchAgent(b, AgentOptions{PollInterval: interval, NoNotify: noNotify})
	defer a.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// The agent: answer every message as NanoClaw's poll loop does: claim
	// the batch, then reply, the last reply completing the batch.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			batch, err := a.Poll(ctx, PollOptions{})
			if err == nil && len(batch) > 0 {
				answer(ctx, a, batch)
				continue
			}
			a.WaitInbound(ctx)
		}
	}()
	// The host's drain loop, woken like the daemon's.
	delivered := make(chan string, n)
	settled := make(chan struct{}, n)
	w, err := NewWatcher(dir, []string{OutboundFile}, WatchOptions{Interval: interval, NoNotify: noNotify, CommitsOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		d := DelivererFunc(func(_ context.Context, _ SessionRef, row OutboundRow) (string, error) {
			delivered <- row.ID
			return "P", nil
		})
		// As the daemon's drainer does, a drain drops the wakes of the
		// commits its read saw.
		o := DrainOptions{Read: func() {
			select {
			case <-w.C():
			default:
			}
		}}
		for ctx.Err() == nil {
			if r, _ := h.DrainWith(ctx, ref, d, o); r.Delivered > 0 {
				settled <- struct{}{}
			}
			w.Wait(ctx, interval)
		}
	}()
	return timeTrips(ctx, b, h, ref, n, func(i int, id string) time.Time {
		select {
		case got := <-delivered:
			if got != "re-"+id {
				b.Fatalf("delivered %s, want re-%s", got, id)
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("round trip %d never completed", i)
		}
		end := time.Now()
		if !backToBack {
			// Outside the clock, as in sequentialTrips: the drain that
			// delivered records the delivery before the next message
			// comes.
			<-settled
		}
		return end
	})
}

// benchAgent is benchHost with the session's agent open; the caller closes
// it.
func benchAgent(b *testing.B, o AgentOptions) (*Host, SessionRef, string, *Agent) {
	b.Helper()
	h, ref, dir := benchHost(b)
	a, err := OpenAgent(context.Background(), dir, o)
	if err != nil {
		b.Fatal(err)
	}
	return h, ref, dir, a
}

// timeTrips makes n round trips on ref, one at a time: each enqueues the
// message m-<i> and calls finish, which returns when the reply re-m-<i>
// reached the deliverer; a trip's latency runs from the enqueue to then.
func timeTrips(ctx context.Context, b *testing.B, h *Host, ref SessionRef, n int, finish func(i int, id string) time.Time) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, 0, n)
	for i := range n {
		id := fmt.Sprintf("m-%d", i)
		start := time.Now()
		if _, _, err := h.Enqueue(ctx, ref, chat(id, "ping")); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, finish(i, id).Sub(start))
	}
	return lat
}

// answer is the benchmark's agent at work on a batch: it claims the batch,
// then replies to each message, the last reply completing the batch.
func answer(ctx context.Context, a *Agent, batch []InboundRow) error {
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.ID
	}
	if err := a.MarkProcessing(ctx, ids...); err != nil {
		return err
	}
	for i, r := range batch {
		m := OutboundMessage{ID: "re-" + r.ID, InReplyTo: r.ID, Content: json.RawMessage(`{"text":"ok"}`),
			Routing: Routing{ChannelType: "slack", PlatformID: "C1"}}
		if i == len(batch)-1 {
			m.Complete = ids
		}
		if _, err := a.Send(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// sequentialTrips makes n round trips in one goroutine (see
// BenchmarkRoundTrip): each from the enqueue to the call of the deliverer,
// whose drain then records the delivery outside the clock, as in roundTrips.
func sequentialTrips(b *testing.B, n int) []time.Duration {
	b.Helper()
	ctx := context.Background()
	h, ref, _, a := benchAgent(b, AgentOptions{PollInterval: time.Second})
	defer a.Close()
	var handed time.Time
	var got string
	d := DelivererFunc(func(_ context.Context, _ SessionRef, row OutboundRow) (string, error) {
		handed, got = time.Now(), row.ID
		return "P", nil
	})
	return timeTrips(ctx, b, h, ref, n, func(i int, id string) time.Time {
		batch, err := a.Poll(ctx, PollOptions{})
		if err != nil || len(batch) != 1 || batch[0].ID != id {
			b.Fatalf("poll %d: %d rows, %v; want %s", i, len(batch), err, id)
		}
		if err := answer(ctx, a, batch); err != nil {
			b.Fatal(err)
		}
		got = ""
		if _, err := h.Drain(ctx, ref, d); err != nil {
			b.Fatal(err)
		}
		if got != "re-"+id {
			b.Fatalf("delivered %q, want re-%s", got, id)
		}
		return handed
	})
}

// BenchmarkEmptyRead measures a read that finds nothing, on the fresh
// connections the contract asks for: the agent's poll (inbound.db opened
// read-only) and the host's drain (outbound.db read-only, inbound.db
// attached). They are the reads a wake adds to a round trip; their cost,
// mostly the schema parse of each fresh connection, is what separates the
// two drivers in BenchmarkRoundTrip/notify.
func BenchmarkEmptyRead(b *testing.B) {
	ctx := context.Background()
	h, ref, _, a := benchAgent(b, AgentOptions{PollInterval: time.Second})
	defer a.Close()
	d := DelivererFunc(func(context.Context, SessionRef, OutboundRow) (string, error) {
		b.Fatal("an empty session delivered a row")
		return "", nil
	})
	b.Run("poll", func(b *testing.B) {
		for b.Loop() {
			if batch, err := a.Poll(ctx, PollOptions{}); err != nil || len(batch) != 0 {
				b.Fatalf("poll: %d rows, %v", len(batch), err)
			}
		}
	})
	b.Run("drain", func(b *testing.B) {
		for b.Loop() {
			if r, err := h.Drain(ctx, ref, d); err != nil || r.Delivered != 0 {
				b.Fatalf("drain: %+v, %v", r, err)
			}
		}
	})
}
