package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The recent index keeps search on a large store as fast as on a small one.
//
// To rank a query by bm25, FTS5 counts the query's every match in the whole
// index (the weight of each phrase), so on Hermes' messages_fts a search
// costs time in proportion to the store: at ten million messages a common
// word's count alone takes 30 to 130 ms, a phrase of two common words about
// a second, and a prefix query merges the lists of every word it covers
// (docs/benchmarks.md). No bound on the ranked rows changes that count.
//
// So a store of more than searchWindowMessages messages keeps a second
// FTS5 index of its newest messages only: sessiondb_fts_recent, over the
// ids from the low to the high mark in state_meta, the newest
// searchRecentMessages ids (the window) once it is up to date. A search
// ranks the matches among them by bm25 against that index's own counts,
// and only then, for what it still needs, lists the older matches of
// messages_fts, newest first (see recentSearch). Its counts, merges and
// phrase checks are bounded by the window, whatever the size of the store.
//
// Appends do not write it: a store that may write the file (a writable
// one, or a read-only one with Options.KeepSearchIndex) brings it up to
// date before a search (syncRecent), in transactions of at most recentBatch messages:
// the new messages are added, the oldest beyond the window deleted. The
// table is contentless (it keeps tokens, not text; the text is in
// messages) with contentless_delete, so a message leaves it by its id
// alone, and deletemerge rewrites a segment only once half its rows are
// gone, which keeps the index near its live size at a tenth of the cost of
// the default.
//
// Hermes' own writes never touch it: contentless_delete needs SQLite 3.43
// (and 3.54 to keep bm25's row and token totals right as rows leave; 3.43
// to 3.53 forget to lower them, so a sliding window's ranking would drift),
// and a trigger writing into it would make every delete of a Hermes on an
// older SQLite fail. Instead plain triggers on messages note, in
// sessiondb_fts_recent_changed, the ids inside the window that anyone
// inserts (an import keeping its ids), deletes or changes, and the next
// sync (or our own delete, in its transaction) takes them out of the index
// and adds back what still exists. The index is used only while it is
// current: its marks at the newest message and at the window's first id,
// nothing noted. A read-only store that finds it behind ranks as it did
// without one.

const (
	recentTable    = "sessiondb_fts_recent"
	recentChanged  = "sessiondb_fts_recent_changed"
	metaRecentLow  = "sessiondb.recent.low"
	metaRecentHigh = "sessiondb.recent.high"
	// The triggers that note changes to messages in recentChanged.
	recentInsertTrigger = "sessiondb_fts_recent_insert"
	recentDeleteTrigger = "sessiondb_fts_recent_delete"
	recentUpdateTrigger = "sessiondb_fts_recent_update"
	// recentBatch bounds the messages one sync transaction adds or
	// deletes (Store.recentBatch, which tests make smaller): about 30 to
	// 60 ms of the writer on this project's machine.
	recentBatch = 2000
)

// recentLowSQL and recentHighSQL read the window's low and high marks.
const (
	recentLowSQL  = "(SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '" + metaRecentLow + "')"
	recentHighSQL = "(SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '" + metaRecentHigh + "')"
)

// recentInWindow is true for a message id (new.id, old.id) inside the
// window. The high mark comes first: an append is above it, so the
// condition costs an append one lookup.
func recentInWindow(id string) string {
	return id + " <= " + recentHighSQL + " AND " + id + " >= " + recentLowSQL
}

// recentSchema creates the index, its change log and the triggers that
// fill the log. The triggers are plain SQL that every SQLite Hermes runs
// knows.
func recentSchema() string {
	return `CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT);

CREATE VIRTUAL TABLE IF NOT EXISTS ` + recentTable + ` USING fts5(content, content='', contentless_delete=1);

CREATE TABLE IF NOT EXISTS ` + recentChanged + ` (id INTEGER PRIMARY KEY);

CREATE TRIGGER IF NOT EXISTS ` + recentInsertTrigger + ` AFTER INSERT ON messages
WHEN ` + recentInWindow("new.id") + `
BEGIN
    INSERT OR IGNORE INTO ` + recentChanged + `(id) VALUES (new.id);
END;

CREATE TRIGGER IF NOT EXISTS ` + recentDeleteTrigger + ` AFTER DELETE ON messages
WHEN ` + recentInWindow("old.id") + `
BEGIN
    INSERT OR IGNORE INTO ` + recentChanged + `(id) VALUES (old.id);
END;

CREATE TRIGGER IF NOT EXISTS ` + recentUpdateTrigger + ` AFTER UPDATE OF id, content ON messages BEGIN
    INSERT OR IGNORE INTO ` + recentChanged + `(id) SELECT old.id WHERE ` + recentInWindow("old.id") + `;
    INSERT OR IGNORE INTO ` + recentChanged + `(id) SELECT new.id WHERE ` + recentInWindow("new.id") + `;
END;
`
}

// recentTables and recentTriggers are the parts recentSchema makes (and
// state_meta, which it makes when a file lacks it, holds the marks).
func recentTables() []string { return []string{recentTable, recentChanged, "state_meta"} }

func recentTriggers() []string {
	return []string{recentInsertTrigger, recentDeleteTrigger, recentUpdateTrigger}
}

// dropRecentSchema removes the index, its log and its triggers together
// (not state_meta, whose other keys are not ours): a trigger left without
// its log would fail every write to messages.
const dropRecentSchema = "DROP TRIGGER IF EXISTS " + recentInsertTrigger + ";\nDROP TRIGGER IF EXISTS " + recentDeleteTrigger +
	";\nDROP TRIGGER IF EXISTS " + recentUpdateTrigger + ";\nDROP TABLE IF EXISTS " + recentTable + ";\nDROP TABLE IF EXISTS " + recentChanged + ";\n"

// nameList is names as an SQL list of string literals (names of our own,
// no quotes in them).
func nameList(names []string) string { return "'" + strings.Join(names, "', '") + "'" }

// hasTable reports whether the file read through q has a table named name.
func hasTable(ctx context.Context, q sqlitedb.Querier, name string) (bool, error) {
	var has bool
	err := sqlitedb.Each(ctx, q, "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", []any{name}, func(r sqlitedb.Row) error {
		return r.Scan(&has)
	})
	return has, err
}

// recentSupported reports whether this store may keep the recent index: a
// v6 file (never an older one, which a read-only open leaves unmigrated,
// nor a newer Hermes' one) whose
// messages_fts uses FTS5's default tokenizer, as the recent index does, on
// an SQLite whose contentless_delete keeps its totals (3.54).
func (si *schemaInfo) recentSupported(sqliteVersion string) bool {
	return si.hasVersion && si.version == SchemaVersion6 && si.hasFTS() && si.ftsColumn == "content" && ftsTokenizer(si.ftsSQL) == fts.Unicode61 &&
		versionAtLeast(sqliteVersion, 3, 54)
}

// recentState is the window as state_meta and the change log give it.
type recentState struct {
	exists  bool  // the table and both marks are there
	low     int64 // the lowest id indexed
	high    int64 // the highest id indexed
	changed bool  // ids wait in the change log
	newest  int64 // max(id) of messages
	window  int64 // how many of the newest ids the index is to hold
}

// target is the low mark of the complete window.
func (r recentState) target() int64 { return max(1, r.newest-r.window+1) }

// current reports whether a search may use the index as it is: it holds
// exactly the window, from the newest message down, and nothing waits in
// its change log.
func (r recentState) current() bool {
	return r.exists && !r.changed && r.high == r.newest && r.low == r.target()
}

// readRecentState reads the window through q (a reader, a snapshot's
// transaction or the write transaction). A v6 file Hermes wrote may have
// no state_meta, whose marks are then read as missing.
func readRecentState(ctx context.Context, q sqlitedb.Querier, window int64) (recentState, error) {
	st := recentState{window: window}
	var parts int
	err := sqlitedb.Each(ctx, q, `SELECT coalesce((SELECT max(id) FROM messages), 0),
    (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (`+nameList(recentTables())+`)
        AND (name != '`+recentTable+`' OR sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%')
        OR type = 'trigger' AND name IN (`+nameList(recentTriggers())+`))`, nil, func(r sqlitedb.Row) error {
		return r.Scan(&st.newest, &parts)
	})
	if err != nil || parts != len(recentTables())+len(recentTriggers()) {
		// Missing, or some part gone or not what it should be (the
		// index not an FTS5 table): a trigger dropped would let deletes
		// through unseen, so the whole is made again.
		return st, err
	}
	err = sqlitedb.Each(ctx, q, "SELECT "+recentLowSQL+", "+recentHighSQL+", EXISTS (SELECT 1 FROM "+recentChanged+")", nil, func(r sqlitedb.Row) error {
		var low, high sql.NullInt64
		if err := r.Scan(&low, &high, &st.changed); err != nil {
			return err
		}
		st.low, st.high, st.exists = low.Int64, high.Int64, low.Valid && high.Valid
		return nil
	})
	return st, err
}

// setRecentMarks writes the window's marks.
func setRecentMarks(tx *sqlitedb.Tx, low, high int64) error {
	for k, v := range map[string]int64{metaRecentLow: low, metaRecentHigh: high} {
		if _, err := tx.Exec("INSERT INTO state_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", k, strconv.FormatInt(v, 10)); err != nil {
			return err
		}
	}
	return nil
}

// purgeRecent takes up to limit noted ids (every one when limit is 0),
// lowest first, out of the index and adds back those that are still
// messages inside the window, with their text as it is now. It reports
// whether noted ids remain.
func purgeRecent(tx *sqlitedb.Tx, limit int64) (bool, error) {
	noted := "SELECT id FROM " + recentChanged
	if limit > 0 {
		noted += " ORDER BY id LIMIT " + strconv.FormatInt(limit, 10)
	}
	if _, err := tx.Exec("DELETE FROM " + recentTable + " WHERE rowid IN (" + noted + ")"); err != nil {
		return false, err
	}
	if _, err := tx.Exec("INSERT INTO " + recentTable + "(rowid, content) SELECT m.id, m.content FROM messages m WHERE m.id IN (" + noted + ") AND " + recentInWindow("m.id")); err != nil {
		return false, err
	}
	if _, err := tx.Exec("DELETE FROM " + recentChanged + " WHERE id IN (" + noted + ")"); err != nil {
		return false, err
	}
	var more bool
	err := tx.QueryRow("SELECT EXISTS (SELECT 1 FROM " + recentChanged + ")").Scan(&more)
	return more, err
}

// purgeNoted purges the recent index, when the file has one, of what the
// transaction's own deletes noted, so that none of their words stays
// behind in it.
func purgeNoted(tx *sqlitedb.Tx) error {
	has, err := hasTable(tx.Context(), tx, recentChanged)
	if err != nil || !has {
		return err
	}
	_, err = purgeRecent(tx, 0)
	return err
}

// recentStep does one transaction's worth of bringing the index up to
// date, at most batch messages added or deleted, and reports whether
// nothing is left to do after it.
func recentStep(tx *sqlitedb.Tx, window, batch int64) (bool, error) {
	ctx := tx.Context()
	st, err := readRecentState(ctx, tx, window)
	if err != nil {
		return false, err
	}
	if !st.exists {
		// Whatever part is there is dropped and made again, the window
		// empty, just above the newest message, so the steps below fill
		// it from the top.
		if err := tx.ExecScript(dropRecentSchema + recentSchema()); err != nil {
			return false, err
		}
		if _, err := tx.Exec("INSERT INTO " + recentTable + "(" + recentTable + ", rank) VALUES('deletemerge', 50)"); err != nil {
			return false, err
		}
		return false, setRecentMarks(tx, st.newest+1, st.newest)
	}
	if st.newest-st.high > window || st.low > st.high+1 {
		// Far behind (another program wrote a window's worth since), or
		// marks that make no sense: start again from the top rather
		// than index what would only be deleted.
		if err := tx.ExecScript("INSERT INTO " + recentTable + "(" + recentTable + ") VALUES('delete-all');\nDELETE FROM " + recentChanged + ";"); err != nil {
			return false, err
		}
		return false, setRecentMarks(tx, st.newest+1, st.newest)
	}
	if st.changed {
		more, err := purgeRecent(tx, batch)
		if err != nil || more {
			return false, err
		}
	}
	add := func(from, to int64) error { // ids from..to, inclusive
		_, err := tx.Exec("INSERT INTO "+recentTable+"(rowid, content) SELECT id, content FROM messages WHERE id >= ? AND id <= ?", from, to)
		return err
	}
	target := st.target()
	switch {
	case st.high > st.newest:
		// The newest messages were deleted (and purged above): the
		// window ends at the newest that is left.
		st.high = st.newest
	case st.high < st.newest:
		to := min(st.newest, st.high+batch)
		if err := add(st.high+1, to); err != nil {
			return false, err
		}
		st.high = to
	case st.low > target:
		from := max(target, st.low-batch)
		if err := add(from, st.low-1); err != nil {
			return false, err
		}
		st.low = from
	case st.low < target:
		to := min(target, st.low+batch)
		if _, err := tx.Exec("DELETE FROM "+recentTable+" WHERE rowid >= ? AND rowid < ?", st.low, to); err != nil {
			return false, err
		}
		st.low = to
	default:
		return true, nil
	}
	if err := setRecentMarks(tx, st.low, st.high); err != nil {
		return false, err
	}
	st.changed = false
	return st.current(), nil
}
