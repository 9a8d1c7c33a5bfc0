package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

func TestProgressLine(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var b bytes.Buffer
	p := &ProgressLine{w: &b, now: clock.Now, label: "importing", total: 200, unit: "bytes", started: clock.Now()}
	p.Set(50)
	first := b.String()
	if !strings.Contains(first, "importing") || !strings.Contains(first, " 25%") || !strings.Contains(first, "50/200 bytes") {
		t.Errorf("first draw: %q", first)
	}
	clock.Advance(50 * time.Millisecond)
	p.Set(60)
	if b.String() != first {
		t.Errorf("redrawn within 100 ms: %q", b.String())
	}
	clock.Advance(100 * time.Millisecond)
	p.Set(200)
	if !strings.HasSuffix(b.String(), "100% (200/200 bytes, 200ms)") {
		t.Errorf("second draw: %q", b.String())
	}
	p.Done()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Errorf("Done does not erase the line: %q", b.String())
	}
	// Not a terminal: no progress line at all, and its methods are no-ops.
	none := NewProgressLine(&b, clock.Now, "x", 0, "")
	if none != nil {
		t.Fatal("progress line on a buffer")
	}
	none.Set(1)
	none.Done()
}
