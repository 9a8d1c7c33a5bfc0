package mailbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
)

// File and folder names inside a session folder (NanoClaw's, fixed).
const (
	InboundFile   = "inbound.db"
	OutboundFile  = "outbound.db"
	HeartbeatFile = ".heartbeat"
	InboxDirName  = "inbox"
	OutboxDirName = "outbox"
)

// MaxNameLen is the longest safe name in bytes (a common file system limit
// for one path segment).
const MaxNameLen = 255

// SessionRef names one session folder: <Root>/<AgentGroupID>/<SessionID>.
type SessionRef struct {
	AgentGroupID string `json:"agent_group_id"`
	SessionID    string `json:"session_id"`
}

// String returns "<agent group>/<session>".
func (r SessionRef) String() string { return r.AgentGroupID + "/" + r.SessionID }

// Validate checks both ids with ValidateName; the error (code invalid)
// names the offending field.
func (r SessionRef) Validate() error {
	if err := ValidateName("agent_group_id", r.AgentGroupID); err != nil {
		return err
	}
	return ValidateName("session_id", r.SessionID)
}

// ValidateName checks that name is safe to use as one path segment: not
// empty, at most MaxNameLen bytes, valid UTF-8, not "." or "..", and free of
// '/', '\\', NUL and other control characters. ':' is allowed (NanoClaw
// message ids contain it). The error has code invalid and names field.
func ValidateName(field, name string) error {
	bad := func(why string) error {
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %q is not a safe name: %s", field, truncate(name, 64), why)
	}
	switch {
	case name == "":
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is empty", field)
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Layout maps session refs to paths under Root, the folder NanoClaw calls
// data/v2-sessions. Every method validates the ids before building a path.
type Layout struct {
	Root string
}

// SessionDir returns <Root>/<agent group>/<session>.
func (l Layout) SessionDir(ref SessionRef) (string, error) {
	if l.Root == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "mailbox layout root is empty")
	}
	if err := ref.Validate(); err != nil {
		return "", err
	}
	return filepath.Join(l.Root, ref.AgentGroupID, ref.SessionID), nil
}

func (l Layout) file(ref SessionRef, name string) (string, error) {
	dir, err := l.SessionDir(ref)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// InboundPath returns the session's inbound.db.
func (l Layout) InboundPath(ref SessionRef) (string, error) { return l.file(ref, InboundFile) }

// OutboundPath returns the session's outbound.db.
func (l Layout) OutboundPath(ref SessionRef) (string, error) { return l.file(ref, OutboundFile) }

// HeartbeatPath returns the session's .heartbeat file.
func (l Layout) HeartbeatPath(ref SessionRef) (string, error) { return l.file(ref, HeartbeatFile) }

// InboxDir returns the session's inbox/ folder (inbound attachments).
func (l Layout) InboxDir(ref SessionRef) (string, error) { return l.file(ref, InboxDirName) }

// OutboxDir returns the session's outbox/ folder (attachments the agent made).
func (l Layout) OutboxDir(ref SessionRef) (string, error) { return l.file(ref, OutboxDirName) }

// modes are the permissions for folders and files of a session: private to
// the owner, or shared with one group when the container runs as another
// uid. Never world access.
type modes struct {
	dir, file fs.FileMode
	gid       int // -1: leave the group alone
}

func newModes(sharedGID int) modes {
	if sharedGID > 0 {
		return modes{dir: 0o770, file: 0o660, gid: sharedGID}
	}
	return modes{dir: 0o700, file: 0o600, gid: -1}
}

// hasPrefixDir reports whether path is dir or inside it (both cleaned).
func hasPrefixDir(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
