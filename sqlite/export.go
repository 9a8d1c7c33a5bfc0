package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// ExportSession returns the session row with every stored column (newer
// Hermes columns included) under its snake_case name, plus "messages" =
// GetMessages. A missing session is not_found.
func (s *Store) ExportSession(ctx context.Context, id string) (map[string]any, error) {
	rec, err := s.exportRow(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs, err := s.GetMessages(ctx, id)
	if err != nil {
		return nil, err
	}
	rec["messages"] = msgs
	return rec, nil
}

// ExportSessionPages hands row the session row ExportSession returns,
// without "messages", then page its messages a page at a time
// (sessiondb.ExportPages): a session too large to hold streams out.
func (s *Store) ExportSessionPages(ctx context.Context, id string, row func(map[string]any) error, page func([]sessiondb.Message) error) error {
	rec, err := s.exportRow(ctx, id)
	if err != nil {
		return err
	}
	if err := row(rec); err != nil {
		return err
	}
	return sessiondb.ExportPages(ctx, pageReader{s}, id, page)
}

// exportRow reads the session row of an export: every stored column;
// not_found when missing.
func (s *Store) exportRow(ctx context.Context, id string) (map[string]any, error) {
	rec, err := s.queryRecord(ctx, "SELECT * FROM sessions WHERE id = ?", id)
	if err != nil {
		return nil, s.readErr(err, "export session %s", id)
	}
	if rec == nil {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
	}
	return rec, nil
}

// queryRecord reads the row q selects (the last, should there be several)
// as a column-name map, text as string; nil when there is no row.
func (s *Store) queryRecord(ctx context.Context, q string, args ...any) (map[string]any, error) {
	var rec map[string]any
	err := sqlitedb.Each(ctx, readers{s}, q, args, func(r sqlitedb.Row) error {
		cols, err := r.Columns()
		if err != nil {
			return err
		}
		vals, err := sqlitedb.Values(r)
		if err != nil {
			return err
		}
		rec = make(map[string]any, len(cols)+1)
		for i, c := range cols {
			rec[c] = vals[i]
		}
		return nil
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
var jsonColumns = map[string]bool{"model_config": true, "tool_calls": true, "reasoning_details": true, "codex_reasoning_items": true}

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
// each by its declared type (importValue); a message's tool_calls given as
// decoded JSON is stored as its text, and "" as NULL.
func (s *Store) importColumns() sessiondb.ImportColumns {
	return sessiondb.ImportColumns{
		Session: func(field, col string, v any) (any, bool, error) {
			if !s.si.sessCols[col] {
				return nil, false, nil
			}
			val, err := importValue(field, col, s.si.colTypes["sessions."+col], v)
			return val, true, err
		},
		Message: func(field, col string, v any) (any, bool, error) {
			if !s.si.msgCols[col] {
				return nil, false, nil
			}
			if col != "tool_calls" {
				val, err := importValue(field, col, s.si.colTypes["messages."+col], v)
				return val, true, err
			}
			if str, ok := v.(string); ok {
				return nullStr(str), true, nil
			}
			val, err := encodeJSONField(field, v)
			return val, true, err
		},
	}
}

// importer is the store's side of sessiondb.ImportOne and ImportBatch.
type importer struct{ s *Store }

func (b importer) Prepare(rec map[string]any) (*sessiondb.PreparedImport, error) {
	return sessiondb.PrepareImport(rec, b.s.importColumns())
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
			return false, "", sessiondb.Wrap(sessiondb.ECONFLICT, err, "import session %s (its title may be taken)", p.ID)
		}
		return false, "", err
	}
	for i, m := range p.Messages {
		if err := insertImported(tx, p.ID, m); err != nil {
			return false, "", sessiondb.Wrap("", err, "import session %s: messages[%d]", p.ID, i)
		}
	}
	return true, missingParent, nil
}

func (t importTx) LinkChild(parent, child string) error {
	_, err := t.tx.Exec("UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL", parent, child)
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
// JSONL: the session's columns plus "messages") in one transaction. A
// session id that already exists is skipped (imported=false). Keys naming
// no column of the file are ignored; wrong JSON types are invalid, naming
// the field. Message ids are kept when free; message_count and
// tool_call_count are recomputed from the inserted rows. A parent not yet
// imported is linked once it is, by this Store (exports list children
// before their parents).
func (s *Store) ImportSession(ctx context.Context, rec map[string]any) (bool, error) {
	return sessiondb.ImportOne(ctx, &s.imports, importer{s}, rec)
}

// ImportSessions imports several sessions as ImportSession does, sharing
// one commit: each session is still all-or-nothing (a savepoint of its
// own), but the file sees one transaction, which is several times faster
// for bulk imports since SQLite and FTS5 pay per commit. It stops at the
// first failing session: the sessions before it are committed, imported
// reports each of them, and the error names the failing one.
func (s *Store) ImportSessions(ctx context.Context, recs []map[string]any) (imported []bool, err error) {
	return sessiondb.ImportBatch(ctx, &s.imports, importer{s}, recs)
}

// insertImported inserts one message, with its original id when that id
// is free.
func insertImported(tx *sqlitedb.Tx, sessionID string, m sessiondb.ImportRow) error {
	cols := "session_id, " + strings.Join(m.Cols, ", ")
	ph := placeholders(len(m.Cols) + 1)
	args := append([]any{sessionID}, m.Vals...)
	if m.ID != nil {
		res, err := tx.Exec("INSERT OR IGNORE INTO messages (id, "+cols+") VALUES (?, "+ph+")", append([]any{m.ID}, args...)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
	}
	_, err := tx.Exec("INSERT INTO messages ("+cols+") VALUES ("+ph+")", args...)
	return err
}
