package hostd

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

// An outbound change reported while a drain runs is owed a second drain
// only when its commit ended after the drain's read: the agent's reply,
// which the drain woken by the claim waited for in its read, was delivered
// by that drain, and a second one would find nothing. A change reported
// after the read (here from the deliverer, which runs after it) still
// queues one.
func TestDrainerDropsChangesItsReadSaw(t *testing.T) {
	f := newFixture(t)
	a := f.openAgent()
	dr := newDrainer(drainerConfig{host: f.host, backoffMin: time.Second, backoffMax: time.Minute})
	send := func(id string) {
		t.Helper()
		if _, err := a.Send(ctxb, mailbox.OutboundMessage{ID: id, Content: json.RawMessage(`{"text":"hi"}`),
			Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
			t.Fatal(err)
		}
	}
	var during func()
	del := mailbox.DelivererFunc(func(context.Context, mailbox.SessionRef, mailbox.OutboundRow) (string, error) {
		if during != nil {
			during()
		}
		return "P", nil
	})
	drain := func() int {
		t.Helper()
		dr.request(f.ref)
		ref, ok := dr.next()
		if !ok || ref != f.ref {
			t.Fatalf("next: %v, %v", ref, ok)
		}
		// The wake of the reply's commit comes while the drain runs,
		// before its read.
		dr.changed(ref)
		res, err := f.host.DrainWith(ctxb, ref, del, mailbox.DrainOptions{Read: func() { dr.sawRead(ref) }})
		if err != nil || res.Delivered != 1 {
			t.Fatalf("drain: %+v, %v", res, err)
		}
		dr.finish(ref, res, err, time.Time{}, f.clk.Now())
		dr.mu.Lock()
		defer dr.mu.Unlock()
		return len(dr.queue)
	}

	send("o1")
	if n := drain(); n != 0 {
		t.Fatalf("a change the drain's read saw queued %d more drains, want 0", n)
	}
	send("o2")
	during = func() { dr.changed(f.ref) } // a commit after the read
	if n := drain(); n != 1 {
		t.Fatalf("a change after the drain's read queued %d more drains, want 1", n)
	}
}
