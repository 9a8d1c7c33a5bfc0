package sessiondb

// ArchiveLineageSQL is SetSessionArchived's one statement, in SQL that
// SQLite and PostgreSQL both run: Hermes' set_session_archived. It sets
// archived to the second argument on the session named by the first and on
// its compression lineage: its ancestors, each parent of the last as long as
// that parent ended by compression, and its descendants, every child of a
// session of the lineage that ended by compression (a branch or a delegate
// of such a session too, as Hermes' statement has it). An unarchived root
// would otherwise bring its archived continuation back into a listing
// that shows a chain by its root. id is the backend's placeholder of the
// first argument (typed where the backend needs it), flag of the second.
func ArchiveLineageSQL(id, flag string) string {
	return `WITH RECURSIVE
  ancestors(id) AS (
    SELECT ` + id + `
    UNION
    SELECT parent.id FROM ancestors a
    JOIN sessions child ON child.id = a.id
    JOIN sessions parent ON parent.id = child.parent_session_id
    WHERE parent.end_reason = 'compression'
  ),
  descendants(id) AS (
    SELECT ` + id + `
    UNION
    SELECT child.id FROM descendants d
    JOIN sessions parent ON parent.id = d.id
    JOIN sessions child ON child.parent_session_id = parent.id
    WHERE parent.end_reason = 'compression'
  ),
  lineage(id) AS (
    SELECT id FROM ancestors
    UNION
    SELECT id FROM descendants
  )
UPDATE sessions SET archived = ` + flag + ` WHERE id IN (SELECT id FROM lineage)`
}

// ArchivedFlag is the value SetSessionArchived stores: Hermes' 1 or 0.
func ArchivedFlag(archived bool) int64 {
	if archived {
		return 1
	}
	return 0
}
