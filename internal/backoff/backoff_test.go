package backoff

import (
	"math"
	"testing"
	"time"
)

func TestExponential(t *testing.T) {
	cases := []struct {
		name           string
		n              int
		first, ceiling time.Duration
		want           time.Duration
	}{
		{"first failure waits first", 1, time.Second, time.Minute, time.Second},
		{"n below 1 counts as 1", -3, time.Second, time.Minute, time.Second},
		{"doubles", 3, time.Second, time.Minute, 4 * time.Second},
		{"capped", 7, time.Second, time.Minute, time.Minute},
		{"huge n stays at the ceiling", 1 << 30, time.Second, 5 * time.Minute, 5 * time.Minute},
		{"first above ceiling gives ceiling", 1, time.Hour, time.Minute, time.Minute},
		{"no overflow near the top of Duration", 80, time.Hour, math.MaxInt64, math.MaxInt64},
		// The mailbox's own series: claim retries 5 s · 2^tries up to 2^20.
		{"claim retry after 3 tries", 4, 5 * time.Second, 5 * time.Second << 20, 40 * time.Second},
		{"claim retry after 50 tries", 51, 5 * time.Second, 5 * time.Second << 20, 5 * time.Second << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Exponential(tc.n, tc.first, tc.ceiling); got != tc.want {
				t.Fatalf("Exponential(%d, %v, %v) = %v, want %v", tc.n, tc.first, tc.ceiling, got, tc.want)
			}
		})
	}
}
