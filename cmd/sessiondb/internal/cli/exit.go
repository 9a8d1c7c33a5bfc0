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
	ExitCancelled   = 6   // the user answered no to a question: nothing was changed
	ExitInterrupted = 130 // the shell's status for Ctrl-C
)

// ExitStatus is one row of the exit status table of docs/cli.md.
type ExitStatus struct {
	Status  int
	Code    string // the code of an error under --json; "" for none
	Meaning string
}

// ExitStatuses lists every exit status the command line gives, in order.
func ExitStatuses() []ExitStatus {
	return []ExitStatus{
		{ExitOK, "", "done"},
		{ExitInternal, errorCode(ExitInternal), "an internal failure: I/O, a damaged file, a bug"},
		{ExitInvalid, errorCode(ExitInvalid), "invalid input: a flag, an argument, a file's contents"},
		{ExitNotFound, errorCode(ExitNotFound), "not found: no such session, store or registry row"},
		{ExitConflict, errorCode(ExitConflict), "conflict: a title taken, an ambiguous id prefix"},
		{ExitBusy, errorCode(ExitBusy), "busy: the store stayed locked; try again"},
		{ExitCancelled, errorCode(ExitCancelled), "cancelled: you answered no to a question; nothing was changed"},
		{ExitInterrupted, "", "interrupted by Ctrl-C or SIGTERM"},
	}
}

// ErrCancelled is a question (Confirm) answered with anything but yes:
// nothing was changed. It is not a failure of the command's input, so it
// has a status of its own (ExitCancelled) rather than invalid's.
var ErrCancelled = errors.New("not confirmed: nothing was changed (pass --yes to skip the question)")

// ExitCode maps an error to the process exit status by its code.
func ExitCode(err error) int {
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	if errors.Is(err, ErrCancelled) {
		return ExitCancelled
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

// errorCode names exit status code as --json's errors do: the domain's
// codes (the HTTP API's too), and cancelled.
func errorCode(code int) string {
	switch code {
	case ExitInvalid:
		return sessiondb.EINVALID
	case ExitNotFound:
		return sessiondb.ENOTFOUND
	case ExitConflict:
		return sessiondb.ECONFLICT
	case ExitBusy:
		return sessiondb.EBUSY
	case ExitCancelled:
		return "cancelled"
	}
	return sessiondb.EINTERNAL
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
