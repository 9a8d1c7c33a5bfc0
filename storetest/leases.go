package storetest

import (
	"fmt"
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
	leases := func(t *testing.T, r sessiondb.Registry) sessiondb.HostLeaseService {
		t.Helper()
		l, ok := r.(sessiondb.HostLeaseService)
		if !ok {
			t.Fatalf("%T does not implement sessiondb.HostLeaseService", r)
		}
		return l
	}
	t.Run("OneHostAtATime", func(t *testing.T) {
		t.Parallel()
		e := newRenv(t, h)
		l := leases(t, e.r)
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
	})
	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		e := newRenv(t, h)
		l := leases(t, e.r)
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
	})
	t.Run("EventsOnce", func(t *testing.T) {
		t.Parallel()
		e := newRenv(t, h)
		l := leases(t, e.r)
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
	})
	t.Run("Races", func(t *testing.T) {
		t.Parallel()
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
	})
}
