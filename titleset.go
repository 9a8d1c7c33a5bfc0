package sessiondb

// MaxCompressionHops bounds every walk along compression continuations, so
// a cycle in a damaged store cannot loop forever.
const MaxCompressionHops = 100

// TitleTx is a backend's side of SetTitle: the reads and writes of one
// write transaction, over its own SQL. Its errors go back to the backend's
// transaction as they are (the backend classifies them).
type TitleTx interface {
	// TitleHolder returns the session other than id whose title is
	// exactly title, "" when there is none.
	TitleHolder(title, id string) (string, error)
	// CompressionParent returns id's parent when that parent ended in
	// compression no later than id started, "" when id has no such parent.
	CompressionParent(id string) (string, error)
	// ClearTitle removes holder's title.
	ClearTitle(holder string) error
	// PutTitle sets id's title ("" clears it) and reports whether a row
	// was updated; taken is true, with nothing changed, when the store's
	// unique index refused it (a racing writer claimed the title).
	PutTitle(id, title string) (updated, taken bool, err error)
}

// SetTitle is the rule of SetSessionTitle (IMP-15), run inside the
// backend's write transaction with title already sanitized: a title held by
// another session is a conflict, even when id does not exist, unless that
// session is a compression ancestor of id, whose title then moves to id.
// It reports whether a row was updated.
func SetTitle(tx TitleTx, id, title string) (bool, error) {
	if title != "" {
		holder, err := tx.TitleHolder(title, id)
		if err != nil {
			return false, err
		}
		if holder != "" {
			anc, err := isCompressionAncestor(tx, holder, id)
			if err != nil {
				return false, err
			}
			if !anc {
				return false, Errorf(ECONFLICT, "Title '%s' is already in use by session %s", title, holder)
			}
			if err := tx.ClearTitle(holder); err != nil {
				return false, err
			}
		}
	}
	updated, taken, err := tx.PutTitle(id, title)
	if taken {
		return false, Errorf(ECONFLICT, "Title '%s' is already in use", title)
	}
	return updated, err
}

// isCompressionAncestor walks up from id, at most MaxCompressionHops, while
// each parent ended in compression before its child started, and reports
// whether it meets anc.
func isCompressionAncestor(tx TitleTx, anc, id string) (bool, error) {
	cur := id
	for i := 0; i < MaxCompressionHops; i++ {
		parent, err := tx.CompressionParent(cur)
		if err != nil || parent == "" {
			return false, err
		}
		if parent == anc {
			return true, nil
		}
		cur = parent
	}
	return false, nil
}
