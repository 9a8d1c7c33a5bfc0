package testkit

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
	c.Set(start.Add(-time.Hour))
	if want := start.Add(-time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after Set: %v, want %v", c.Now(), want)
	}
}

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("%d bytes, want 800", n)
	}
}

func TestEnvInt(t *testing.T) {
	const name = "TESTKIT_ENVINT"
	for _, tc := range []struct {
		val  string
		want int
	}{{"", 7}, {"12", 12}, {"0", 7}, {"-3", 7}, {"x", 7}} {
		t.Setenv(name, tc.val)
		if got := EnvInt(name, 7); got != tc.want {
			t.Errorf("%s=%q: got %d, want %d", name, tc.val, got, tc.want)
		}
	}
}
