package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// lastActiveTable holds each session's last activity (sessiondb.
// SortLastActive: the newest message's timestamp, started_at for a session
// without one) with the columns the listings filter on, so a page by last
// activity is a seek of its indexes instead of a MAX over every session's
// messages (docs/benchmarks.md, the growth benchmark).
//
// Appends do not write it. It is exact up to a mark, the highest message
// id it has taken in (state_meta, lastActiveMark), and a listing by last
// activity first catches it up (syncLastActive): the sessions of the
// messages above the mark are recomputed and the mark moved, in one write
// transaction. Keeping it in each append's own transaction, through a
// trigger, cost an append three more pages written (the row and its entry
// in both indexes): about a tenth of an append at synchronous=FULL, for
// Hermes' own appends too (issue 20). What an append cannot cover is kept
// by triggers in the transaction of the write, Hermes' own writes
// included: a message inserted with an id at or below the mark (an import
// keeping ids), a message deleted or moved, a session made, changed or
// deleted. Their bodies use only v6 columns and statements every SQLite
// Hermes runs knows (no UPSERT), and never conflict (a row is deleted
// before it is inserted, so even an outer INSERT OR ABORT, whose policy
// SQLite hands down to trigger bodies, cannot make them fail). A v6 reader
// does not know the table and needs not.
const lastActiveTable = "sessiondb_last_active"

// lastActiveMark is the state_meta key of the highest message id the
// table has taken in. No row means none: a catch-up then recomputes every
// session that has a message.
const lastActiveMark = "sessiondb_last_active_high"

// lastActiveMarkValue is the mark as an SQL expression (-1 when unset).
const lastActiveMarkValue = "COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '" + lastActiveMark + "'), -1)"

// lastActiveLegacy are the names of parts an earlier sessiondb made and
// this one no longer does: the trigger that kept the table in every
// append's transaction. A file that has them is made again whole.
var lastActiveLegacy = []string{"sessiondb_last_active_message_insert"}

// lastActiveOf is the last activity of the session whose id is the SQL
// expression id: the definition the listing computes without the table
// (sortKey), read through the (session_id, timestamp) index in one seek.
func lastActiveOf(id, startedAt string) string {
	return "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = " + id + "), " + startedAt + ")"
}

// lastActiveRecompute sets the last activity of the table's rows that
// where selects, from messages and the session's started_at; target is
// the table as the UPDATE names it (lastActiveTable, or lastActiveUpdate
// outside a trigger).
func lastActiveRecompute(target, where string) string {
	return "UPDATE " + target + " SET last_active = " +
		lastActiveOf(lastActiveTable+".session_id", "(SELECT s.started_at FROM sessions s WHERE s.id = "+lastActiveTable+".session_id)") +
		" WHERE " + where + ";"
}

// lastActiveInsert (re)writes the row of the session new.
const lastActiveInsert = "DELETE FROM " + lastActiveTable + " WHERE session_id = new.id;\n    INSERT INTO " + lastActiveTable +
	" (session_id, parent_session_id, source, last_active) VALUES (new.id, new.parent_session_id, new.source, "

// lastActiveDirty holds the sessions a write may have moved a compression
// chain's key for (see chainLastActive), where a trigger cannot walk the
// chain: a session made with a parent, ended, re-parented, re-marked or
// deleted, or one whose messages a trigger recomputed. The catch-up
// recomputes the chains through them and empties it.
const lastActiveDirty = "sessiondb_last_active_dirty"

// lastActiveMarkDirty records the session whose id is the SQL expression
// id (none when NULL) in lastActiveDirty. It never conflicts (the row is
// added only when missing), so an outer INSERT OR ABORT cannot make it
// fail, and it uses no UPSERT, which an older SQLite lacks.
func lastActiveMarkDirty(id string) string {
	return lastActiveAddDirty(id, "", id+" IS NOT NULL")
}

// lastActiveAddDirty inserts into lastActiveDirty the id sel selects
// (from from, when not "") where cond holds and it is not there yet.
func lastActiveAddDirty(sel, from, cond string) string {
	if from != "" {
		from = " FROM " + from
	}
	return "INSERT INTO " + lastActiveDirty + " (session_id) SELECT " + sel + from + " WHERE " + cond +
		" AND NOT EXISTS (SELECT 1 FROM " + lastActiveDirty + " WHERE session_id = " + sel + ");"
}

// lastActiveMarkChained is lastActiveMarkDirty for a session whose
// messages changed, where that can move a chain's key: when it has a
// parent or ended by compression. The row of any other session is exact
// once its trigger recomputed it.
func lastActiveMarkChained(id string) string {
	return lastActiveAddDirty("x.id", "sessions x", "x.id = "+id+" AND (x.parent_session_id IS NOT NULL OR x.end_reason = 'compression')")
}

// chainLastActive is the key by last activity (sessiondb.SortLastActive)
// of the session of alias a: its own last activity, or, for a session
// ended by compression, the newest over its chain, every continuation on
// from it, as Hermes' order_by_last_active walks (its
// effective_last_active): not only the tip's path, and without asking
// that a continuation start after its parent ended. UNION stops at a
// cycle of parents.
func chainLastActive(si *schemaInfo, a string) string {
	// CROSS JOIN keeps the walk outside: without statistics SQLite
	// scanned every session for the children of each hop.
	return "CASE WHEN " + a + ".end_reason = 'compression' THEN (WITH RECURSIVE down(id) AS (SELECT " + a + ".id" +
		" UNION SELECT child.id FROM down CROSS JOIN sessions parent ON parent.id = down.id AND parent.end_reason = 'compression'" +
		" CROSS JOIN sessions child ON child.parent_session_id = parent.id WHERE " + continuationSQL(si, "child") + ")" +
		" SELECT MAX(" + lastActiveOf("down.id", "(SELECT ds.started_at FROM sessions ds WHERE ds.id = down.id)") + ") FROM down)" +
		" ELSE " + lastActiveOf(a+".id", a+".started_at") + " END"
}

// lastActiveChains sets the key of every chain a write since the last
// catch-up may have moved: from each dirty session and each session with a
// parent, or ended by compression, that has messages above the mark, up
// through the parents it continues, each session on the way recomputed
// (chainLastActive); then it empties lastActiveDirty. It runs before the
// mark moves.
func lastActiveChains(si *schemaInfo) string {
	return `WITH RECURSIVE up(id) AS (
    SELECT session_id FROM ` + lastActiveDirty + `
    UNION SELECT x.id FROM sessions x WHERE x.id IN (` + lastActiveNewSessions + `)
        AND (x.parent_session_id IS NOT NULL OR x.end_reason = 'compression')
    UNION SELECT p.id FROM up CROSS JOIN sessions c ON c.id = up.id CROSS JOIN sessions p ON p.id = c.parent_session_id
        WHERE p.end_reason = 'compression' AND ` + continuationSQL(si, "c") + `
)
UPDATE ` + lastActiveUpdate + ` SET last_active = (SELECT ` + chainLastActive(si, "x") + ` FROM sessions x WHERE x.id = ` + lastActiveTable + `.session_id)
WHERE session_id IN (SELECT id FROM up);
DELETE FROM ` + lastActiveDirty + `;`
}

// lastActiveObjects are the table, its indexes and its triggers, by name,
// with their DDL. The indexes follow the listings' keyset order (last
// activity, then id, newest first) for top-level sessions of every source
// or of one, as sessiondb_sessions_roots and sessiondb_sessions_source_roots
// do for started_at.
var lastActiveObjects = []struct{ name, ddl string }{
	{lastActiveTable, `CREATE TABLE IF NOT EXISTS ` + lastActiveTable + ` (
    session_id TEXT PRIMARY KEY,
    parent_session_id TEXT,
    source TEXT,
    last_active REAL
)`},
	{"sessiondb_last_active_roots", "CREATE INDEX IF NOT EXISTS sessiondb_last_active_roots ON " + lastActiveTable + "(parent_session_id, last_active DESC, session_id DESC)"},
	{"sessiondb_last_active_source_roots", "CREATE INDEX IF NOT EXISTS sessiondb_last_active_source_roots ON " + lastActiveTable + "(source, parent_session_id, last_active DESC, session_id DESC)"},
	{lastActiveDirty, "CREATE TABLE IF NOT EXISTS " + lastActiveDirty + " (session_id TEXT PRIMARY KEY)"},
	{"state_meta", "CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT)"},
	{"sessiondb_last_active_message_below", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_message_below AFTER INSERT ON messages
WHEN new.id <= ` + lastActiveMarkValue + `
BEGIN
    ` + lastActiveRecompute(lastActiveTable, "session_id = new.session_id") + `
    ` + lastActiveMarkChained("new.session_id") + `
END`},
	{"sessiondb_last_active_message_delete", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_message_delete AFTER DELETE ON messages BEGIN
    ` + lastActiveRecompute(lastActiveTable, "session_id = old.session_id") + `
    ` + lastActiveMarkChained("old.session_id") + `
END`},
	{"sessiondb_last_active_message_update", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_message_update AFTER UPDATE OF session_id, timestamp ON messages BEGIN
    ` + lastActiveRecompute(lastActiveTable, "session_id IN (old.session_id, new.session_id)") + `
    ` + lastActiveMarkChained("old.session_id") + `
    ` + lastActiveMarkChained("new.session_id") + `
END`},
	{"sessiondb_last_active_session_insert", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_session_insert AFTER INSERT ON sessions BEGIN
    ` + lastActiveInsert + lastActiveOf("new.id", "new.started_at") + `);
    ` + lastActiveMarkDirty("new.parent_session_id") + `
END`},
	{"sessiondb_last_active_session_update", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_session_update AFTER UPDATE OF id, parent_session_id, source, started_at ON sessions BEGIN
    DELETE FROM ` + lastActiveTable + ` WHERE session_id = old.id;
    ` + lastActiveInsert + lastActiveOf("new.id", "new.started_at") + `);
    ` + lastActiveMarkDirty("new.id") + `
    ` + lastActiveMarkDirty("old.parent_session_id") + `
    ` + lastActiveMarkDirty("new.parent_session_id") + `
END`},
	{"sessiondb_last_active_session_chain", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_session_chain AFTER UPDATE OF end_reason, model_config ON sessions BEGIN
    ` + lastActiveMarkDirty("new.id") + `
    ` + lastActiveMarkDirty("new.parent_session_id") + `
END`},
	{"sessiondb_last_active_session_delete", `CREATE TRIGGER IF NOT EXISTS sessiondb_last_active_session_delete AFTER DELETE ON sessions BEGIN
    DELETE FROM ` + lastActiveTable + ` WHERE session_id = old.id;
    ` + lastActiveMarkDirty("old.parent_session_id") + `
END`},
}

// lastActiveBackfill fills the new table from every session, each session
// ended by compression with its chain's key, and sets the mark to the
// highest message id.
func lastActiveBackfill(si *schemaInfo) string {
	return "INSERT INTO " + lastActiveTable + " (session_id, parent_session_id, source, last_active) SELECT s.id, s.parent_session_id, s.source, " +
		lastActiveOf("s.id", "s.started_at") + " FROM sessions s;\n" +
		"UPDATE " + lastActiveTable + " SET last_active = (SELECT " + chainLastActive(si, "x") + " FROM sessions x WHERE x.id = " + lastActiveTable + ".session_id)" +
		" WHERE session_id IN (SELECT id FROM sessions WHERE end_reason = 'compression');\n" + lastActiveSetMark
}

// lastActiveSetMark moves the mark to the highest message id (-1 when there
// is none). Messages are never numbered below it again but by an insert
// with an id, which the trigger sessiondb_last_active_message_below covers.
const lastActiveSetMark = "INSERT OR REPLACE INTO state_meta (key, value) VALUES ('" + lastActiveMark + "', (SELECT COALESCE(MAX(id), -1) FROM messages))"

// lastActiveBehind answers whether messages were added above the mark, or
// a write left a chain to recompute.
const lastActiveBehind = "SELECT (SELECT COALESCE(MAX(id), -1) FROM messages) > " + lastActiveMarkValue +
	" OR EXISTS (SELECT 1 FROM " + lastActiveDirty + ")"

// lastActiveCatchUp recomputes the sessions of the messages above the mark,
// then moves the mark: the table is then exact for every message the
// transaction sees.
func lastActiveCatchUp(si *schemaInfo) string {
	return lastActiveRecompute(lastActiveUpdate, "session_id IN ("+lastActiveNewSessions+")") + "\n" +
		lastActiveChains(si) + "\n" + lastActiveSetMark
}

// lastActiveUpdate is the table as the catch-up's updates name it: through
// its primary key, which they look up a few rows in. Without statistics,
// or with a list of unknown length, SQLite scanned every row (a trigger
// may not say INDEXED BY, so only the catch-up does).
const lastActiveUpdate = lastActiveTable + " INDEXED BY sqlite_autoindex_" + lastActiveTable + "_1"

// lastActiveNewSessions selects the sessions of the messages above the
// mark, read by rowid from the mark on. NOT INDEXED: with DISTINCT, or
// where the planner judged the range wide, SQLite walked the session index
// of every message instead (a listing by last activity after one append
// took 0.5 s at ten million messages, 23 s with a cold cache).
const lastActiveNewSessions = "SELECT nm.session_id FROM messages nm NOT INDEXED WHERE nm.id > " + lastActiveMarkValue

// wantsLastActive reports whether the file's last activity is the one the
// table keeps: every message counts. A newer Hermes' file (whose rewound
// messages do not count, and which we never change) or a file with its
// visibility columns keeps the computed query.
func (si *schemaInfo) wantsLastActive() bool {
	return !si.newer() && !si.msgCols["active"]
}

// hasLastActive reports whether the file has the whole table: the table,
// its indexes and every trigger that keeps it.
func (si *schemaInfo) hasLastActive() bool {
	for _, name := range lastActiveLegacy {
		if si.triggers[name] {
			return false
		}
	}
	for _, o := range lastActiveObjects {
		if !si.tables[o.name] && !si.indexes[o.name] && !si.triggers[o.name] {
			return false
		}
	}
	return true
}

// usesLastActive reports whether listings by last activity may read the
// table.
func (si *schemaInfo) usesLastActive() bool { return si.wantsLastActive() && si.hasLastActive() }

// addLastActive creates and fills the table in tx when the file wants it
// and lacks any part of it; si is the schema read inside tx, so of two
// processes opening the file at once the second finds it made. A partial
// table (a trigger someone dropped) is made again whole, since its rows
// may be stale.
func addLastActive(tx txRunner, si *schemaInfo) error {
	if !si.wantsLastActive() || si.hasLastActive() {
		return nil
	}
	var drop []string
	for _, name := range lastActiveLegacy {
		drop = append(drop, "DROP TRIGGER IF EXISTS "+name+";")
	}
	for _, o := range lastActiveObjects {
		if strings.HasPrefix(o.ddl, "CREATE TRIGGER") {
			drop = append(drop, "DROP TRIGGER IF EXISTS "+o.name+";")
		}
	}
	drop = append(drop, "DROP TABLE IF EXISTS "+lastActiveTable+";")
	if err := tx.ExecScript(strings.Join(drop, "\n")); err != nil {
		return sqlitedb.Wrap(err, "drop the partial %s", lastActiveTable)
	}
	for _, o := range lastActiveObjects {
		if err := tx.ExecScript(o.ddl); err != nil {
			return sqlitedb.Wrap(err, "create %s", o.name)
		}
	}
	if err := tx.ExecScript(lastActiveBackfill(si)); err != nil {
		return sqlitedb.Wrap(err, "fill %s", lastActiveTable)
	}
	return nil
}

// syncLastActive catches the table up (lastActiveCatchUp) when messages were
// added above its mark, and reports whether it is current: a listing may
// read it only then. A writable store catches up through its writer; a
// read-only one with KeepSearchIndex through a writer of its own where this
// process may write the file (as it keeps the recent search index); any
// other read-only store reports false while the table is behind, and its
// listing computes last activity instead.
func (s *Store) syncLastActive(ctx context.Context) (bool, error) {
	behind, err := s.lastActiveBehind(ctx)
	if err != nil || !behind {
		return !behind, err
	}
	if !s.mayKeepRecent() {
		return false, nil
	}
	const what = "bring the last-activity table up to date"
	w, done, err := s.recentWriter(ctx)
	if err != nil {
		return false, sqlitedb.Wrap(err, "%s: open a writer on %s", what, s.path)
	}
	defer done()
	if err := w.Do(ctx, func(tx *sqlitedb.Tx) error { return tx.ExecScript(s.q.lastActiveCatchUp) }); err != nil {
		return false, s.writeErr(err, what)
	}
	return true, nil
}

// lastActiveBehind reports whether messages were added above the table's
// mark, read through the reader pool.
func (s *Store) lastActiveBehind(ctx context.Context) (bool, error) {
	var behind sql.NullBool
	if err := s.queryRow(ctx, lastActiveBehind).Scan(&behind); err != nil {
		return false, s.readErr(err, "read the last-activity table's mark")
	}
	return behind.Bool, nil
}
