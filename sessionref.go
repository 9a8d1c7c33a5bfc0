package sessiondb

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameLen is the longest safe name in bytes (a common file system limit
// for one path segment).
const MaxNameLen = 255

// SessionRef names one agent session: the agent group it belongs to and
// its id. The mailbox keeps it at <root>/<AgentGroupID>/<SessionID>, and the
// control plane's session registry keys its rows by it, so both ids must be
// safe names (CheckSafeName).
type SessionRef struct {
	AgentGroupID string `json:"agent_group_id"`
	SessionID    string `json:"session_id"`
}

// String returns "<agent group>/<session>".
func (r SessionRef) String() string { return r.AgentGroupID + "/" + r.SessionID }

// Validate checks both ids with CheckSafeName; the error (code invalid)
// names the offending field.
func (r SessionRef) Validate() error {
	if err := CheckSafeName("agent_group_id", r.AgentGroupID); err != nil {
		return err
	}
	return CheckSafeName("session_id", r.SessionID)
}

// CheckSafeName checks that name is safe to use as one path segment: not
// empty, at most MaxNameLen bytes, valid UTF-8, not "." or "..", and free of
// '/', '\\', NUL and other control characters. ':' is allowed (NanoClaw
// message ids contain it). The error has code invalid and names field; it
// quotes at most 64 bytes of name.
func CheckSafeName(field, name string) error {
	bad := func(why string) error {
		shown := name
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return Errorf(EINVALID, "%s %q is not a safe name: %s", field, shown, why)
	}
	switch {
	case name == "":
		return Errorf(EINVALID, "%s is empty", field)
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("%d bytes, the limit is %d", len(name), MaxNameLen))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case name == "." || name == "..":
		return bad("a relative folder name")
	}
	for _, r := range name {
		switch {
		case r == '/' || r == '\\':
			return bad("contains a path separator")
		case r == 0:
			return bad("contains a NUL byte")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return bad("contains a control character")
		}
	}
	return nil
}
