package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// RunHostLeases runs the suite of sessiondb.HostLeaseService against a
// registry backend that has it (the registries h opens must implement it):
// one host per session at a time, take-over after expiry, release, fencing
// epochs, each event routed once, and both races run on two handles.
func RunHostLeases(t *testing.T, h RegistryHarness) {
	runGroups(t, h, []group[RegistryHarness]{
		{"OneHostAtATime", testLeaseOneHostAtATime},
		{"BadInput", testLeaseBadInput},
		{"EventsOnce", testLeaseEventsOnce},
		{"Renew", testLeaseRenew},
		{"HandOffs", testLeaseHandOffs},
		{"Races", testLeaseRaces},
	})
}

// leases is r as the lease service it must also be.
func leases(t *testing.T, r sessiondb.Registry) sessiondb.HostLeaseService {
	t.Helper()
	l, ok := r.(sessiondb.HostLeaseService)
	if !ok {
		t.Fatalf("%T does not implement sessiondb.HostLeaseService", r)
	}
	return l
}

// newLeaseEnv is a fresh registry and its lease service.
func newLeaseEnv(t *testing.T, h RegistryHarness) (*renv, sessiondb.HostLeaseService) {
	t.Helper()
	e := newRenv(t, h)
	return e, leases(t, e.r)
}

func testLeaseOneHostAtATime(t *testing.T, h RegistryHarness) {
	e, l := newLeaseEnv(t, h)
	claim := func(host string, wantHeld bool, wantHost string, wantEpoch int64) sessiondb.SessionLease {
		t.Helper()
		lease, held, err := l.ClaimSession(e.ctx, "sess-1", host, time.Minute)
		noErr(t, "ClaimSession "+host, err)
		if held != wantHeld || lease.Host != wantHost || lease.Epoch != wantEpoch || lease.SessionID != "sess-1" {
			t.Fatalf("ClaimSession(%s) = %+v held=%v; want host %s epoch %d held=%v", host, lease, held, wantHost, wantEpoch, wantHeld)
		}
		return lease
	}
	first := claim("host-a", true, "host-a", 1)
	sameTime(t, "expires", first.Expires, e.clock.Now().Add(time.Minute))
	claim("host-b", false, "host-a", 1)
	e.clock.Advance(30 * time.Second)
	renewed := claim("host-a", true, "host-a", 1)
	sameTime(t, "renewed expiry", renewed.Expires, e.clock.Now().Add(time.Minute))
	e.clock.Advance(59 * time.Second)
	claim("host-b", false, "host-a", 1) // not yet run out
	e.clock.Advance(time.Second)
	claim("host-b", true, "host-b", 2) // host-a stopped renewing: taken over
	claim("host-a", false, "host-b", 2)
	noErr(t, "ReleaseSession by the wrong host", l.ReleaseSession(e.ctx, "sess-1", "host-a"))
	claim("host-a", false, "host-b", 2)
	noErr(t, "ReleaseSession", l.ReleaseSession(e.ctx, "sess-1", "host-b"))
	claim("host-a", true, "host-a", 3)
}

func testLeaseBadInput(t *testing.T, h RegistryHarness) {
	e, l := newLeaseEnv(t, h)
	_, _, err := l.ClaimSession(e.ctx, "", "host-a", time.Minute)
	wantCode(t, "ClaimSession without a session", err, sessiondb.EINVALID)
	_, _, err = l.ClaimSession(e.ctx, "s", "", time.Minute)
	wantCode(t, "ClaimSession without a host", err, sessiondb.EINVALID)
	_, _, err = l.ClaimSession(e.ctx, "s", "h", 0)
	wantCode(t, "ClaimSession with no ttl", err, sessiondb.EINVALID)
	_, err = l.ClaimEvent(e.ctx, "", "h")
	wantCode(t, "ClaimEvent without a key", err, sessiondb.EINVALID)
	_, err = l.PruneEvents(e.ctx, -time.Second)
	wantCode(t, "PruneEvents with a negative age", err, sessiondb.EINVALID)
}

func testLeaseEventsOnce(t *testing.T, h RegistryHarness) {
	e, l := newLeaseEnv(t, h)
	for i, c := range []struct {
		key, host string
		want      bool
	}{{"ev-1", "host-a", true}, {"ev-1", "host-b", false}, {"ev-1", "host-a", false}, {"ev-2", "host-b", true}} {
		got, err := l.ClaimEvent(e.ctx, c.key, c.host)
		noErr(t, "ClaimEvent", err)
		if got != c.want {
			t.Errorf("claim %d (%s by %s) = %v, want %v", i, c.key, c.host, got, c.want)
		}
	}
	e.clock.Advance(time.Hour)
	if _, err := l.ClaimEvent(e.ctx, "ev-3", "host-a"); err != nil {
		t.Fatal(err)
	}
	n, err := l.PruneEvents(e.ctx, 30*time.Minute)
	noErr(t, "PruneEvents", err)
	if n != 2 {
		t.Errorf("PruneEvents pruned %d, want the 2 older events", n)
	}
	if got, _ := l.ClaimEvent(e.ctx, "ev-3", "host-b"); got {
		t.Error("a recent event could be claimed again after the prune")
	}
}

func testLeaseRenew(t *testing.T, h RegistryHarness) {
	e, l := newLeaseEnv(t, h)
	for _, s := range []string{"s-1", "s-2"} {
		_, held, err := l.ClaimSession(e.ctx, s, "host-a", time.Minute)
		noErr(t, "ClaimSession", err)
		if !held {
			t.Fatalf("%s not held", s)
		}
	}
	_, _, err := l.ClaimSession(e.ctx, "s-3", "host-b", time.Minute)
	noErr(t, "ClaimSession", err)
	e.clock.Advance(50 * time.Second)
	got, err := l.RenewSessions(e.ctx, "host-a", time.Minute)
	noErr(t, "RenewSessions", err)
	if len(got) != 2 {
		t.Fatalf("RenewSessions renewed %+v, want s-1 and s-2", got)
	}
	for _, g := range got {
		if g.Host != "host-a" || g.Epoch != 1 || (g.SessionID != "s-1" && g.SessionID != "s-2") {
			t.Errorf("renewed lease %+v", g)
		}
		sameTime(t, "renewed expiry", g.Expires, e.clock.Now().Add(time.Minute))
	}
	// host-b did not renew: s-3 runs out and host-a takes it; host-a's
	// renewed leases still hold.
	e.clock.Advance(20 * time.Second)
	if _, held, _ := l.ClaimSession(e.ctx, "s-1", "host-b", time.Minute); held {
		t.Error("host-b took a lease host-a renewed")
	}
	if lease, held, _ := l.ClaimSession(e.ctx, "s-3", "host-a", time.Minute); !held || lease.Epoch != 2 {
		t.Errorf("s-3 after its host stopped renewing: %+v held=%v", lease, held)
	}
	got, err = l.RenewSessions(e.ctx, "host-b", time.Minute)
	noErr(t, "RenewSessions of a host that lost its lease", err)
	if len(got) != 0 {
		t.Errorf("host-b renewed %+v, a lease it lost", got)
	}
	_, err = l.RenewSessions(e.ctx, "", time.Minute)
	wantCode(t, "RenewSessions without a host", err, sessiondb.EINVALID)
	_, err = l.RenewSessions(e.ctx, "host-a", 0)
	wantCode(t, "RenewSessions with no ttl", err, sessiondb.EINVALID)
}

func testLeaseHandOffs(t *testing.T, h RegistryHarness) {
	e, l := newLeaseEnv(t, h)
	_, _, err := l.ClaimSession(e.ctx, "s-a", "host-a", time.Minute)
	noErr(t, "ClaimSession", err)
	_, _, err = l.ClaimSession(e.ctx, "s-b", "host-b", 2*time.Minute)
	noErr(t, "ClaimSession", err)
	row := []byte("{\"id\":\"m1\"}\x00\xff") // the registry keeps the bytes as they are
	for _, c := range []struct {
		h    sessiondb.HandOff
		want bool
	}{
		{sessiondb.HandOff{SessionID: "s-a", AgentGroupID: "ag-1", RowID: "m1:ag-1", Row: row, Wake: true}, true},
		{sessiondb.HandOff{SessionID: "s-a", AgentGroupID: "ag-1", RowID: "m1:ag-1", Row: []byte("other")}, false},
		{sessiondb.HandOff{SessionID: "s-b", AgentGroupID: "ag-1", RowID: "m2:ag-1", Row: []byte("b")}, true},
		{sessiondb.HandOff{SessionID: "s-free", AgentGroupID: "ag-2", RowID: "m3:ag-2", Row: []byte("c")}, true},
	} {
		got, err := l.HandOff(e.ctx, c.h)
		noErr(t, "HandOff", err)
		if got != c.want {
			t.Errorf("HandOff(%s, %s) = %v, want %v", c.h.SessionID, c.h.RowID, got, c.want)
		}
	}
	ids := func(host string) []string {
		t.Helper()
		hs, err := l.HandOffs(e.ctx, host, 10)
		noErr(t, "HandOffs", err)
		var out []string
		for _, x := range hs {
			out = append(out, x.SessionID+"/"+x.RowID)
		}
		return out
	}
	// host-a gets its own session's row and the one nobody serves.
	hs, err := l.HandOffs(e.ctx, "host-a", 10)
	noErr(t, "HandOffs", err)
	if len(hs) != 2 || hs[0].SessionID != "s-a" || hs[1].SessionID != "s-free" {
		t.Fatalf("host-a's hand-offs: %+v", hs)
	}
	if string(hs[0].Row) != string(row) || !hs[0].Wake || hs[0].AgentGroupID != "ag-1" || hs[0].RowID != "m1:ag-1" || hs[1].Wake {
		t.Errorf("hand-off read back as %+v", hs[0])
	}
	sameTime(t, "created", hs[0].Created, e.clock.Now())
	if got := ids("host-b"); fmt.Sprint(got) != "[s-b/m2:ag-1 s-free/m3:ag-2]" {
		t.Errorf("host-b's hand-offs: %v", got)
	}
	if got, _ := l.HandOffs(e.ctx, "host-a", 1); len(got) != 1 || got[0].SessionID != "s-a" {
		t.Errorf("HandOffs limit 1: %+v", got)
	}
	noErr(t, "DoneHandOff", l.DoneHandOff(e.ctx, hs[0].ID))
	noErr(t, "DoneHandOff again", l.DoneHandOff(e.ctx, hs[0].ID))
	if got := ids("host-a"); fmt.Sprint(got) != "[s-free/m3:ag-2]" {
		t.Errorf("host-a's hand-offs after done: %v", got)
	}
	// host-a's lease runs out: its queued rows go to whoever claims the
	// session next.
	if _, err := l.HandOff(e.ctx, sessiondb.HandOff{SessionID: "s-a", AgentGroupID: "ag-1", RowID: "m4:ag-1", Row: []byte("d")}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if got := ids("host-b"); fmt.Sprint(got) != "[s-b/m2:ag-1 s-free/m3:ag-2 s-a/m4:ag-1]" {
		t.Errorf("host-b's hand-offs once host-a's lease ran out: %v", got)
	}
	for _, c := range []struct {
		name string
		h    sessiondb.HandOff
	}{
		{"session_id", sessiondb.HandOff{AgentGroupID: "ag", RowID: "r", Row: []byte("x")}},
		{"agent_group_id", sessiondb.HandOff{SessionID: "s", AgentGroupID: "../x", RowID: "r", Row: []byte("x")}},
		{"row_id", sessiondb.HandOff{SessionID: "s", AgentGroupID: "ag", Row: []byte("x")}},
		{"row", sessiondb.HandOff{SessionID: "s", AgentGroupID: "ag", RowID: "r"}},
	} {
		_, err := l.HandOff(e.ctx, c.h)
		wantCode(t, "HandOff without "+c.name, err, sessiondb.EINVALID)
		if err != nil && !strings.Contains(err.Error(), c.name) {
			t.Errorf("HandOff's refusal %q does not name %s", err, c.name)
		}
	}
	_, err = l.HandOffs(e.ctx, "", 10)
	wantCode(t, "HandOffs without a host", err, sessiondb.EINVALID)
	_, err = l.HandOffs(e.ctx, "host-a", 0)
	wantCode(t, "HandOffs with no limit", err, sessiondb.EINVALID)
}

func testLeaseRaces(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	handles := []sessiondb.HostLeaseService{leases(t, e.r), leases(t, e.reopen())}
	const hosts, events = 8, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	holders := map[string]int{}
	routed := map[string][]string{}
	errs := make(chan error, hosts*(events+1))
	for i := 0; i < hosts; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := handles[i%len(handles)]
			host := fmt.Sprintf("host-%d", i)
			_, held, err := l.ClaimSession(e.ctx, "contested", host, time.Minute)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			if held {
				holders[host]++
			}
			mu.Unlock()
			for ev := 0; ev < events; ev++ {
				key := fmt.Sprintf("event-%d", ev)
				ok, err := l.ClaimEvent(e.ctx, key, host)
				if err != nil {
					errs <- err
					continue
				}
				if ok {
					mu.Lock()
					routed[key] = append(routed[key], host)
					mu.Unlock()
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent claim: %v", err)
	}
	if len(holders) != 1 {
		t.Errorf("holders of the contested session: %v, want exactly one", holders)
	}
	if len(routed) != events {
		t.Errorf("%d events routed, want %d", len(routed), events)
	}
	for key, by := range routed {
		if len(by) != 1 {
			t.Errorf("%s routed by %v, want one host", key, by)
		}
	}
}
