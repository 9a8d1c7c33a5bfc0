package testkit

import (
	"errors"
	"runtime"
	"testing"
)

type closer struct{ closed int }

func (c *closer) Close() error { c.closed++; return nil }

func TestOpenedClosesAtTheEnd(t *testing.T) {
	c := &closer{}
	t.Run("open", func(t *testing.T) {
		if got := Opened(t, c, nil); got != c {
			t.Fatalf("Opened returned %p, want %p", got, c)
		}
		if c.closed != 0 {
			t.Fatal("closed before the test ended")
		}
	})
	if c.closed != 1 {
		t.Fatalf("closed %d times when the test ended, want once", c.closed)
	}
}

func TestOpenedFailsOnTheOpensError(t *testing.T) {
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	// Fatal ends its goroutine (runtime.Goexit), as in a real test.
	go func() {
		defer close(done)
		Opened(ft, &closer{}, errors.New("no such file"))
		ft.returned = true
	}()
	<-done
	if ft.fatal != "no such file" || ft.returned {
		t.Fatalf("Fatal got %q, returned %v; want the open's error and no return", ft.fatal, ft.returned)
	}
}

// fatalT records Fatal instead of failing the test that runs it.
type fatalT struct {
	testing.TB
	fatal    string
	returned bool
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatal(args ...any) {
	f.fatal = args[0].(error).Error()
	runtime.Goexit()
}
