package sessiondb

import "context"

// MessageWaiter is implemented by history stores that can tell a waiter of
// new messages as they commit, without polling: the PostgreSQL backend
// through LISTEN/NOTIFY, and any backend that learns of its own commits
// (the SQLite one can, from its writer and the file's changes). Faces such
// as a live tail ask for it with a type assertion and poll when a store
// lacks it.
type MessageWaiter interface {
	// WaitForMessages returns as soon as the session holds a message with
	// an id above afterID, with the newest such id; at once if it already
	// does. It honours ctx (returning its error, code busy) and works for
	// appends made by other processes too. A session that does not exist
	// yet is waited for like any other.
	WaitForMessages(ctx context.Context, sessionID string, afterID int64) (int64, error)
}
