package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progressEvery is how often a running count is redrawn.
const progressEvery = 250 * time.Millisecond

// progress writes phase names and running counts to stderr, only when
// stderr is a terminal (scripts capturing it get clean output) and not
// silenced.
type progress struct {
	w    io.Writer // nil when off
	now  func() time.Time
	last time.Time
	open bool // a count line without its newline is on screen
}

func newProgress(stderr io.Writer, quiet bool, now func() time.Time) *progress {
	p := &progress{now: now}
	if !quiet && isTerminal(stderr) {
		p.w = stderr
	}
	return p
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *progress) endLine() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// phase prints one line naming what starts now.
func (p *progress) phase(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.endLine()
	fmt.Fprintf(p.w, "bench: "+format+"\n", args...)
}

// count redraws "name i/n" at most every progressEvery.
func (p *progress) count(name string, i, n int) {
	if p.w == nil {
		return
	}
	t := p.now()
	if i != n && t.Sub(p.last) < progressEvery {
		return
	}
	p.last = t
	fmt.Fprintf(p.w, "\rbench: %s %d/%d", name, i, n)
	p.open = true
}

// done prints the rate of a finished timed phase.
func (p *progress) done(name string, n int, took time.Duration) {
	if p.w == nil {
		return
	}
	p.endLine()
	fmt.Fprintf(p.w, "bench: %s: %d in %.2f s (%.0f/s)\n", name, n, took.Seconds(), rate(n, took))
}
