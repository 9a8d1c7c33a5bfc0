package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// ExportSession returns the session row with every stored column (newer
// Hermes columns included) under its snake_case name, plus "messages":
// every row of the session with every column (hidden rows with their
// marks; sessiondb.ExportValue), and, where the file has the table,
// sessiondb.UsageKey: its session_model_usage rows. A missing session is
// not_found.
func (s *Store) ExportSession(ctx context.Context, id string) (map[string]any, error) {
	rec, err := s.exportRow(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs := []map[string]any{}
	err = sessiondb.ExportPages(ctx, pageReader{s}, id, func(page []map[string]any) error {
		msgs = append(msgs, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rec["messages"] = msgs
	return rec, nil
}

// ExportSessionPages hands row the session row ExportSession returns,
// without "messages", then page its message rows a page at a time
// (sessiondb.ExportPages): a session too large to hold streams out.
func (s *Store) ExportSessionPages(ctx context.Context, id string, row func(map[string]any) error, page func([]map[string]any) error) error {
	rec, err := s.exportRow(ctx, id)
	if err != nil {
		return err
	}
	if err := row(rec); err != nil {
		return err
	}
	return sessiondb.ExportPages(ctx, pageReader{s}, id, page)
}

// MessageRows reads rows of sessiondb.ExportPages: every stored message
// row of the session (hidden ones included) with every column. Their ids
// are cut from an index on the session first, so no whole row is sorted.
func (r pageReader) MessageRows(ctx context.Context, sessionID string, from int64, limit int) ([]map[string]any, error) {
	var out []map[string]any
	err := sqlitedb.Each(ctx, readers{r.s}, "SELECT * FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? AND id >= ? ORDER BY id LIMIT ?) ORDER BY id",
		[]any{sessionID, from, limit}, func(row sqlitedb.Row) error {
			m, err := rowMap(row)
			if err != nil {
				return err
			}
			for k, v := range m {
				m[k] = sessiondb.ExportValue(k, v)
			}
			out = append(out, m)
			return nil
		})
	if err != nil {
		return nil, r.s.readErr(err, "export messages of %s", sessionID)
	}
	return out, nil
}

// exportRow reads the session row of an export: every stored column, and
// its usage rows where the file keeps them; not_found when missing.
func (s *Store) exportRow(ctx context.Context, id string) (map[string]any, error) {
	rec, err := s.queryRecord(ctx, "SELECT * FROM sessions WHERE id = ?", id)
	if err != nil {
		return nil, s.readErr(err, "export session %s", id)
	}
	if rec == nil {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
	}
	if rec["system_prompt"] == nil && rec["system_prompt_hash"] != nil && s.si.tables["system_prompts"] {
		// A Hermes that stores each prompt once leaves the column NULL:
		// the export carries the prompt itself.
		p, err := s.queryRecord(ctx, "SELECT prompt FROM system_prompts WHERE hash = ?", rec["system_prompt_hash"])
		if err != nil {
			return nil, s.readErr(err, "export session %s", id)
		}
		if p != nil {
			rec["system_prompt"] = p["prompt"]
		}
	}
	if s.si.tables[sessiondb.UsageKey] {
		usage := []map[string]any{}
		// In key order, as every backend lists them (sessiondb.CompareCopies
		// compares the lists in order).
		err := sqlitedb.Each(ctx, readers{s}, "SELECT * FROM session_model_usage WHERE session_id = ? ORDER BY "+s.usageOrder(), []any{id}, func(row sqlitedb.Row) error {
			m, err := rowMap(row)
			if err == nil {
				delete(m, "session_id")
				usage = append(usage, m)
			}
			return err
		})
		if err != nil {
			return nil, s.readErr(err, "export usage of session %s", id)
		}
		rec[sessiondb.UsageKey] = usage
	}
	return rec, nil
}

// usageOrder orders session_model_usage rows by their route, the columns
// of its key the file has.
func (s *Store) usageOrder() string {
	parts := []string{"model"}
	for _, c := range []string{"billing_provider", "billing_base_url", "billing_mode"} {
		if s.si.usageCols[c] {
			parts = append(parts, "COALESCE("+c+", '')")
		}
	}
	return strings.Join(parts, ", ")
}

// rowMap reads one row as a column-name map, text as string.
func rowMap(r sqlitedb.Row) (map[string]any, error) {
	cols, err := r.Columns()
	if err != nil {
		return nil, err
	}
	vals, err := sqlitedb.Values(r)
	if err != nil {
		return nil, err
	}
	rec := make(map[string]any, len(cols)+1)
	for i, c := range cols {
		rec[c] = vals[i]
	}
	return rec, nil
}

// queryRecord reads the row q selects (the last, should there be several)
// as a column-name map, text as string; nil when there is no row.
func (s *Store) queryRecord(ctx context.Context, q string, args ...any) (map[string]any, error) {
	var rec map[string]any
	err := sqlitedb.Each(ctx, readers{s}, q, args, func(r sqlitedb.Row) error {
		var err error
		rec, err = rowMap(r)
		return err
	})
	return rec, err
}

// ExportAll streams every session (of source, unless "") newest first, in
// ExportSession's form, to yield; an error from yield stops the export and
// is returned. Unlike Hermes v6 it has no cap and holds one session in
// memory at a time (IMP-14).
func (s *Store) ExportAll(ctx context.Context, source string, yield func(map[string]any) error) error {
	q := "SELECT id FROM sessions"
	var args []any
	if source != "" {
		q += " WHERE source = ?"
		args = append(args, source)
	}
	// The ids are read first so no read transaction stays open (holding
	// back checkpoints) while the caller writes out each session.
	ids, err := s.queryStrings(ctx, q+" ORDER BY started_at DESC", args...)
	if err != nil {
		return s.readErr(err, "export sessions")
	}
	return sessiondb.ExportEach(ctx, ids, s.ExportSession, yield)
}

// jsonColumns hold JSON text; an import may give them as decoded values.
var jsonColumns = map[string]bool{"model_config": true, "tool_calls": true, "reasoning_details": true,
	"codex_reasoning_items": true, "codex_message_items": true}

// importValue converts one JSON-decoded value for a column of declared
// type typ with sessiondb.ImportValue, or fails invalid naming field.
func importValue(field, column, typ string, v any) (any, error) {
	k := sessiondb.KindText
	switch {
	case strings.Contains(typ, "INT"):
		k = sessiondb.KindInteger
	case strings.Contains(typ, "REAL"), strings.Contains(typ, "FLOA"), strings.Contains(typ, "DOUB"):
		k = sessiondb.KindReal
	case jsonColumns[column]:
		k = sessiondb.KindJSON
	case typ == "":
		k = sessiondb.KindAny
	}
	return sessiondb.ImportValue(field, k, v)
}

// importColumns converts a record's values for the file's own columns,
// each by its declared type (importValue); a message's content as Hermes
// stores it (sessiondb.KindContent), its tool_calls given as a string
// kept as it is ("" as NULL). si is the file's schema as the import reads
// it.
func importColumns(si *schemaInfo) sessiondb.ImportColumns {
	c := sessiondb.ImportColumns{
		Session: func(field, col string, v any) (any, bool, error) {
			if !si.sessCols[col] {
				return nil, false, nil
			}
			val, err := importValue(field, col, si.colTypes["sessions."+col], v)
			return val, true, err
		},
		Message: func(field, col string, v any) (any, bool, error) {
			if !si.msgCols[col] {
				return nil, false, nil
			}
			switch col {
			case "content":
				val, err := sessiondb.ImportValue(field, sessiondb.KindContent, v)
				return val, true, err
			case "tool_calls":
				if str, ok := v.(string); ok {
					return nullStr(str), true, nil
				}
			}
			val, err := importValue(field, col, si.colTypes["messages."+col], v)
			return val, true, err
		},
	}
	if si.tables[sessiondb.UsageKey] {
		c.Usage = func(field, col string, v any) (any, bool, error) {
			if !si.usageCols[col] {
				return nil, false, nil
			}
			val, err := importValue(field, col, si.colTypes[sessiondb.UsageKey+"."+col], v)
			return val, true, err
		}
	}
	return c
}

// importer is the store's side of sessiondb.ImportOne and ImportBatch.
type importer struct{ s *Store }

func (b importer) Prepare(rec map[string]any, opts sessiondb.ImportOptions) (*sessiondb.PreparedImport, error) {
	p, err := sessiondb.PrepareImport(rec, importColumns(b.s.si), opts)
	if err != nil {
		return nil, err
	}
	p.Dropped = sessiondb.MergeDropped(p.Dropped, mergedRoutes(p.Usage, b.s.si.usageKey))
	return p, nil
}

// mergedRoutes counts what adding up usage rows loses where the file's
// table keeps the first v20 key (session, model, provider): the base URL
// of a row that insertUsage adds to an earlier row of the same key but
// another base URL (its billing mode the file has no column for, counted
// already).
func mergedRoutes(rows []sessiondb.ImportRow, key []string) []sessiondb.DroppedField {
	if slices.Contains(key, "billing_base_url") {
		return nil
	}
	value := func(r sessiondb.ImportRow, col string) any {
		if i := slices.Index(r.Cols, col); i >= 0 {
			return r.Vals[i]
		}
		return nil
	}
	first := map[string]any{} // key → the first row's base URL
	lost := 0
	for _, r := range rows {
		var k strings.Builder
		for _, c := range key {
			fmt.Fprintf(&k, "%v\x00", value(r, c))
		}
		url, seen := first[k.String()]
		switch {
		case !seen:
			first[k.String()] = value(r, "billing_base_url")
		case url != value(r, "billing_base_url"):
			lost++
		}
	}
	if lost == 0 {
		return nil
	}
	return []sessiondb.DroppedField{{Field: sessiondb.UsageKey + ".billing_base_url", Values: lost}}
}

func (b importer) Write(ctx context.Context, what string, fn func(sessiondb.ImportTx[*sessiondb.PreparedImport]) error) error {
	return b.s.write(ctx, what, func(tx *sqlitedb.Tx) error { return fn(importTx{b.s, tx}) })
}

// importTx is one import transaction (sessiondb.ImportTx).
type importTx struct {
	s  *Store
	tx *sqlitedb.Tx
}

// Insert inserts one prepared session; false when the session already
// exists.
func (t importTx) Insert(p *sessiondb.PreparedImport) (bool, string, error) {
	tx := t.tx
	var one int
	err := tx.QueryRow("SELECT 1 FROM sessions WHERE id = ?", p.ID).Scan(&one)
	if err == nil {
		return false, "", nil
	}
	if err != sql.ErrNoRows {
		return false, "", err
	}
	cols, vals := p.Session.Cols, p.Session.Vals
	missingParent := ""
	if p.Parent != "" {
		err := tx.QueryRow("SELECT 1 FROM sessions WHERE id = ?", p.Parent).Scan(&one)
		switch {
		case err == nil:
			cols, vals = append(cols[:len(cols):len(cols)], "parent_session_id"), append(vals[:len(vals):len(vals)], p.Parent)
		case err == sql.ErrNoRows:
			missingParent = p.Parent
		default:
			return false, "", err
		}
	}
	if _, err := tx.Exec("INSERT INTO sessions ("+strings.Join(cols, ", ")+") VALUES ("+placeholders(len(cols))+")", vals...); err != nil {
		if sqlitedb.IsUnique(err) {
			return false, "", p.TitleTaken(err)
		}
		return false, "", err
	}
	// Once a message takes a new id (its own is taken, or it has none),
	// every later one does: a new id is above every id there is, and an
	// id kept after it would put that message before it.
	renumber := false
	for i, m := range p.Messages {
		if renumber {
			m.ID = nil
		}
		kept, err := insertImported(tx, p.ID, m)
		if err != nil {
			return false, "", sessiondb.Wrap("", err, "import session %s: messages[%d]", p.ID, i)
		}
		renumber = !kept
	}
	for i, u := range p.Usage {
		if err := t.s.insertUsage(tx, p.ID, u); err != nil {
			return false, "", sessiondb.Wrap("", err, "import session %s: %s[%d]", p.ID, sessiondb.UsageKey, i)
		}
	}
	return true, missingParent, nil
}

func (t importTx) LinkChild(parent, child string) error {
	_, err := t.tx.Exec("UPDATE sessions SET parent_session_id = ?1 WHERE id = ?2 AND parent_session_id IS NULL AND EXISTS (SELECT 1 FROM sessions WHERE id = ?1)", parent, child)
	return err
}

// Alone runs fn inside a savepoint.
func (t importTx) Alone(id string, fn func(sessiondb.ImportTx[*sessiondb.PreparedImport]) error) (failed, fatal error) {
	if _, err := t.tx.Exec("SAVEPOINT import_session"); err != nil {
		return nil, err
	}
	if err := fn(t); err != nil {
		if _, rbErr := t.tx.Exec("ROLLBACK TO import_session"); rbErr != nil {
			return nil, rbErr
		}
		t.tx.Exec("RELEASE import_session")
		return t.s.writeErr(err, "import session "+id), nil
	}
	_, err := t.tx.Exec("RELEASE import_session")
	return nil, err
}

// ImportSession inserts one session of an export (ours or Hermes' own
// JSONL: the session's columns plus "messages") in one transaction, as
// sessiondb.ImportService says: a session id that already exists is
// skipped; values of columns and tables the file lacks are counted in the
// result's Dropped; wrong JSON types are invalid, naming the field.
// Message ids are kept when free, up to the first that is not (ImportSession). A parent not yet imported is linked
// once it is, by this Store (exports list children before their parents).
func (s *Store) ImportSession(ctx context.Context, rec map[string]any, opts sessiondb.ImportOptions) (sessiondb.ImportResult, error) {
	return sessiondb.ImportOne(ctx, &s.imports, importer{s}, rec, opts)
}

// ImportSessions imports several sessions as ImportSession does, sharing
// one commit: each session is still all-or-nothing (a savepoint of its
// own), but the file sees one transaction, which is several times faster
// for bulk imports since SQLite and FTS5 pay per commit. It stops at the
// first failing session: the sessions before it are committed, imported
// reports each of them, and the error names the failing one.
func (s *Store) ImportSessions(ctx context.Context, recs []map[string]any, opts sessiondb.ImportOptions) ([]sessiondb.ImportResult, error) {
	return sessiondb.ImportBatch(ctx, &s.imports, importer{s}, recs, opts)
}

// insertImported inserts one message, with its original id when that id
// is free, and reports whether it kept it.
func insertImported(tx *sqlitedb.Tx, sessionID string, m sessiondb.ImportRow) (kept bool, err error) {
	cols := "session_id, " + strings.Join(m.Cols, ", ")
	ph := placeholders(len(m.Cols) + 1)
	args := append([]any{sessionID}, m.Vals...)
	if m.ID != nil {
		res, err := tx.Exec("INSERT OR IGNORE INTO messages (id, "+cols+") VALUES (?, "+ph+")", append([]any{m.ID}, args...)...)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err == nil, err
		}
	}
	_, err = tx.Exec("INSERT INTO messages ("+cols+") VALUES ("+ph+")", args...)
	return false, err
}

// insertUsage inserts one usage row of an imported session. A file whose
// table keeps the first v20 key (session, model, provider) can meet two
// rows of one key that the current key tells apart (another base URL or
// billing mode): their counters and costs are added, as Hermes adds each
// call's usage to its row.
func (s *Store) insertUsage(tx *sqlitedb.Tx, sessionID string, u sessiondb.ImportRow) error {
	cols := append([]string{"session_id"}, u.Cols...)
	q := "INSERT INTO session_model_usage (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")"
	var sums []string
	for _, c := range u.Cols {
		switch c {
		case "api_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
			"reasoning_tokens", "estimated_cost_usd", "actual_cost_usd":
			sums = append(sums, c+" = "+c+" + excluded."+c)
		}
	}
	if len(s.si.usageKey) > 0 && len(sums) > 0 {
		q += " ON CONFLICT (" + strings.Join(s.si.usageKey, ", ") + ") DO UPDATE SET " + strings.Join(sums, ", ")
	}
	_, err := tx.Exec(q, append([]any{sessionID}, u.Vals...)...)
	return err
}
