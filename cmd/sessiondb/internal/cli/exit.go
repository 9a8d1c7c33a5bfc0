package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// Exit statuses by error code, so scripts can tell "nothing there" from
// "bad input" from "try again later".
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitInvalid     = 2
	ExitNotFound    = 3
	ExitConflict    = 4
	ExitBusy        = 5
	ExitInterrupted = 130 // the shell's status for Ctrl-C
)

// ExitCode maps an error to the process exit status by its code.
func ExitCode(err error) int {
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	switch sessiondb.ErrorCode(err) {
	case sessiondb.EINVALID:
		return ExitInvalid
	case sessiondb.ENOTFOUND:
		return ExitNotFound
	case sessiondb.ECONFLICT:
		return ExitConflict
	case sessiondb.EBUSY:
		return ExitBusy
	case "":
		return ExitOK
	}
	// cobra's own usage errors (unknown command, wrong arg count) are plain
	// errors; they are the caller's mistake.
	if isUsageError(err) {
		return ExitInvalid
	}
	return ExitInternal
}

// isUsageError reports errors cobra returns for a malformed command line
// outside our own checks (an unknown command, or a flag error the hook did
// not see). Cobra gives them no type, so their fixed message openings are
// all there is to go by; our own commands return coded errors instead.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{
		"unknown command ", "unknown flag: ", "unknown shorthand flag: ",
		"flag needs an argument: ", "invalid argument ", "bad flag syntax: ",
		"accepts ", "requires at least ", "required flag(s) ",
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
