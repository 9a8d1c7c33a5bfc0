package sessiondb

import (
	"strings"
	"unicode/utf8"
)

// Registry is the control plane's central registry (spec/control-plane.md
// part A, NanoClaw's data/v2.db): agent groups, the chats they are wired
// to, users and their roles, the session registry and its resolver,
// destinations, pending questions and approvals, and the dropped-message
// audit. Every backend (sqlite now, postgres later) implements it and
// storetest holds it to the contract; the decisions taken over its data
// (access, engage, approvers, delivery) are pure functions of this package.
//
// Every method is safe for concurrent use, from goroutines and, for the
// SQLite file, from other processes. Timestamps are stored as
// TimestampFormat text and read back with ParseTimestamp; a stored value no
// form reads comes back as the zero time. Empty strings stand for NULL
// columns, both ways.
type Registry interface {
	AgentGroupService
	MessagingGroupService
	WiringService
	UserService
	AgentSessionService
	DestinationService
	ApprovalService
	DroppedService
	Close() error
}

// Limits on registry text, in bytes. They keep one hostile field from
// swamping a listing or a card; NanoClaw has none.
const (
	MaxNameText     = 512     // names, local names, display names
	MaxCardText     = 4096    // card titles and option labels
	MaxPlatformID   = 1024    // platform chat, thread and user handles
	MaxPayloadBytes = 1 << 20 // JSON payloads, original events, option lists
)

// checkWord refuses v unless it is one of allowed; the error names field
// and lists the words.
func checkWord[T ~string](field string, v T, allowed ...T) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = string(a)
	}
	return Errorf(EINVALID, "%s %q is not one of %s", field, clip(string(v)), strings.Join(words, ", "))
}

// checkText refuses text that is empty (when required), longer than max
// bytes, not UTF-8, or holds a NUL or another control character other
// than tab and newline. The error names field.
func checkText(field, v string, required bool, max int) error {
	switch {
	case v == "" && required:
		return Errorf(EINVALID, "%s is empty", field)
	case len(v) > max:
		return Errorf(EINVALID, "%s is %d bytes, the limit is %d", field, len(v), max)
	case !utf8.ValidString(v):
		return Errorf(EINVALID, "%s %q is not valid UTF-8", field, clip(v))
	}
	for _, r := range v {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return Errorf(EINVALID, "%s %q contains a control character", field, clip(v))
		}
	}
	return nil
}

// firstError returns the first non-nil of errs, nil when there is none:
// a Validate's checks listed in the order their errors take precedence.
// Every check runs, so each must be cheap and free of side effects.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// unlessEmpty runs check only when v is set: an empty word is a filter
// that does not filter, or a default to fill in.
func unlessEmpty[T ~string](v T, check func() error) error {
	if v == "" {
		return nil
	}
	return check()
}

// checkID refuses an id that is empty (when required) or unsafe: registry
// ids name folders (agent groups, sessions) or travel in button data, so
// every one is held to CheckSafeName.
func checkID(field, v string, required bool) error {
	if v == "" && !required {
		return nil
	}
	return CheckSafeName(field, v)
}

// checkChannelType refuses a channel type that is not a short lowercase
// word (letters, digits, '-', '_', '.'), as adapters name themselves
// ("telegram", "discord", "cli", "agent").
func checkChannelType(field, v string) error {
	if v == "" {
		return Errorf(EINVALID, "%s is empty", field)
	}
	if len(v) > 64 {
		return Errorf(EINVALID, "%s is %d bytes, the limit is 64", field, len(v))
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return Errorf(EINVALID, "%s %q may hold only lowercase letters, digits, '-', '_' and '.'", field, clip(v))
		}
	}
	return nil
}

// clip cuts outside text quoted in an error message to 64 bytes.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// notFound is the not_found error for one registry row.
func notFound(what, id string) error {
	return Errorf(ENOTFOUND, "%s %q not found", what, clip(id))
}

// NotFound returns the not_found error backends give for a missing
// registry row (what is "agent group", "session", ...), so every backend
// words it the same way.
func NotFound(what, id string) error { return notFound(what, id) }
