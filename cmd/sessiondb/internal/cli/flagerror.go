package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sessiondb/sessiondb"
)

// DashHint is the annotation key of a command that says, in its own words,
// what an argument starting with '-' would be ("to search for a term
// starting with '-'"): an unknown flag of that command then suggests
// putting `--` before it.
const DashHint = "sessiondb/dash-hint"

// flagError is the root's flag-error hook: a flag mistake is invalid
// input (exit 2), said in words rather than the parser's (a value that is
// not a number names the flag and what it wants, not strconv's
// complaint), with the help to read and, on a command that takes
// arguments, the `--` that passes one starting with '-'.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		fl := bad.GetFlag()
		msg = fmt.Sprintf("--%s %q: %s", fl.Name, PrintableLine(bad.GetValue()), wantValue(fl.Value.Type(), bad))
	}
	hint := ""
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && takesArguments(c) {
		arg := "--" + unknown.GetSpecifiedName()
		if sh := unknown.GetSpecifiedShortnames(); sh != "" {
			arg = "-" + sh
		}
		what := c.Annotations[DashHint]
		if what == "" {
			what = "to give an argument starting with '-'"
		}
		hint = fmt.Sprintf("; %s, put `--` before it, as in `%s -- %s`", what, c.CommandPath(), PrintableLine(arg))
	}
	return sessiondb.Errorf(sessiondb.EINVALID, "%s%s (see `%s --help`)", msg, hint, c.CommandPath())
}

// wantValue says what a flag of pflag type typ takes.
func wantValue(typ string, err error) string {
	rng := ""
	if errors.Is(err, strconv.ErrRange) {
		rng = " (this one is out of range)"
	}
	switch {
	case typ == "bool":
		return "want true or false"
	case typ == "duration":
		return "want a duration such as 90s, 5m or 1h30m"
	case strings.HasPrefix(typ, "uint"):
		return "want a whole number, 0 or more" + rng
	case strings.HasPrefix(typ, "int"), typ == "count":
		return "want a whole number" + rng
	case strings.HasPrefix(typ, "float"):
		return "want a number" + rng
	}
	return "not a valid " + typ
}

// takesArguments reports whether c's usage line names arguments beside
// its flags ("search <query>", "grant USER ROLE").
func takesArguments(c *cobra.Command) bool {
	f := strings.Fields(c.Use)
	return len(f) > 1 && !strings.HasPrefix(f[1], "[-") && f[1] != "[flags]"
}
