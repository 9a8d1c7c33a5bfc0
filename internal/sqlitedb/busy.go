package sqlitedb

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Our busy handler. SQLite calls a connection's busy handler when a lock it
// needs is held by another connection (a reader meeting a writer's commit, a
// COMMIT waiting for readers to leave, BEGIN IMMEDIATE meeting another
// writer). SQLite's own handler (what PRAGMA busy_timeout installs) sleeps
// 1, 2, 5, 10, 15, 20, 25 ... 100 ms between tries; a mailbox commit holds
// its lock for well under a millisecond plus its fsyncs, so a reader that
// met it slept 1 to 5 ms after the lock was free, on every hop of a round
// trip. Ours polls in steps that start at 20 µs and double every second try
// up to 1 ms, then stay there: a short wait ends soon after the lock is
// released, a long one costs at most a thousand wake-ups a second.
//
// A wait ends early when the connection is interrupted (the drivers call
// sqlite3_interrupt when a statement's context ends; interruptWhenDone
// covers a new connection's pragmas): a cancelled call stops within a
// pause, not at its timeout (5 s on mailbox files).
//
// Neither driver exposes sqlite3_busy_handler; installBusyHandler (per
// driver) reaches the connection's sqlite3 handle and calls it directly,
// with the connection as the handler's argument and the wait kept in its
// client data (sqlite3_set_clientdata).

const (
	busyFirstStep = 20 * time.Microsecond
	busyMaxStep   = time.Millisecond
)

// busyRamp is the sum of the steps before they reach busyMaxStep, and
// busyRampTries how many tries that takes.
var busyRamp, busyRampTries = func() (time.Duration, int) {
	var sum time.Duration
	n := 0
	for ; busyStepAt(n) < busyMaxStep; n++ {
		sum += busyStepAt(n)
	}
	return sum, n
}()

// busyStepAt is the pause before try n+1 (n counts from 0).
func busyStepAt(n int) time.Duration {
	if n/2 >= 16 {
		return busyMaxStep
	}
	return min(busyFirstStep<<(n/2), busyMaxStep)
}

// busySlept is the total of the pauses before try n.
func busySlept(n int) time.Duration {
	if n >= busyRampTries {
		return busyRamp + time.Duration(n-busyRampTries)*busyMaxStep
	}
	var sum time.Duration
	for i := 0; i < n; i++ {
		sum += busyStepAt(i)
	}
	return sum
}

// busyPause is what the handler does on its n-th call for a connection
// whose wait is bounded by timeout: the pause before trying again, or false
// to give up (SQLite then returns SQLITE_BUSY). Like SQLite's own handler it
// counts the pauses it asked for, not the clock: the bound is on waiting,
// and the last pause is cut to end at it.
func busyPause(n int, timeout time.Duration) (time.Duration, bool) {
	slept := busySlept(n)
	if slept >= timeout {
		return 0, false
	}
	return min(busyStepAt(n), timeout-slept), true
}

// The yielding schedule is for the writer of a file that several processes
// append to (Writer.Yield: the history store). With the quick steps above, a
// process waiting for BEGIN IMMEDIATE took the lock in the gap between two
// transactions of the process holding it, so the lock changed hands at
// nearly every commit; and each handover costs the taker its page cache
// (another process's commit invalidated it) and a re-read of the pages it
// writes. At synchronous=FULL four processes on one file appended at 0.48
// of one process alone (sessiondb bench, concurrent phase). Waits that begin
// at 1 ms, about one durable commit, let the holder run its transactions
// back to back while the others sleep, as SQLite's own handler does (Hermes
// runs with it): 0.9 of one process alone. The pauses are jittered by a
// quarter either way so that waiters do not wake in step.
const (
	yieldFirstStep = time.Millisecond
	yieldMaxStep   = 8 * time.Millisecond
)

// yieldStepAt is the yielding schedule's pause before try n+1, without its
// jitter: 1, 2, 4, 8 ms, then 8 ms.
func yieldStepAt(n int) time.Duration {
	if n >= 3 {
		return yieldMaxStep
	}
	return yieldFirstStep << n
}

// busyWait is what a connection's busy handler knows: how long it may wait
// (whole milliseconds) and on which schedule. It travels to the handler as
// one integer (arg), the connection's client data.
type busyWait struct {
	ms    uintptr
	yield bool
}

// newBusyWait is a wait bounded by timeout, at least 1 ms for any positive
// timeout; the zero busyWait (no timeout) installs no handler.
func newBusyWait(timeout time.Duration, yield bool) busyWait {
	if timeout <= 0 {
		return busyWait{}
	}
	return busyWait{ms: uintptr(max(1, timeout/time.Millisecond)), yield: yield}
}

// arg is w as the handler's argument: the milliseconds, shifted, and the
// schedule in the low bit; 0 when there is no wait.
func (w busyWait) arg() uintptr {
	if w.ms == 0 {
		return 0
	}
	a := w.ms << 1
	if w.yield {
		a |= 1
	}
	return a
}

// busyWaitOf reads an argument arg made.
func busyWaitOf(a uintptr) busyWait { return busyWait{ms: a >> 1, yield: a&1 == 1} }

// pause is the handler's n-th decision under w: the pause before trying
// again, or false to give up.
func (w busyWait) pause(n int) (time.Duration, bool) {
	timeout := time.Duration(w.ms) * time.Millisecond
	if !w.yield {
		return busyPause(n, timeout)
	}
	var slept time.Duration
	for i := 0; i < n && slept < timeout; i++ {
		slept += yieldStepAt(i)
	}
	if slept >= timeout {
		return 0, false
	}
	d := yieldStepAt(n)
	d = d*3/4 + rand.N(d/2+1)
	return min(d, timeout-slept), true
}

// interruptWhenDone interrupts the driver connection dc (sqlite3_interrupt
// through interruptConn, per driver) if ctx ends before the returned stop
// is called, so that our busy handler gives up a wait that no statement of
// the driver's own covers: the pure-Go driver interrupts a statement's
// steps on its context, not the schema read that preparing one may wait
// for, which is what a fresh connection's pragmas do while another
// process commits. stop must be called before dc is closed.
func interruptWhenDone(ctx context.Context, dc any) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	var mu sync.Mutex
	finished := false
	quit := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			mu.Lock()
			if !finished {
				_ = interruptConn(dc)
			}
			mu.Unlock()
		case <-quit:
		}
	}()
	return func() {
		mu.Lock()
		finished = true
		mu.Unlock()
		close(quit)
	}
}
