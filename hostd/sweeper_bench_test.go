package hostd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// sweepFarm creates n initialized session folders quickly (one real
// InitSession, then copies of its files).
func sweepFarm(b *testing.B, n int) (*mailbox.Host, []mailbox.SessionRef) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "v2")
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	if err != nil {
		b.Fatal(err)
	}
	tmpl := mailbox.SessionRef{AgentGroupID: "g000", SessionID: "s00000"}
	copies := newSessionCopier(b, h, tmpl)
	refs := []mailbox.SessionRef{tmpl}
	for i := 1; i < n; i++ {
		ref := mailbox.SessionRef{AgentGroupID: fmt.Sprintf("g%03d", i%100), SessionID: fmt.Sprintf("s%05d", i)}
		copies.make(b, ref)
		refs = append(refs, ref)
	}
	return h, refs
}

// sessionCopier makes session folders quickly: one real InitSession (the
// template), then copies of its two files, which is what an InitSession of
// each would leave at a fraction of the setup time.
type sessionCopier struct {
	h       *mailbox.Host
	in, out []byte
}

func newSessionCopier(b *testing.B, h *mailbox.Host, tmpl mailbox.SessionRef) *sessionCopier {
	b.Helper()
	if err := h.InitSession(context.Background(), tmpl); err != nil {
		b.Fatal(err)
	}
	tdir, _ := h.Layout().SessionDir(tmpl)
	in, _ := os.ReadFile(filepath.Join(tdir, mailbox.InboundFile))
	out, _ := os.ReadFile(filepath.Join(tdir, mailbox.OutboundFile))
	return &sessionCopier{h: h, in: in, out: out}
}

// make gives ref a folder, with inbox/ and outbox/, holding copies of the
// template's files.
func (c *sessionCopier) make(b *testing.B, ref mailbox.SessionRef) {
	b.Helper()
	dir, _ := c.h.Layout().SessionDir(ref)
	for _, d := range []string{dir, filepath.Join(dir, mailbox.InboxDirName), filepath.Join(dir, mailbox.OutboxDirName)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	for name, data := range map[string][]byte{mailbox.InboundFile: c.in, mailbox.OutboundFile: c.out} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

type idleRuntime struct{}

func (idleRuntime) Running(mailbox.SessionRef) bool                        { return false }
func (idleRuntime) Stop(context.Context, mailbox.SessionRef, string) error { return nil }
func (idleRuntime) Wake(context.Context, mailbox.SessionRef) error         { return nil }

// primedSweeper is a sweeper over h that has swept once, so a tick sees
// only what changed after it.
func primedSweeper(b *testing.B, h *mailbox.Host) *Sweeper {
	b.Helper()
	sw, err := NewSweeper(SweeperConfig{Host: h, Runtime: idleRuntime{}, Waker: idleRuntime{}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sw.Sweep(context.Background(), false); err != nil {
		b.Fatal(err)
	}
	return sw
}

// BenchmarkSweep measures one sweep tick over N idle session folders
// (nothing changed since the last tick: three stats per folder, nothing
// opened) and over N folders of which 1% changed (a new inbound row each).
func BenchmarkSweep(b *testing.B) {
	// MAILBOX_BENCH_SESSIONS scales the number of session folders.
	n := testkit.EnvInt("MAILBOX_BENCH_SESSIONS", 500)
	ctx := context.Background()
	b.Run(fmt.Sprintf("idle-%d", n), func(b *testing.B) {
		h, _ := sweepFarm(b, n)
		sw := primedSweeper(b, h)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := sw.Sweep(ctx, false)
			if err != nil || res.Examined != 0 || res.Sessions != n {
				b.Fatalf("idle tick %+v %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	})
	b.Run(fmt.Sprintf("changed1pct-%d", n), func(b *testing.B) {
		h, refs := sweepFarm(b, n)
		sw := primedSweeper(b, h)
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
			res, err := sw.Sweep(ctx, false)
			if err != nil || len(res.Errors) > 0 {
				b.Fatalf("tick %+v %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/tick")
	})
}
