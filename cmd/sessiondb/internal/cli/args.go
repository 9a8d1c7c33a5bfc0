package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
)

// Argument checks that return coded errors (exit 2) naming what is wanted;
// what describes the arguments, as in "one session id, id prefix or title".

// ExactArgs accepts exactly n arguments.
func ExactArgs(n int, what string) cobra.PositionalArgs { return RangeArgs(n, n, what) }

// MinimumArgs accepts min or more arguments.
func MinimumArgs(min int, what string) cobra.PositionalArgs { return RangeArgs(min, -1, what) }

// RangeArgs accepts between min and max arguments; max < 0 means no upper
// bound.
func RangeArgs(min, max int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return ArgError(c, "want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// ArgError is an invalid error about c's arguments, naming the command
// without the program's name (Run puts "sessiondb: " before every error)
// and ending with its usage line.
func ArgError(c *cobra.Command, format string, args ...any) error {
	name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	return sessiondb.Errorf(sessiondb.EINVALID, "%s: %s (usage: %s)", name, fmt.Sprintf(format, args...), c.UseLine())
}

// CheckPaging validates --limit and --offset.
func CheckPaging(limit, offset int) error {
	if limit < 1 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--limit %d: want 1 or more", limit)
	}
	if offset < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--offset %d: want 0 or more", offset)
	}
	return nil
}

// ParseSynchronous maps a --synchronous flag (normal or full, any case;
// "" is normal) to the store option value, NORMAL or FULL.
func ParseSynchronous(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "normal":
		return "NORMAL", nil
	case "full":
		return "FULL", nil
	}
	return "", sessiondb.Errorf(sessiondb.EINVALID, "--synchronous %q: want normal or full", s)
}
