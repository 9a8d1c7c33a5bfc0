package sessiondb

import (
	"fmt"
	"strings"
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

// Validate checks the agent group id with CheckAgentGroupID and the session
// id with CheckSafeName; the error (code invalid) names the offending field.
func (r SessionRef) Validate() error {
	if err := CheckAgentGroupID("agent_group_id", r.AgentGroupID); err != nil {
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

// The files a host daemon keeps in its data root (NanoClaw's
// data/v2-sessions), beside the agent group folders. An agent group id is
// a folder name in that root, so none of these may be one
// (CheckAgentGroupID); the host writes them under these names only.
const (
	// HostSocketFile is the router's event endpoint (a Unix socket).
	HostSocketFile = "host.sock"
	// HostStatusFile is what a running host reports (its pid, the sessions
	// it backed off or quarantined).
	HostStatusFile = ".sessiondb-host.json"
	// HostLockFile is locked by the one host serving the root.
	HostLockFile = ".sessiondb-host.lock"
	// HostTokenFile holds the token of a host's TCP event endpoint.
	HostTokenFile = ".sessiondb-host.token"
)

// HostFiles lists the names above: every name a host writes in its data
// root.
func HostFiles() []string {
	return []string{HostSocketFile, HostStatusFile, HostLockFile, HostTokenFile}
}

// ReservedInDataRoot reports whether name is the name of a file the host
// keeps in its data root (HostFiles), ignoring letter case as a
// case-insensitive file system does. The temporary names those files are
// written through need no reserving: they are made with O_EXCL under a
// random name, so they never take a folder's place.
func ReservedInDataRoot(name string) bool {
	for _, f := range HostFiles() {
		if strings.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// CheckAgentGroupID checks an agent group id: a safe name
// (CheckSafeName) that is not reserved in the data root
// (ReservedInDataRoot), since the mailbox keeps the group's sessions in a
// folder of that name beside the host's own files. The error has code
// invalid and names field.
func CheckAgentGroupID(field, id string) error {
	if err := CheckSafeName(field, id); err != nil {
		return err
	}
	if ReservedInDataRoot(id) {
		return Errorf(EINVALID, "%s %q is reserved: the host daemon keeps a file of that name in the data root, beside the agent group folders (reserved: %s)",
			field, id, strings.Join(HostFiles(), ", "))
	}
	return nil
}
