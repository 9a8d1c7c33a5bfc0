package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SchemaVersion6 is the Hermes state.db schema version this package writes.
const SchemaVersion6 = 6

// schemaTables is section 2's DDL for the plain tables and indexes, verbatim:
// Hermes compares nothing, but people diff sqlite_master against it.
const schemaTables = `CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT
);

CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
`

// schemaTitleIndex is migration step 4, kept apart because duplicate titles
// must be reported before it runs.
const schemaTitleIndex = `CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique
    ON sessions(title) WHERE title IS NOT NULL;`

// schemaFTS is the full-text index and the triggers that keep it in the same
// transaction as its rows (IMP-4).
const schemaFTS = `CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content,
    content=messages,
    content_rowid=id
);

CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
`

// column is one v6 column: its name and the declaration ALTER TABLE adds it
// with. Columns that are NOT NULL without a default cannot be added to an
// existing table; a file missing one is not a state.db we can repair.
type column struct {
	name, decl string
	addable    bool
}

var sessionColumns = []column{
	{"id", "TEXT PRIMARY KEY", false},
	{"source", "TEXT NOT NULL", false},
	{"user_id", "TEXT", true},
	{"model", "TEXT", true},
	{"model_config", "TEXT", true},
	{"system_prompt", "TEXT", true},
	{"parent_session_id", "TEXT", true},
	{"started_at", "REAL NOT NULL", false},
	{"ended_at", "REAL", true},
	{"end_reason", "TEXT", true},
	{"message_count", "INTEGER DEFAULT 0", true},
	{"tool_call_count", "INTEGER DEFAULT 0", true},
	{"input_tokens", "INTEGER DEFAULT 0", true},
	{"output_tokens", "INTEGER DEFAULT 0", true},
	{"cache_read_tokens", "INTEGER DEFAULT 0", true},
	{"cache_write_tokens", "INTEGER DEFAULT 0", true},
	{"reasoning_tokens", "INTEGER DEFAULT 0", true},
	{"billing_provider", "TEXT", true},
	{"billing_base_url", "TEXT", true},
	{"billing_mode", "TEXT", true},
	{"estimated_cost_usd", "REAL", true},
	{"actual_cost_usd", "REAL", true},
	{"cost_status", "TEXT", true},
	{"cost_source", "TEXT", true},
	{"pricing_version", "TEXT", true},
	{"title", "TEXT", true},
}

var messageColumns = []column{
	{"id", "INTEGER PRIMARY KEY AUTOINCREMENT", false},
	{"session_id", "TEXT NOT NULL REFERENCES sessions(id)", false},
	{"role", "TEXT NOT NULL", false},
	{"content", "TEXT", true},
	{"tool_call_id", "TEXT", true},
	{"tool_calls", "TEXT", true},
	{"tool_name", "TEXT", true},
	{"timestamp", "REAL NOT NULL", false},
	{"token_count", "INTEGER", true},
	{"finish_reason", "TEXT", true},
	{"reasoning", "TEXT", true},
	{"reasoning_details", "TEXT", true},
	{"codex_reasoning_items", "TEXT", true},
}

// newerColumn is a column a newer Hermes added (docs/hermes-versions.md
// sections 2 and 3) that our reads return: its name and what a file
// without it reads (the column's default, as Hermes' reconciliation adds
// it). sessiondb never adds them to a file.
type newerColumn struct{ name, def string }

// newerSessionColumns follow sessionColumns in a session read, in the
// order of the Session fields after Title.
var newerSessionColumns = []newerColumn{
	{"api_call_count", "0"}, {"cwd", "NULL"}, {"git_branch", "NULL"}, {"git_repo_root", "NULL"},
	{"archived", "0"}, {"rewind_count", "0"},
	{"session_key", "NULL"}, {"chat_id", "NULL"}, {"chat_type", "NULL"}, {"thread_id", "NULL"},
	{"display_name", "NULL"}, {"origin_json", "NULL"}, {"expiry_finalized", "0"},
	{"handoff_state", "NULL"}, {"handoff_platform", "NULL"}, {"handoff_error", "NULL"},
	{"compression_failure_cooldown_until", "NULL"}, {"compression_failure_error", "NULL"}, {"compression_fallback_streak", "0"},
}

// newerMessageColumns follow messageColumns in a message read, in the
// order of the Message fields after CodexReasoningItems.
var newerMessageColumns = []newerColumn{
	{"reasoning_content", "NULL"}, {"codex_message_items", "NULL"}, {"platform_message_id", "NULL"},
	{"observed", "0"}, {"effect_disposition", "NULL"}, {"active", "1"}, {"compacted", "0"},
}

// v6Indexes are the index names section 2 creates, the title index included.
var v6Indexes = []string{"idx_sessions_source", "idx_sessions_parent", "idx_sessions_started", "idx_messages_session", "idx_sessions_title_unique"}

// readIndexes are the indexes of ours that keep reads bounded as a store
// grows (docs/benchmarks.md, the growth benchmark): without them the last
// page of a long session, a search hit's neighbours and a listing's preview
// read the whole session, and a listing's page reads every session row
// before it. They are plain column indexes, which every SQLite Hermes runs
// can read and keeps up to date on its own writes; a v6 reader does not
// know them and needs not. The first is newer Hermes' own index, under its
// name and definition, so its CREATE INDEX IF NOT EXISTS finds it made;
// ours are prefixed sessiondb_, a prefix Hermes does not use. Newer Hermes
// reconciles its schema by table columns only, so an extra index never
// trips it. Files of a newer Hermes are not given them (we never change
// such a file's structure).
var readIndexes = []struct{ name, ddl string }{
	{"idx_messages_session_id", "CREATE INDEX IF NOT EXISTS idx_messages_session_id ON messages(session_id, id)"},
	// The listings' pages: top-level sessions newest first, all or of
	// one source, in keyset order (started_at, id).
	{"sessiondb_sessions_roots", "CREATE INDEX IF NOT EXISTS sessiondb_sessions_roots ON sessions(parent_session_id, started_at DESC, id DESC)"},
	{"sessiondb_sessions_source_roots", "CREATE INDEX IF NOT EXISTS sessiondb_sessions_source_roots ON sessions(source, parent_session_id, started_at DESC, id DESC)"},
	// The /branch children a listing shows beside the roots (listArms):
	// those that carry the marker, and the parents ended "branched" whose
	// later children are branches; and the orphaned delegates it leaves
	// out of the roots. Partial, so each holds only the few rows it
	// serves, and a listing never walks the other children.
	{"sessiondb_sessions_branch_marked", "CREATE INDEX IF NOT EXISTS sessiondb_sessions_branch_marked ON sessions(started_at DESC, id DESC) WHERE parent_session_id IS NOT NULL AND " + strings.ReplaceAll(branchMarkedHint, "s.", "")},
	{"sessiondb_sessions_branched", "CREATE INDEX IF NOT EXISTS sessiondb_sessions_branched ON sessions(id) WHERE " + strings.ReplaceAll(branchedParentHint, "bp.", "")},
	// The roots a listing leaves out: delegates whose parent is gone.
	{"sessiondb_sessions_root_delegates", "CREATE INDEX IF NOT EXISTS sessiondb_sessions_root_delegates ON sessions(id) WHERE " + strings.ReplaceAll(rootDelegateHint, "rd.", "")},
}

// needsReadIndexes reports whether a writable open should add readIndexes.
func (si *schemaInfo) needsReadIndexes() bool {
	if si.newer() || !si.tables["sessions"] || !si.tables["messages"] {
		return false
	}
	for _, ix := range readIndexes {
		if !si.current[ix.name] {
			return true
		}
	}
	return si.wantsLastActive() && !si.hasLastActive()
}

// readIndexStored is each read index's DDL as sqlite_master holds it (the
// statement without IF NOT EXISTS), which inspect compares with the
// file's: an index of ours made by an older sessiondb under another
// definition is not current, since its partial condition may leave out
// rows a query naming the index needs.
var readIndexStored = func() map[string]string {
	m := make(map[string]string, len(readIndexes))
	for _, ix := range readIndexes {
		m[ix.name] = strings.Replace(ix.ddl, "CREATE INDEX IF NOT EXISTS ", "CREATE INDEX ", 1)
	}
	return m
}()

// addReadIndexes creates the missing readIndexes and the last-activity
// table inside tx. It decides from the schema read inside tx, not the one
// the caller read before taking the lock: a newer Hermes may have upgraded
// the file in between, and such a file is never given them. The indexes it
// creates change nothing addLastActive reads, so one inspection serves both.
func addReadIndexes(tx txRunner) error {
	si, err := inspect(tx.Context(), tx)
	if err != nil {
		return sqlitedb.Wrap(err, "inspect schema")
	}
	if !si.needsReadIndexes() {
		return nil
	}
	for _, ix := range readIndexes {
		if si.indexes[ix.name] && !si.current[ix.name] {
			// Made by an older sessiondb under another definition.
			if err := tx.ExecScript("DROP INDEX " + ix.name); err != nil {
				return sqlitedb.Wrap(err, "replace index %s", ix.name)
			}
		}
		if err := tx.ExecScript(ix.ddl); err != nil {
			return sqlitedb.Wrap(err, "create index %s", ix.name)
		}
	}
	return addLastActive(tx, si)
}

// schemaInfo is what Open learned about the file: which tables and columns
// exist. Queries are built from it (IMP-7), so an older file opened
// read-only or a newer Hermes file never meets "no such column".
type schemaInfo struct {
	version    int  // 0 when there is no version row
	hasVersion bool // a version row exists
	tables     map[string]bool
	indexes    map[string]bool
	current    map[string]bool // the read indexes defined as readIndexes has them now
	triggers   map[string]bool
	sessCols   map[string]bool
	msgCols    map[string]bool
	msgOrder   []string          // messages columns in table order
	colTypes   map[string]string // "table.column" → declared type, upper case
	// usageCols are the columns of a newer Hermes' session_model_usage
	// and usageKey its primary key's, in key order (the table's first
	// shape has a shorter key).
	usageCols map[string]bool
	usageKey  []string
	// ftsColumn is the first column of messages_fts (the one search
	// snippets show) and ftsSQL its CREATE statement.
	ftsColumn, ftsSQL string
	// trigramView is the CREATE statement of the trigram index's view.
	trigramView string
}

func (si *schemaInfo) hasFTS() bool { return si.tables["messages_fts"] }

// hasTrigramOfHermes reports a trigram index a newer Hermes made
// (messages_fts_trigram).
func (si *schemaInfo) hasTrigramOfHermes() bool { return si.tables["messages_fts_trigram"] }

// tableNames returns up to n of the file's table names, sorted, with "..."
// when there are more.
func (si *schemaInfo) tableNames(n int) []string {
	names := make([]string, 0, len(si.tables))
	for t := range si.tables {
		names = append(names, t)
	}
	sort.Strings(names)
	if len(names) > n {
		names = append(names[:n], "...")
	}
	return names
}

// newer reports a file written by a Hermes newer than v6, which we must not
// change structurally.
func (si *schemaInfo) newer() bool { return si.hasVersion && si.version > SchemaVersion6 }

// fresh reports a file with none of the state.db tables.
func (si *schemaInfo) fresh() bool {
	return !si.tables["sessions"] && !si.tables["messages"] && !si.tables["schema_version"] && !si.tables["messages_fts"]
}

// inspect reads the file's schema through q: the reader pool before any
// lock, and again inside the migration transaction.
func inspect(ctx context.Context, q sqlitedb.Querier) (*schemaInfo, error) {
	si := &schemaInfo{tables: map[string]bool{}, indexes: map[string]bool{}, current: map[string]bool{}, triggers: map[string]bool{}, sessCols: map[string]bool{}, msgCols: map[string]bool{}, usageCols: map[string]bool{}, colTypes: map[string]string{}}
	err := sqlitedb.Each(ctx, q, "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'index', 'view', 'trigger')", nil, func(r sqlitedb.Row) error {
		var typ, name string
		var text sql.NullString
		if err := r.Scan(&typ, &name, &text); err != nil {
			return err
		}
		switch name {
		case "messages_fts":
			si.ftsSQL = text.String
		case "sessiondb_fts_trigram_src":
			si.trigramView = text.String
		}
		switch typ {
		case "index":
			si.indexes[name] = true
			if ddl, ok := readIndexStored[name]; ok && text.String == ddl {
				si.current[name] = true
			}
		case "trigger":
			si.triggers[name] = true
		default:
			si.tables[name] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, t := range []struct {
		name  string
		cols  map[string]bool
		order *[]string // nil: the order is not needed
	}{{"sessions", si.sessCols, nil}, {"messages", si.msgCols, &si.msgOrder}} {
		if !si.tables[t.name] {
			continue
		}
		err := sqlitedb.Each(ctx, q, "SELECT name, type FROM pragma_table_info(?)", []any{t.name}, func(r sqlitedb.Row) error {
			var c, typ string
			if err := r.Scan(&c, &typ); err != nil {
				return err
			}
			t.cols[c] = true
			si.colTypes[t.name+"."+c] = strings.ToUpper(typ)
			if t.order != nil {
				*t.order = append(*t.order, c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if si.tables["session_model_usage"] {
		err := sqlitedb.Each(ctx, q, "SELECT name, type, pk FROM pragma_table_info('session_model_usage') ORDER BY pk, cid", nil, func(r sqlitedb.Row) error {
			var c, typ string
			var pk int
			if err := r.Scan(&c, &typ, &pk); err != nil {
				return err
			}
			si.usageCols[c] = true
			si.colTypes["session_model_usage."+c] = strings.ToUpper(typ)
			if pk > 0 {
				si.usageKey = append(si.usageKey, c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if si.hasFTS() {
		err := sqlitedb.Each(ctx, q, "SELECT name FROM pragma_table_info('messages_fts') ORDER BY cid LIMIT 1", nil, func(r sqlitedb.Row) error {
			return r.Scan(&si.ftsColumn)
		})
		if err != nil {
			return nil, err
		}
	}
	if si.tables["schema_version"] {
		err := sqlitedb.Each(ctx, q, "SELECT version FROM schema_version LIMIT 1", nil, func(r sqlitedb.Row) error {
			var v sql.NullInt64
			if err := r.Scan(&v); err != nil {
				return err
			}
			si.hasVersion, si.version = true, int(v.Int64)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return si, nil
}

// missingV6 lists the v6 columns absent from the file, as "table.column".
func (si *schemaInfo) missingV6() []string {
	var out []string
	for _, c := range sessionColumns {
		if !si.sessCols[c.name] {
			out = append(out, "sessions."+c.name)
		}
	}
	for _, c := range messageColumns {
		if !si.msgCols[c.name] {
			out = append(out, "messages."+c.name)
		}
	}
	return out
}

// needsMigration reports whether bringing the file to v6 would change it.
func (si *schemaInfo) needsMigration() bool {
	if si.newer() {
		return false
	}
	// A version row implies the schema_version table, and a missing
	// sessions or messages table shows as missing v6 columns.
	if !si.hasVersion || si.version != SchemaVersion6 || !si.hasFTS() {
		return true
	}
	if len(si.missingV6()) > 0 {
		return true
	}
	for _, ix := range v6Indexes {
		if !si.indexes[ix] {
			return true
		}
	}
	return false
}

// checkUsable fails when a file cannot be worked on as it is: a newer file
// missing a v6 column, or (read-only) no sessions/messages tables at all.
func (si *schemaInfo) checkUsable(readOnly bool) error {
	if si.newer() {
		if m := si.missingV6(); len(m) > 0 {
			return sessiondb.Errorf(sessiondb.EINTERNAL, "schema version %d lacks v6 columns %s", si.version, strings.Join(m, ", "))
		}
		return nil
	}
	if readOnly && (!si.tables["sessions"] || !si.tables["messages"]) {
		return sessiondb.Errorf(sessiondb.EINVALID, "not a state.db: no sessions/messages tables (a read-only open cannot create them)")
	}
	return nil
}

// migrate brings the file to v6 inside the caller's transaction (IMP-2): it
// re-inspects (another process may have migrated meanwhile), creates what is
// missing, adds missing nullable or defaulted columns, refuses duplicate
// titles before the unique index, builds the FTS index if it was absent and
// sets the version row.
func migrate(tx txRunner, additions bool) error {
	si, err := inspect(tx.Context(), tx)
	if err != nil {
		return sqlitedb.Wrap(err, "inspect schema")
	}
	if !si.needsMigration() { // false for a newer file too
		return nil
	}
	if err := tx.ExecScript(schemaTables); err != nil {
		return sqlitedb.Wrap(err, "create v6 tables")
	}
	for _, t := range []struct {
		name string
		have map[string]bool
		cols []column
	}{{"sessions", si.sessCols, sessionColumns}, {"messages", si.msgCols, messageColumns}} {
		if !si.tables[t.name] {
			continue // just created whole
		}
		for _, c := range t.cols {
			if t.have[c.name] {
				continue
			}
			if !c.addable {
				return sessiondb.Errorf(sessiondb.EINTERNAL, "table %s lacks required column %s, which cannot be added to existing rows", t.name, c.name)
			}
			if err := tx.ExecScript(fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", t.name, c.name, c.decl)); err != nil {
				return sqlitedb.Wrap(err, "add column %s.%s", t.name, c.name)
			}
		}
	}
	if !si.indexes["idx_sessions_title_unique"] {
		if err := checkDuplicateTitles(tx); err != nil {
			return err
		}
		if err := tx.ExecScript(schemaTitleIndex); err != nil {
			return sqlitedb.Wrap(err, "create title index")
		}
	}
	if !si.hasFTS() {
		if err := tx.ExecScript(schemaFTS); err != nil {
			return sqlitedb.Wrap(err, "create full-text index")
		}
		if !si.fresh() {
			if err := tx.ExecScript("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')"); err != nil {
				return sqlitedb.Wrap(err, "fill full-text index")
			}
		}
	}
	if additions {
		if err := addReadIndexes(tx); err != nil {
			return err
		}
	}
	if si.hasVersion {
		_, err = tx.Exec("UPDATE schema_version SET version = ?", SchemaVersion6)
	} else {
		_, err = tx.Exec("INSERT INTO schema_version (version) VALUES (?)", SchemaVersion6)
	}
	if err != nil {
		return sqlitedb.Wrap(err, "set schema version")
	}
	return nil
}

func checkDuplicateTitles(tx txRunner) error {
	dups, err := sqlitedb.Append(tx.Context(), tx, "SELECT title, group_concat(id, ', ') FROM sessions WHERE title IS NOT NULL GROUP BY title HAVING count(*) > 1 ORDER BY title", nil, nil, func(r sqlitedb.Row) (string, error) {
		var title, ids string
		err := r.Scan(&title, &ids)
		return fmt.Sprintf("%q held by sessions %s", title, ids), err
	})
	if err != nil {
		return sqlitedb.Wrap(err, "look for duplicate titles")
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		return sessiondb.Errorf(sessiondb.ECONFLICT, "cannot add the unique title index (schema step 4): duplicate titles %s; rename them and open again", strings.Join(dups, "; "))
	}
	return nil
}

// txRunner is the part of sqlitedb.Tx that migrations use.
type txRunner interface {
	sqlitedb.Querier
	Context() context.Context
	Exec(query string, args ...any) (sql.Result, error)
	ExecScript(script string) error
}

// SchemaVersion returns the version row of the file (0 when there is none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT version FROM schema_version LIMIT 1").Scan(&v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, s.readErr(err, "read schema version")
	}
	return int(v.Int64), nil
}
