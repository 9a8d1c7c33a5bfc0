package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Sizes are small by default so `-benchtime 1x` is quick; the environment
// scales them up:
//
//	MAILBOX_BENCH_SESSIONS  session folders for the sweep benchmarks (500)
//	MAILBOX_BENCH_ROUNDS    round trips sampled per iteration with
//	                        notification (50); polling uses a tenth (≥ 3)
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchHost(b *testing.B) (*Host, SessionRef, string) {
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
// loop woken by file-change notification or by 1 s polling alone.
func BenchmarkRoundTrip(b *testing.B) {
	rounds := benchEnv("MAILBOX_BENCH_ROUNDS", 50)
	for _, mode := range []struct {
		name     string
		noNotify bool
		interval time.Duration
		rounds   int
	}{
		{"notify", false, time.Second, rounds},
		{"poll1s", true, time.Second, max(3, rounds/10)},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var lat []time.Duration
			for i := 0; i < b.N; i++ {
				lat = append(lat, roundTrips(b, mode.noNotify, mode.interval, mode.rounds)...)
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

func roundTrips(b *testing.B, noNotify bool, interval time.Duration, n int) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, ref, dir := benchHost(b)
	a, err := OpenAgent(ctx, dir, AgentOptions{PollInterval: interval, NoNotify: noNotify})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// The agent: answer every message.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			batch, err := a.Poll(ctx, PollOptions{})
			if err == nil && len(batch) > 0 {
				ids := make([]string, len(batch))
				for i, r := range batch {
					ids[i] = r.ID
				}
				a.MarkCompleted(ctx, ids...)
				for _, r := range batch {
					a.Send(ctx, OutboundMessage{ID: "re-" + r.ID, InReplyTo: r.ID, Content: json.RawMessage(`{"text":"ok"}`),
						Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
				}
				continue
			}
			a.WaitInbound(ctx)
		}
	}()
	// The host's drain loop, woken like the daemon's.
	delivered := make(chan string, n)
	w, err := NewWatcher(dir, []string{OutboundFile}, WatchOptions{Interval: interval, NoNotify: noNotify})
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
		for ctx.Err() == nil {
			h.Drain(ctx, ref, d)
			w.Wait(ctx, interval)
		}
	}()
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m-%d", i)
		start := time.Now()
		if _, _, err := h.Enqueue(ctx, ref, chat(id, "ping")); err != nil {
			b.Fatal(err)
		}
		select {
		case got := <-delivered:
			if got != "re-"+id {
				b.Fatalf("delivered %s, want re-%s", got, id)
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("round trip %d never completed", i)
		}
		lat = append(lat, time.Since(start))
	}
	return lat
}

// sweepFarm creates n initialized session folders quickly (one real
// InitSession, then copies of its files).
func sweepFarm(b *testing.B, n int) (*Host, []SessionRef) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "v2")
	h, err := NewHost(HostOptions{Layout: Layout{Root: root}})
	if err != nil {
		b.Fatal(err)
	}
	tmpl := SessionRef{AgentGroupID: "g000", SessionID: "s00000"}
	if err := h.InitSession(context.Background(), tmpl); err != nil {
		b.Fatal(err)
	}
	tdir, _ := h.layout.SessionDir(tmpl)
	in, _ := os.ReadFile(filepath.Join(tdir, InboundFile))
	out, _ := os.ReadFile(filepath.Join(tdir, OutboundFile))
	refs := []SessionRef{tmpl}
	for i := 1; i < n; i++ {
		ref := SessionRef{AgentGroupID: fmt.Sprintf("g%03d", i%100), SessionID: fmt.Sprintf("s%05d", i)}
		dir, _ := h.layout.SessionDir(ref)
		for _, d := range []string{dir, filepath.Join(dir, InboxDirName), filepath.Join(dir, OutboxDirName)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, InboundFile), in, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, OutboundFile), out, 0o600); err != nil {
			b.Fatal(err)
		}
		refs = append(refs, ref)
	}
	return h, refs
}

type idleRuntime struct{}

func (idleRuntime) Running(SessionRef) bool                                          { return false }
func (idleRuntime) Stop(context.Context, SessionRef, string) error                   { return nil }
func (idleRuntime) Wake(context.Context, SessionRef) error                           { return nil }
func (idleRuntime) Deliver(context.Context, SessionRef, OutboundRow) (string, error) { return "", nil }

// BenchmarkSweep measures one sweep tick over N idle session folders
// (nothing changed since the last tick: three stats per folder, nothing
// opened) and over N folders of which 1% changed (a new inbound row each).
func BenchmarkSweep(b *testing.B) {
	n := benchEnv("MAILBOX_BENCH_SESSIONS", 500)
	ctx := context.Background()
	opts := SweepOptions{Runtime: idleRuntime{}, Waker: idleRuntime{}}
	b.Run(fmt.Sprintf("idle-%d", n), func(b *testing.B) {
		h, _ := sweepFarm(b, n)
		if _, err := h.Sweep(ctx, opts); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := h.Sweep(ctx, opts)
			if err != nil || res.Examined != 0 || res.Sessions != n {
				b.Fatalf("idle tick %+v %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	})
	b.Run(fmt.Sprintf("changed1pct-%d", n), func(b *testing.B) {
		h, refs := sweepFarm(b, n)
		if _, err := h.Sweep(ctx, opts); err != nil {
			b.Fatal(err)
		}
		changed := max(1, n/100)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			for j := 0; j < changed; j++ {
				ref := refs[(i*changed+j*97)%len(refs)]
				if _, _, err := h.Enqueue(ctx, ref, chat(fmt.Sprintf("m-%d-%d", i, j), "x")); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			res, err := h.Sweep(ctx, opts)
			if err != nil || len(res.Errors) > 0 {
				b.Fatalf("tick %+v %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	})
}
