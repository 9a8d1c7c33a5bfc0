package testkit

import (
	"io"
	"testing"
)

// Opened takes what a test just opened and the open's error: it fails t on
// the error, else closes c when t ends, and returns c. A test writes
//
//	st, err := sqlite.Open(ctx, path, opts)
//	st = testkit.Opened(t, st, err)
//
// instead of the error check and the deferred close at every open.
func Opened[C io.Closer](t testing.TB, c C, err error) C {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
