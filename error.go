package sessiondb

import (
	"context"
	"errors"
	"fmt"
)

// Error codes. Every error returned by a sessiondb package carries one of
// these, readable with ErrorCode. The CLI maps them to exit statuses and the
// server (later) to HTTP statuses.
const (
	EINVALID  = "invalid"   // the caller's input is wrong; retrying will not help
	ENOTFOUND = "not_found" // the named thing does not exist
	ECONFLICT = "conflict"  // the request clashes with existing state (a taken title, an ambiguous prefix)
	EBUSY     = "busy"      // the write lock could not be had within the write budget
	EINTERNAL = "internal"  // anything else: I/O, corruption, a bug
)

// Error is a classified error. Message is meant for people; Err, when set,
// is the underlying cause and is reachable with errors.Is/As.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	// Message already holds the cause's text when there is one (Errorf and
	// Wrap put it there), so the cause is not repeated.
	switch {
	case e.Message != "":
		return e.Message
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Code
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message. A %w
// verb in format wraps its operand as the cause.
func Errorf(code, format string, args ...any) error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// Wrap classifies err with code and adds context. It returns nil for a nil err.
// An err that already carries a code keeps it unless code is not empty and
// the existing code is EINTERNAL.
func Wrap(code string, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if c := codeOf(err); c != "" && (code == "" || c != EINTERNAL) {
		code = c
	}
	if code == "" {
		code = EINTERNAL
	}
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: code, Message: msg + ": " + err.Error(), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	if c := codeOf(err); c != "" {
		return c
	}
	return EINTERNAL
}

// CarriedCode is the code err has before any driver looks at it: the code
// of the first *Error in its chain, else busy when a context ended (the
// work stopped for want of time and may succeed if tried again), else ""
// (nil included). Each backend's classification of its errors starts here.
func CarriedCode(err error) string {
	if c := codeOf(err); c != "" {
		return c
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return EBUSY
	}
	return ""
}

func codeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
