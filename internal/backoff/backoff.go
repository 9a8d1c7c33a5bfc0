// Package backoff holds the one exponential back-off formula the mailbox
// host and its daemon use: the delay after a delivery attempt, after a
// dead container's claim, and after a failed sweep or drain of a session.
package backoff

import "time"

// Exponential returns the wait after the n-th consecutive failure: first,
// doubled for each failure after the first, never more than ceiling. n < 1
// counts as 1. Doubling stops at ceiling, so a large n never overflows.
func Exponential(n int, first, ceiling time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < ceiling; i++ {
		if d > ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return min(d, ceiling)
}
