package mailbox

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// File and folder names inside a session folder (NanoClaw's, fixed).
const (
	InboundFile   = "inbound.db"
	OutboundFile  = "outbound.db"
	HeartbeatFile = ".heartbeat"
	InboxDirName  = "inbox"
	OutboxDirName = "outbox"
	// RequeueMarkFile is left by Requeue when it made a delivery pending
	// again: the session's drains, in whichever process, read outbound.db
	// from the start once more (their watermark had passed the row as
	// resolved) and remove it. Host-owned; not part of NanoClaw's layout.
	RequeueMarkFile = ".requeued"
)

// MaxNameLen is the longest safe name in bytes (sessiondb.MaxNameLen).
const MaxNameLen = sessiondb.MaxNameLen

// SessionRef names one session folder: <Root>/<AgentGroupID>/<SessionID>.
// It is the root package's type (the control plane names sessions the
// same way); Validate checks both ids with ValidateName's rules.
type SessionRef = sessiondb.SessionRef

// ValidateName checks that name is safe to use as one path segment, with
// the root package's rules (sessiondb.CheckSafeName): not empty, at most
// MaxNameLen bytes, valid UTF-8, not "." or "..", no path separator, NUL or
// other control character. The error has code invalid and names field.
func ValidateName(field, name string) error { return sessiondb.CheckSafeName(field, name) }

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
