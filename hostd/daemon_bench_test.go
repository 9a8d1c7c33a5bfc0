package hostd

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb/mailbox"
)

// BenchmarkDaemonIdleTick measures one change-detection tick over idle
// sessions: the cost the daemon pays every Poll interval when nothing
// happens (a changed-only sweep plus the delivery check).
func BenchmarkDaemonIdleTick(b *testing.B) {
	for _, n := range []int{10, 200} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(b.TempDir(), "v2-sessions")}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := h.InitSession(ctxb, mailbox.SessionRef{AgentGroupID: "ag", SessionID: fmt.Sprintf("s%04d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			d, err := New(h, Config{FullSweep: 1 << 62})
			if err != nil {
				b.Fatal(err)
			}
			d.tick(ctxb) // the first tick is a full sweep and queues drains
			d.drainer.mu.Lock()
			d.drainer.queue = nil
			for _, s := range d.drainer.slots {
				s.queued = false
			}
			d.drainer.mu.Unlock()
			b.ResetTimer()
			for b.Loop() {
				d.tick(ctxb)
			}
		})
	}
}
