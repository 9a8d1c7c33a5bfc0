package hostd

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
	"github.com/sessiondb/sessiondb/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// pgHost is one host daemon's router over a shared PostgreSQL registry:
// its own registry handle (its own pool, as on another machine), its own
// data root and its own Leases.
type pgHost struct {
	name   string
	reg    *postgres.Central
	host   *mailbox.Host
	leases *Leases
	router *Router
	waker  *recordingWaker
}

// newPGHosts opens n hosts on one fresh registry schema, all on clk. The
// registry gets two agent groups wired (pattern ".", public) to every chat
// of chats.
func newPGHosts(t *testing.T, clk *testkit.Clock, ttl time.Duration, chats []string, n int) []*pgHost {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	dir := t.TempDir()
	var hosts []*pgHost
	for i := range n {
		name := fmt.Sprintf("host-%c", 'a'+i)
		reg, err := postgres.OpenCentral(ctxb, url, postgres.Options{Schema: schema, Now: clk.Now, MaxConns: 4})
		must(t, err)
		t.Cleanup(func() { reg.Close() })
		h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(dir, name)}, Now: clk.Now})
		must(t, err)
		l, err := NewLeases(LeaseConfig{Service: reg, Host: name, TTL: ttl, Now: clk.Now})
		must(t, err)
		w := &recordingWaker{}
		r, err := NewRouter(RouterConfig{Registry: reg, Host: h, Waker: w, Leases: l})
		must(t, err)
		hosts = append(hosts, &pgHost{name: name, reg: reg, host: h, leases: l, router: r, waker: w})
	}
	reg := hosts[0].reg
	for _, ag := range []string{"ag-1", "ag-2"} {
		_, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: ag, Name: ag, Folder: ag})
		must(t, err)
	}
	for _, chat := range chats {
		mg, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg-" + chat, ChannelType: "telegram", PlatformID: chat,
			Name: chat, IsGroup: true, UnknownSenderPolicy: sessiondb.PolicyPublic})
		must(t, err)
		for _, ag := range []string{"ag-1", "ag-2"} {
			_, err := reg.CreateWiring(ctxb, sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: ag,
				EngageMode: sessiondb.EngagePattern, EngagePattern: "."})
			must(t, err)
		}
	}
	return hosts
}

// rows returns, for every inbound row id in every session folder of h,
// the sessions holding it (a row id in two sessions, or twice in one,
// shows up twice).
func (h *pgHost) rows(t *testing.T, into map[string][]string) {
	t.Helper()
	refs, err := h.host.Sessions(ctxb)
	must(t, err)
	for _, ref := range refs {
		rows, err := h.host.InboundRows(ctxb, ref, 0)
		must(t, err)
		for _, r := range rows {
			into[r.ID] = append(into[r.ID], h.name+"/"+ref.String())
		}
	}
}

// takeAll has every host write the rows handed off to it until none is
// left for any of them.
func takeAll(t *testing.T, hosts []*pgHost) {
	t.Helper()
	for round := 0; ; round++ {
		n := 0
		for _, h := range hosts {
			got, err := h.router.TakeHandOffs(ctxb)
			must(t, err)
			n += got
		}
		if n == 0 {
			break
		}
		if round > 100 {
			t.Fatal("hand-offs keep coming")
		}
	}
}

// Two hosts on two data roots route the same events at once (each from 4
// goroutines, every event in its own random order): every event is routed
// by one host (the other reports it already routed), and each of its rows
// (one per agent group) is in exactly one mailbox, once, on the host that
// holds the session's lease (a row for a session the other host serves is
// handed off to it); each session's folder is on one host only, and only
// its host woke it.
func TestTwoHostsRouteEachEventOnce(t *testing.T) {
	clk := newClock()
	chats := []string{"chat-0", "chat-1", "chat-2"}
	hosts := newPGHosts(t, clk, time.Minute, chats, 2)
	const events, routines = 30, 4
	var evs []Event
	for i := range events {
		evs = append(evs, Event{ChannelType: "telegram", PlatformID: chats[i%len(chats)], MessageID: fmt.Sprintf("m%d", i),
			Sender: Sender{ID: "42", Name: "Ann"}, Text: "hello", IsGroup: true})
	}
	var mu sync.Mutex
	outcomes := map[string][]string{} // message id -> each routing's outcome
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, h := range hosts {
		for g := range routines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				order := rand.New(rand.NewPCG(uint64(g), uint64(h.name[len(h.name)-1]))).Perm(len(evs))
				<-start
				for _, i := range order {
					res, err := h.router.Route(ctxb, evs[i])
					mu.Lock()
					if err != nil {
						t.Errorf("%s route %s: %v", h.name, evs[i].MessageID, err)
					}
					outcomes[evs[i].MessageID] = append(outcomes[evs[i].MessageID], res.Outcome+"/"+res.Reason)
					mu.Unlock()
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	takeAll(t, hosts)

	for _, ev := range evs {
		got := outcomes[ev.MessageID]
		routed := 0
		for _, o := range got {
			switch o {
			case RouteRouted + "/":
				routed++
			case RouteDuplicate + "/already_routed":
			default:
				t.Errorf("%s: outcome %s", ev.MessageID, o)
			}
		}
		if routed != 1 || len(got) != 2*routines {
			t.Errorf("%s routed %d times in %d routings, want once", ev.MessageID, routed, len(got))
		}
	}
	where := map[string][]string{}
	for _, h := range hosts {
		h.rows(t, where)
	}
	for _, ev := range evs {
		for _, ag := range []string{"ag-1", "ag-2"} {
			id := InboundID(ev.MessageID, "mg-"+ev.PlatformID, ag)
			if len(where[id]) != 1 {
				t.Errorf("row %s is in %v, want exactly one mailbox", id, where[id])
			}
		}
	}
	if len(where) != 2*events {
		t.Errorf("%d rows in the mailboxes, want %d", len(where), 2*events)
	}
	// Each session's folder is on the host that serves it, and on no
	// other; only that host woke it.
	served := map[string]string{}
	for _, h := range hosts {
		refs, err := h.host.Sessions(ctxb)
		must(t, err)
		for _, ref := range refs {
			if other, dup := served[ref.SessionID]; dup {
				t.Errorf("session %s has folders on %s and %s", ref, other, h.name)
			}
			served[ref.SessionID] = h.name
			if !h.leases.Holds(ref.SessionID) {
				t.Errorf("%s holds the folder of %s but not its lease", h.name, ref)
			}
			if h.waker.count(ref) == 0 {
				t.Errorf("%s never woke its session %s", h.name, ref)
			}
		}
	}
	if len(served) != len(chats)*2 {
		t.Errorf("%d session folders, want one per chat and agent group (%d)", len(served), len(chats)*2)
	}
	for _, h := range hosts {
		h.waker.mu.Lock()
		for _, ref := range h.waker.woken {
			if served[ref.SessionID] != h.name {
				t.Errorf("%s woke %s, which %s serves", h.name, ref, served[ref.SessionID])
			}
		}
		h.waker.mu.Unlock()
	}
}

// When a host stops renewing (it died), its sessions stay its own until
// their leases run out: rows for them are handed off to it meanwhile. Once
// the leases ran out another host takes the sessions, with the rows queued
// for the dead host, into fresh folders of its own; the dead host no longer
// serves them (its deliveries and wakes are fenced), and when it comes
// back its claims lose.
func TestHostTakesOverAfterLeaseRunsOut(t *testing.T) {
	clk := newClock()
	const ttl = time.Minute
	hosts := newPGHosts(t, clk, ttl, []string{"chat-0"}, 2)
	a, b := hosts[0], hosts[1]
	ev := func(id string) Event {
		return Event{ChannelType: "telegram", PlatformID: "chat-0", MessageID: id, Sender: Sender{ID: "42"}, Text: "hi", IsGroup: true}
	}
	res, err := a.router.Route(ctxb, ev("m1"))
	must(t, err)
	if res.Outcome != RouteRouted || len(res.Deliveries) != 2 || res.Deliveries[0].HandedOff != "" {
		t.Fatalf("a routes m1: %+v", res)
	}
	s1 := res.Deliveries[0].SessionID
	if !a.leases.Holds(s1) || b.leases.Holds(s1) {
		t.Fatal("a does not hold the session it made")
	}
	// a lives: b hands m2 off to it.
	res, err = b.router.Route(ctxb, ev("m2"))
	must(t, err)
	if res.Deliveries[0].HandedOff != a.name || res.Deliveries[0].SessionID != s1 {
		t.Fatalf("b routes m2 for a's session: %+v", res.Deliveries[0])
	}
	takeAll(t, hosts)
	rows := map[string][]string{}
	a.rows(t, rows)
	if len(rows["m2:mg-chat-0:ag-1"]) != 1 {
		t.Fatalf("m2 handed off to a: %v", rows)
	}
	// a dies: it stops renewing. Before its lease runs out, b still hands
	// off; the row waits in the registry.
	clk.Advance(ttl - time.Second)
	res, err = b.router.Route(ctxb, ev("m3"))
	must(t, err)
	if res.Deliveries[0].HandedOff != a.name {
		t.Fatalf("b took the session before a's lease ran out: %+v", res.Deliveries[0])
	}
	if a.leases.Holds(s1) {
		t.Error("a still serves a session whose lease it has not renewed for most of its TTL")
	}
	clk.Advance(time.Second)
	takeAll(t, []*pgHost{b})
	rows = map[string][]string{}
	b.rows(t, rows)
	if len(rows["m3:mg-chat-0:ag-1"]) != 1 || len(rows["m3:mg-chat-0:ag-2"]) != 1 || len(rows["m2:mg-chat-0:ag-1"]) != 0 {
		t.Fatalf("b's mailboxes after it took over: %v", rows)
	}
	if !b.leases.Holds(s1) || b.leases.Epoch(s1) != 2 {
		t.Errorf("b serves %s: %v epoch %d, want epoch 2", s1, b.leases.Holds(s1), b.leases.Epoch(s1))
	}
	res, err = b.router.Route(ctxb, ev("m4"))
	must(t, err)
	if res.Deliveries[0].HandedOff != "" || res.Deliveries[0].Duplicate {
		t.Errorf("b routes m4 into the session it serves: %+v", res.Deliveries[0])
	}
	// a comes back: its claim of its old folder loses, and what it routes
	// goes to b.
	held, holder, err := a.leases.Acquire(ctxb, s1)
	must(t, err)
	if held || holder != b.name {
		t.Errorf("a's claim after b took over: held %v by %s", held, holder)
	}
	res, err = a.router.Route(ctxb, ev("m5"))
	must(t, err)
	if res.Deliveries[0].HandedOff != b.name {
		t.Errorf("a routes m5: %+v", res.Deliveries[0])
	}
	// Renewing keeps b's leases past the first TTL; a's Renew finds none.
	clk.Advance(ttl / 2)
	must(t, b.leases.Renew(ctxb))
	must(t, a.leases.Renew(ctxb))
	clk.Advance(ttl / 2)
	if !b.leases.Holds(s1) {
		t.Error("b's renewed lease did not hold")
	}
	// A clean stop hands the leases back at once; what the stopping host
	// still routes is handed to the next host that claims the session.
	b.leases.Stop(ctxb)
	res, err = b.router.Route(ctxb, ev("m6"))
	must(t, err)
	if res.Deliveries[0].HandedOff != "next" || b.leases.Holds(s1) {
		t.Errorf("b routes m6 while stopping: %+v", res.Deliveries[0])
	}
	takeAll(t, hosts)
	if !a.leases.Holds(s1) || a.leases.Epoch(s1) != 3 {
		t.Errorf("a after b released: held %v epoch %d", a.leases.Holds(s1), a.leases.Epoch(s1))
	}
	rows = map[string][]string{}
	a.rows(t, rows)
	if len(rows["m6:mg-chat-0:ag-1"]) != 1 {
		t.Errorf("m6 did not reach a: %v", rows)
	}
}

// A process that routes without serving (route --direct, admin) on a
// shared registry claims events as the hosts do and hands every row off:
// it never writes a mailbox of its own.
func TestNotServingRouterHandsEverythingOff(t *testing.T) {
	clk := newClock()
	hosts := newPGHosts(t, clk, time.Minute, []string{"chat-0"}, 1)
	a := hosts[0]
	dir := t.TempDir()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: dir}, Now: clk.Now})
	must(t, err)
	l := NotServing(a.reg, "route --direct")
	if l == nil || NotServing(newCentral(t).reg, "x") != nil {
		t.Fatal("NotServing: want Leases for a registry with leases only")
	}
	direct, err := NewRouter(RouterConfig{Registry: a.reg, Host: h, Leases: l})
	must(t, err)
	ev := Event{ChannelType: "telegram", PlatformID: "chat-0", MessageID: "m1", Sender: Sender{ID: "42"}, Text: "hi", IsGroup: true}
	res, err := direct.Route(ctxb, ev)
	must(t, err)
	if res.Outcome != RouteRouted || res.Deliveries[0].HandedOff != "next" {
		t.Fatalf("direct route of a new session's first message: %+v", res)
	}
	if res, _ := a.router.Route(ctxb, ev); res.Reason != "already_routed" {
		t.Errorf("the host routed the event again: %+v", res)
	}
	takeAll(t, hosts)
	rows := map[string][]string{}
	a.rows(t, rows)
	if len(rows["m1:mg-chat-0:ag-1"]) != 1 || len(rows["m1:mg-chat-0:ag-2"]) != 1 {
		t.Errorf("the host's mailboxes: %v", rows)
	}
	// Now that the host serves the session, the row handed off reaches it.
	ev.MessageID = "m2"
	res, err = direct.Route(ctxb, ev)
	must(t, err)
	if res.Deliveries[0].HandedOff != "next" {
		t.Errorf("direct route to a served session: %+v", res.Deliveries[0])
	}
	takeAll(t, hosts)
	rows = map[string][]string{}
	a.rows(t, rows)
	if len(rows["m2:mg-chat-0:ag-1"]) != 1 {
		t.Errorf("m2 did not reach the host serving its session: %v", rows)
	}
	if refs, _ := h.Sessions(ctxb); len(refs) != 0 {
		t.Errorf("the direct router wrote folders: %v", refs)
	}
}
