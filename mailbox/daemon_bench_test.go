package mailbox

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkDaemonIdleTick measures one change-detection tick over idle
// sessions: the cost the daemon pays every Poll interval when nothing
// happens (a changed-only sweep plus the delivery check).
func BenchmarkDaemonIdleTick(b *testing.B) {
	for _, n := range []int{10, 200} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			h, err := NewHost(HostOptions{Layout: Layout{Root: filepath.Join(b.TempDir(), "v2-sessions")}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := h.InitSession(ctxb, SessionRef{AgentGroupID: "ag", SessionID: fmt.Sprintf("s%04d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			d, err := NewDaemon(h, DaemonOptions{FullSweep: 1 << 62})
			if err != nil {
				b.Fatal(err)
			}
			d.tick(ctxb) // the first tick is a full sweep and queues drains
			d.mu.Lock()
			d.queue = nil
			for _, s := range d.slots {
				s.queued = false
			}
			d.mu.Unlock()
			b.ResetTimer()
			for b.Loop() {
				d.tick(ctxb)
			}
		})
	}
}
