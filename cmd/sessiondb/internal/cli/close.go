package cli

import (
	"io"

	"github.com/sessiondb/sessiondb"
)

// CloseInto closes c for a deferred call in a function with the named
// error result *err: a failure to close (an unflushed checkpoint is worth
// knowing about) becomes that result, wrapped with what, only when the
// function itself succeeded, so it never hides the first failure.
func CloseInto(err *error, c io.Closer, what string) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = sessiondb.Wrap("", cerr, "%s", what)
	}
}
