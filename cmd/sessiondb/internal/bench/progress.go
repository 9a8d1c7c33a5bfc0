package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

// progress writes phase names, running counts and rates to stderr, only
// when stderr is a terminal (scripts capturing it get clean output) and not
// silenced.
type progress struct {
	w   io.Writer // nil when off
	now sessiondb.Clock
}

func newProgress(stderr io.Writer, quiet bool, now sessiondb.Clock) *progress {
	p := &progress{now: now}
	if !quiet && cli.IsTerminal(stderr) {
		p.w = stderr
	}
	return p
}

// phase prints one line naming what starts now.
func (p *progress) phase(format string, args ...any) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "bench: "+format+"\n", args...)
}

// counter returns the running count of a timed phase of n steps in unit,
// redrawn in place; nil (which draws nothing) when progress is off. Its
// Done erases it.
func (p *progress) counter(name string, n int, unit string) *cli.ProgressLine {
	if p.w == nil {
		return nil
	}
	return cli.NewProgressLine(p.w, p.now, "bench: "+name, int64(n), unit)
}

// done prints the rate of a finished timed phase.
func (p *progress) done(name string, n int, took time.Duration) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "bench: %s: %d in %.2f s (%.0f/s)\n", name, n, took.Seconds(), rate(n, took))
}
