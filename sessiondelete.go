package sessiondb

// SessionDeleteTx is a backend's side of DeleteSessionsWhere: statements
// run one at a time in its write transaction.
type SessionDeleteTx interface {
	// Exec runs q (its placeholders the backend's own) with args, the
	// given step of the deletion, and returns how many rows it changed.
	Exec(step DeleteStep, q string, args ...any) (int64, error)
}

// DeleteStep names a step of DeleteSessionsWhere, so a backend can say in
// its errors which one failed.
type DeleteStep int

// The steps of DeleteSessionsWhere, in their order.
const (
	DeleteOrphanChildren DeleteStep = iota
	DeleteMessages
	DeleteSessionRows
)

// DeleteSessionsWhere is the deletion of DeleteSession and PruneSessions:
// it orphans the children of the sessions that cond (a condition on the
// sessions table's own columns, with args) selects, deletes their
// messages, then the sessions, and returns how many sessions it deleted.
// Orphaning first keeps the parent foreign key satisfied whichever of the
// selected sessions reference each other, and leaves the selection as it
// was: cond reads only each row's own columns.
func DeleteSessionsWhere(tx SessionDeleteTx, cond string, args []any) (int64, error) {
	sel := "(SELECT id FROM sessions WHERE " + cond + ")"
	if _, err := tx.Exec(DeleteOrphanChildren, "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN "+sel, args...); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(DeleteMessages, "DELETE FROM messages WHERE session_id IN "+sel, args...); err != nil {
		return 0, err
	}
	return tx.Exec(DeleteSessionRows, "DELETE FROM sessions WHERE "+cond, args...)
}

// PruneCondition is PruneSessions' selection for DeleteSessionsWhere: the
// ended sessions started before cutoff (epoch seconds), of source unless
// it is "". mark(n) is the backend's placeholder of the n-th argument.
func PruneCondition(cutoff float64, source string, mark func(n int) string) (string, []any) {
	cond := "started_at < " + mark(1) + " AND ended_at IS NOT NULL"
	args := []any{cutoff}
	if source != "" {
		cond += " AND source = " + mark(2)
		args = append(args, source)
	}
	return cond, args
}
