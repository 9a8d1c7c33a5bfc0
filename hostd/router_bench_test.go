package hostd

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
	"github.com/sessiondb/sessiondb/sqlite"
)

// routeFarm is a registry and data root holding sessions sessions over
// sessions/10 chats (group chats with 10 threads each, so every thread is
// a per-thread session), the chats wired round-robin to 100 agent groups.
// Sessions are made through the registry's resolver; their folders are
// copies of one initialized folder, with their projections.
type routeFarm struct {
	reg    *sqlite.Central
	host   *mailbox.Host
	router *Router
	chats  int
	copies *sessionCopier
}

const farmThreads = 10

func newRouteFarm(b *testing.B, sessions int) *routeFarm {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	reg, err := sqlite.OpenCentral(ctx, filepath.Join(dir, "v2.db"), sqlite.CentralOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(dir, "v2-sessions")}})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(RouterConfig{Registry: reg, Host: h})
	if err != nil {
		b.Fatal(err)
	}
	groups := min(100, max(1, sessions/farmThreads))
	for g := 0; g < groups; g++ {
		if _, err := reg.CreateAgentGroup(ctx, sessiondb.NewAgentGroup{ID: fmt.Sprintf("ag-%03d", g), Name: fmt.Sprintf("agent %d", g), Folder: fmt.Sprintf("ag-%03d", g)}); err != nil {
			b.Fatal(err)
		}
	}
	copies := newSessionCopier(b, h, mailbox.SessionRef{AgentGroupID: "template", SessionID: "template"})
	chats := max(1, sessions/farmThreads)
	for c := 0; c < chats; c++ {
		ag := fmt.Sprintf("ag-%03d", c%groups)
		mg, err := reg.CreateMessagingGroup(ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: fmt.Sprintf("C%05d", c),
			Name: fmt.Sprintf("chat %d", c), IsGroup: true, UnknownSenderPolicy: sessiondb.PolicyPublic})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.CreateWiring(ctx, sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: ag, EngageMode: sessiondb.EngagePattern}); err != nil {
			b.Fatal(err)
		}
		for th := 0; th < farmThreads; th++ {
			s, _, err := reg.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: ag, MessagingGroupID: mg.ID,
				ThreadID: fmt.Sprintf("T%d", th), Mode: sessiondb.ModePerThread})
			if err != nil {
				b.Fatal(err)
			}
			copies.make(b, s.Ref())
		}
	}
	return &routeFarm{reg: reg, host: h, router: r, chats: chats, copies: copies}
}

// event is the i-th benchmark event: a member-less public chat message to
// an existing per-thread session, spread over the chats.
func (f *routeFarm) event(i int64) Event {
	c := (i * 7919) % int64(f.chats)
	return Event{ChannelType: "slack", PlatformID: fmt.Sprintf("C%05d", c), ThreadID: fmt.Sprintf("T%d", i%farmThreads),
		MessageID: fmt.Sprintf("bench-%d", i), Sender: Sender{ID: fmt.Sprintf("U%d", i%50), Name: "bench"}, Text: "hello", IsGroup: true}
}

// BenchmarkRouteEvents measures events routed per second end to end (chat
// lookup, wirings, sender upsert and access, engage, the resolver's
// transaction, the mailbox row, last_active) into existing sessions of a
// registry holding ROUTE_BENCH_SESSIONS sessions (default 1,000; the
// figure in docs is at 10,000) over a tenth as many chats: one goroutine,
// and 8 goroutines at once.
func BenchmarkRouteEvents(b *testing.B) {
	n := testkit.EnvInt("ROUTE_BENCH_SESSIONS", 1000)
	f := newRouteFarm(b, n)
	ctx := context.Background()
	var next atomic.Int64
	route := func(b *testing.B) {
		ev := f.event(next.Add(1))
		res, err := f.router.Route(ctx, ev)
		if err != nil || res.Outcome != RouteRouted || res.Deliveries[0].SessionCreated {
			b.Fatalf("route %+v %v", res, err)
		}
	}
	b.Run(fmt.Sprintf("sessions-%d/serial", n), func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			route(b)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run(fmt.Sprintf("sessions-%d/8-goroutines", n), func(b *testing.B) {
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				route(b)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkReproject measures re-projecting an agent group's destinations
// into REPROJECT_BENCH_SESSIONS (default 1,000) active sessions' folders
// after one destination was added: the wall time of one Reproject.
func BenchmarkReproject(b *testing.B) {
	n := testkit.EnvInt("REPROJECT_BENCH_SESSIONS", 1000)
	ctx := context.Background()
	f := newRouteFarm(b, 10) // one group, one chat
	ag := "ag-000"
	// n sessions of the one group, each with its folder.
	for i := 0; i < n; i++ {
		s, _, err := f.reg.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: ag, Mode: sessiondb.ModeShared})
		if err != nil {
			b.Fatal(err)
		}
		f.copies.make(b, s.Ref())
	}
	made := 0 // destinations added so far: b.Run may call the body more than once
	b.Run(fmt.Sprintf("sessions-%d", n+farmThreads), func(b *testing.B) {
		for j := 0; j < b.N; j++ {
			made++
			i := made
			b.StopTimer()
			mg, err := f.reg.CreateMessagingGroup(ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: fmt.Sprintf("D%d", i), Name: fmt.Sprintf("dest %d", i)})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.reg.AddDestination(ctx, sessiondb.NewDestination{AgentGroupID: ag, LocalName: fmt.Sprintf("dest-%d", i), TargetType: sessiondb.TargetChannel, TargetID: mg.ID}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := f.router.Reproject(ctx, ag)
			if err != nil || res.Sessions != n+farmThreads {
				b.Fatalf("reproject %+v %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/reproject")
	})
}
