// Package testkit holds the helpers tests across the module share: a
// settable clock, a buffer safe to read while another goroutine writes it,
// a bounded wait for a condition and benchmark sizes from the environment.
// It is imported by tests only and needs only the standard library, so the
// conformance suite (storetest) can use it without linking a SQLite driver
// (reading a SQLite file in a test is internal/sqlitedb/sqlitetest).
package testkit

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock, safe for concurrent use; pass its Now method
// wherever code takes a clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d (backwards when d < 0).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Buffer is a bytes.Buffer that may be read while other goroutines write
// it (a logger's or a command's output).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor polls cond until it holds. It fails the test only when cond never
// holds within a generous limit, so it waits for an event without asserting
// how long the event takes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// EnvInt reads a positive integer from the environment variable name (a
// benchmark's size), def when it is unset or not a positive integer.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
