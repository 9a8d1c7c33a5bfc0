package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
)

// progressEvery is the least time between two draws of a progress line.
const progressEvery = 100 * time.Millisecond

// ProgressLine draws a one-line progress report while long work runs, only
// on a terminal: scripts and logs get no carriage returns. A nil
// *ProgressLine is valid and draws nothing, so callers need no checks.
type ProgressLine struct {
	w     io.Writer
	now   sessiondb.Clock
	label string
	total int64 // 0 when unknown
	unit  string

	mu      sync.Mutex
	last    time.Time
	started time.Time
	drawn   bool
}

// NewProgressLine returns a progress line for label on w, or nil when w is
// not a terminal. total is the expected count in unit; 0 if unknown.
// Updates are drawn at most every 100 ms of the clock now.
func NewProgressLine(w io.Writer, now sessiondb.Clock, label string, total int64, unit string) *ProgressLine {
	if !IsTerminal(w) {
		return nil
	}
	return &ProgressLine{w: w, now: now, label: label, total: total, unit: unit, started: now()}
}

// Set reports done units so far.
func (p *ProgressLine) Set(done int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.now()
	if p.drawn && t.Sub(p.last) < progressEvery {
		return
	}
	p.last, p.drawn = t, true
	el := t.Sub(p.started).Round(100 * time.Millisecond)
	unit := p.unit
	if unit != "" {
		unit = " " + unit
	}
	if p.total > 0 {
		pct := float64(done) * 100 / float64(p.total)
		fmt.Fprintf(p.w, "\r\x1b[K%s %s %3.0f%% (%d/%d%s, %s)", p.label, bar(pct, 24), pct, done, p.total, unit, el)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %d%s (%s)", p.label, done, unit, el)
}

// Done erases the progress line.
func (p *ProgressLine) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func bar(pct float64, width int) string {
	n := int(pct / 100 * float64(width))
	n = max(0, min(width, n))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// Spin runs work with a spinner labelled label on Err (a terminal only):
// for work of unknown length, such as one long transaction.
func (f *Factory) Spin(label string, work func() error) error {
	stop := spinner(f.Err, f.Now, label)
	defer stop()
	return work()
}

// spinner shows label and the elapsed time on a terminal w until the
// returned stop, which erases it.
func spinner(w io.Writer, now sessiondb.Clock, label string) (stop func()) {
	p := NewProgressLine(w, now, label, 0, "")
	if p == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		frames := `|/-\`
		for i := 0; ; i++ {
			p.mu.Lock()
			fmt.Fprintf(p.w, "\r\x1b[K%s %c %s", label, frames[i%len(frames)], now().Sub(p.started).Round(100*time.Millisecond))
			p.drawn = true
			p.mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		p.Done()
	}
}
