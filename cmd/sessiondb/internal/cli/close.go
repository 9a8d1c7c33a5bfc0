package cli

import (
	"io"

	"github.com/sessiondb/sessiondb"
)

// With opens a store with open, runs fn on it and closes it, reporting a
// failure to close as CloseInto does.
func With[T io.Closer](open func() (T, error), what string, fn func(T) error) (err error) {
	s, err := open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, s, what)
	return fn(s)
}

// CloseInto closes c for a deferred call in a function with the named
// error result *err: a failure to close (an unflushed checkpoint is worth
// knowing about) becomes that result, wrapped with what, only when the
// function itself succeeded, so it never hides the first failure.
func CloseInto(err *error, c io.Closer, what string) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = sessiondb.Wrap("", cerr, "%s", what)
	}
}
