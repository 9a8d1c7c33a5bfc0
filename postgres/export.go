package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// exportSessionColumns are the session columns an export reads: every
// column of the table but seq, the insertion order, which is ours.
const exportSessionColumns = sessionColumns

// exportMessageColumns are the message columns an export reads: every
// column but fts (derived), with content_bytes, which replaces content
// where it is set.
const exportMessageColumns = `id, session_id, role, content, tool_call_id, tool_calls, tool_name, effect_disposition, "timestamp",
    token_count, finish_reason, reasoning, reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items,
    platform_message_id, observed, active, compacted, content_bytes`

// usageColumns are the columns of session_model_usage but session_id.
const usageColumns = `model, billing_provider, billing_base_url, billing_mode, api_call_count, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status, cost_source,
    first_seen, last_seen`

// recordOf reads the current row of rows as a column-name map.
func recordOf(rows pgx.Rows) (map[string]any, error) {
	vals, err := rows.Values()
	if err != nil {
		return nil, err
	}
	fields := rows.FieldDescriptions()
	rec := make(map[string]any, len(fields))
	for i, f := range fields {
		rec[f.Name] = vals[i]
	}
	return rec, nil
}

// queryRecords reads every row sql selects as column-name maps.
func queryRecords(ctx context.Context, q querier, sql string, args ...any) ([]map[string]any, error) {
	var out []map[string]any
	err := each(ctx, q, sql, args, func(r pgx.Rows) error {
		rec, err := recordOf(r)
		if err == nil {
			out = append(out, rec)
		}
		return err
	})
	return out, err
}

// ExportSession returns the session row with every column under its
// snake_case name, plus "messages" (every row, hidden ones with their
// marks, every column: sessiondb.ExportValue) and sessiondb.UsageKey (its
// usage rows by model); missing is not_found.
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

// exportRow reads the session row of an export and its usage rows;
// not_found when missing.
func (s *Store) exportRow(ctx context.Context, id string) (map[string]any, error) {
	rows, err := queryRecords(ctx, s.pool, "SELECT "+exportSessionColumns+" FROM sessions WHERE id = $1", id)
	if err != nil {
		return nil, s.readErr(err, "export session %s", id)
	}
	if len(rows) == 0 {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
	}
	rec := rows[0]
	// In key order, bytewise as SQLite orders text, as every backend lists
	// them (sessiondb.CompareCopies compares the lists in order).
	usage, err := queryRecords(ctx, s.pool, "SELECT "+usageColumns+` FROM session_model_usage WHERE session_id = $1
ORDER BY model COLLATE "C", billing_provider COLLATE "C", billing_base_url COLLATE "C", billing_mode COLLATE "C"`, id)
	if err != nil {
		return nil, s.readErr(err, "export usage of session %s", id)
	}
	if usage == nil {
		usage = []map[string]any{}
	}
	rec[sessiondb.UsageKey] = usage
	return rec, nil
}

// MessageRows reads rows of sessiondb.ExportPages: every message row of the
// session (hidden ones included) with every column, content exactly as
// written.
func (r pageReader) MessageRows(ctx context.Context, sessionID string, from int64, limit int) ([]map[string]any, error) {
	rows, err := queryRecords(ctx, r.s.pool, "SELECT "+exportMessageColumns+" FROM messages WHERE session_id = $1 AND id >= $2 ORDER BY id LIMIT $3",
		sessionID, from, limit)
	if err != nil {
		return nil, r.s.readErr(err, "export messages of %s", sessionID)
	}
	for _, m := range rows {
		if b, ok := m["content_bytes"].([]byte); ok {
			m["content"] = string(b)
		}
		delete(m, "content_bytes")
		for k, v := range m {
			m[k] = sessiondb.ExportValue(k, v)
		}
	}
	return rows, nil
}

// ExportSessionPages hands row the session row ExportSession returns,
// without "messages", then page its message rows a page at a time
// (sessiondb.ExportPages), as the sqlite backend's.
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

// ExportAll streams every session (of source, unless "") newest first, in
// ExportSession's form, to yield; an error from yield stops the export and
// is returned. One session is in memory at a time.
func (s *Store) ExportAll(ctx context.Context, source string, yield func(map[string]any) error) error {
	q := "SELECT id FROM sessions"
	var args []any
	if source != "" {
		q += " WHERE source = $1"
		args = append(args, source)
	}
	ids, err := queryStrings(ctx, s.pool, q+" ORDER BY started_at DESC, seq", args...)
	if err != nil {
		return s.readErr(err, "export sessions")
	}
	return sessiondb.ExportEach(ctx, ids, s.ExportSession, yield)
}

// sessionKinds, messageKinds and usageKinds are the importable columns
// and what each takes. message_count and tool_call_count are recomputed
// or checked (sessiondb.PrepareImport), never taken blindly.
var sessionKinds = map[string]sessiondb.ColumnKind{
	"id": sessiondb.KindText, "source": sessiondb.KindText, "user_id": sessiondb.KindText, "model": sessiondb.KindText,
	"model_config": sessiondb.KindJSON, "system_prompt": sessiondb.KindText, "parent_session_id": sessiondb.KindText,
	"started_at": sessiondb.KindReal, "ended_at": sessiondb.KindReal, "end_reason": sessiondb.KindText,
	"message_count": sessiondb.KindInteger, "tool_call_count": sessiondb.KindInteger,
	"input_tokens": sessiondb.KindInteger, "output_tokens": sessiondb.KindInteger, "cache_read_tokens": sessiondb.KindInteger,
	"cache_write_tokens": sessiondb.KindInteger, "reasoning_tokens": sessiondb.KindInteger,
	"billing_provider": sessiondb.KindText, "billing_base_url": sessiondb.KindText, "billing_mode": sessiondb.KindText,
	"estimated_cost_usd": sessiondb.KindReal, "actual_cost_usd": sessiondb.KindReal, "cost_status": sessiondb.KindText,
	"cost_source": sessiondb.KindText, "pricing_version": sessiondb.KindText, "title": sessiondb.KindText,
	"api_call_count": sessiondb.KindInteger, "session_key": sessiondb.KindText, "chat_id": sessiondb.KindText,
	"chat_type": sessiondb.KindText, "thread_id": sessiondb.KindText, "display_name": sessiondb.KindText,
	"origin_json": sessiondb.KindText, "expiry_finalized": sessiondb.KindInteger, "cwd": sessiondb.KindText,
	"git_branch": sessiondb.KindText, "git_repo_root": sessiondb.KindText, "handoff_state": sessiondb.KindText,
	"handoff_platform": sessiondb.KindText, "handoff_error": sessiondb.KindText,
	"compression_failure_cooldown_until": sessiondb.KindReal, "compression_failure_error": sessiondb.KindText,
	"compression_fallback_streak": sessiondb.KindInteger, "rewind_count": sessiondb.KindInteger, "archived": sessiondb.KindInteger,
}

var messageKinds = map[string]sessiondb.ColumnKind{
	"id": sessiondb.KindInteger, "role": sessiondb.KindText, "content": sessiondb.KindContent, "tool_call_id": sessiondb.KindText,
	"tool_calls": sessiondb.KindJSON, "tool_name": sessiondb.KindText, "timestamp": sessiondb.KindReal,
	"token_count": sessiondb.KindInteger, "finish_reason": sessiondb.KindText, "reasoning": sessiondb.KindText,
	"reasoning_details": sessiondb.KindJSON, "codex_reasoning_items": sessiondb.KindJSON,
	"effect_disposition": sessiondb.KindText, "reasoning_content": sessiondb.KindText, "codex_message_items": sessiondb.KindJSON,
	"platform_message_id": sessiondb.KindText, "observed": sessiondb.KindInteger, "active": sessiondb.KindInteger,
	"compacted": sessiondb.KindInteger,
}

var usageKinds = map[string]sessiondb.ColumnKind{
	"model": sessiondb.KindText, "billing_provider": sessiondb.KindText, "billing_base_url": sessiondb.KindText,
	"billing_mode": sessiondb.KindText, "api_call_count": sessiondb.KindInteger, "input_tokens": sessiondb.KindInteger,
	"output_tokens": sessiondb.KindInteger, "cache_read_tokens": sessiondb.KindInteger, "cache_write_tokens": sessiondb.KindInteger,
	"reasoning_tokens": sessiondb.KindInteger, "estimated_cost_usd": sessiondb.KindReal, "actual_cost_usd": sessiondb.KindReal,
	"cost_status": sessiondb.KindText, "cost_source": sessiondb.KindText, "first_seen": sessiondb.KindReal, "last_seen": sessiondb.KindReal,
}

// importColumns converts a record's values by each column's kind
// (sessionKinds, messageKinds, usageKinds), refusing text PostgreSQL cannot
// hold in a column other than message content (stored as bytes when
// needed); a message's empty tool_calls is stored as NULL.
var importColumns = sessiondb.ImportColumns{
	Session: func(field, col string, v any) (any, bool, error) {
		return importValue(sessionKinds, field, col, v)
	},
	Message: func(field, col string, v any) (any, bool, error) {
		val, ok, err := importValue(messageKinds, field, col, v)
		if t, isText := val.(string); col == "tool_calls" && isText && t == "" {
			val = nil
		}
		return val, ok, err
	},
	Usage: func(field, col string, v any) (any, bool, error) {
		return importValue(usageKinds, field, col, v)
	},
}

// importValue converts v for column col of kinds; false when the table
// has no such column.
func importValue(kinds map[string]sessiondb.ColumnKind, field, col string, v any) (any, bool, error) {
	kind, ok := kinds[col]
	if !ok {
		return nil, false, nil
	}
	val, err := sessiondb.ImportValue(field, kind, v)
	if t, isText := val.(string); err == nil && isText && col != "content" {
		err = checkText(field, &t)
	}
	return val, true, err
}

// placeholders returns "$from, $from+1, ..." for n values.
func placeholders(from, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "$" + itoa(from+i)
	}
	return strings.Join(parts, ", ")
}

// importer is the store's side of sessiondb.ImportOne and ImportBatch.
type importer struct{ s *Store }

func (b importer) Prepare(rec map[string]any, opts sessiondb.ImportOptions) (*sessiondb.PreparedImport, error) {
	return sessiondb.PrepareImport(rec, importColumns, opts)
}

func (b importer) Write(ctx context.Context, what string, fn func(sessiondb.ImportTx[*sessiondb.PreparedImport]) error) error {
	return b.s.write(ctx, what, func(tx pgx.Tx) error { return fn(importTx{ctx, b.s, tx}) })
}

// importTx is one import transaction (sessiondb.ImportTx).
type importTx struct {
	ctx context.Context
	s   *Store
	tx  pgx.Tx
}

// Insert inserts one prepared session; false when the session already
// exists.
func (t importTx) Insert(p *sessiondb.PreparedImport) (bool, string, error) {
	ctx, tx, s := t.ctx, t.tx, t.s
	cols, vals := p.Session.Cols, p.Session.Vals
	missingParent := ""
	if p.Parent != "" {
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR KEY SHARE", p.Parent).Scan(&one)
		switch {
		case err == nil:
			cols, vals = append(cols[:len(cols):len(cols)], "parent_session_id"), append(vals[:len(vals):len(vals)], p.Parent)
		case noRows(err):
			missingParent = p.Parent
		default:
			return false, "", err
		}
	}
	tag, err := tx.Exec(ctx, "INSERT INTO sessions ("+strings.Join(cols, ", ")+") VALUES ("+placeholders(1, len(cols))+") ON CONFLICT (id) DO NOTHING", vals...)
	if sqlState(err) == pgUniqueViolation {
		return false, "", p.TitleTaken(err)
	}
	if err != nil {
		return false, "", err
	}
	if tag.RowsAffected() == 0 {
		return false, "", nil // already there: skipped, nothing changed
	}
	copied, err := copyMessages(t, p)
	if err != nil {
		return false, "", err
	}
	// Row by row, kept ids may lie ahead of the id sequence: it is moved
	// past them before the next row that takes its id from it, and at the
	// end, so no later append picks one of them.
	// Once a message takes a new id (its own is taken, or it has none),
	// every later one does: a new id is above every id there is, and an
	// id kept after it would put that message before it.
	var ahead int64
	renumber := false
	for i, m := range p.Messages {
		if copied {
			break // copyMessages moved the sequence itself
		}
		if renumber {
			m.ID = nil
		}
		id, err := insertImported(ctx, tx, p.ID, m, func() error {
			if ahead == 0 {
				return nil
			}
			err := s.advanceSequence(ctx, tx, ahead)
			ahead = 0
			return err
		})
		if err != nil {
			return false, "", sessiondb.Wrap("", s.classify(err, "insert"), "import session %s: messages[%d]", p.ID, i)
		}
		ahead, renumber = max(ahead, id), id == 0
	}
	if ahead > 0 {
		if err := s.advanceSequence(ctx, tx, ahead); err != nil {
			return false, "", err
		}
	}
	for i, u := range p.Usage {
		if err := insertUsage(ctx, tx, p.ID, u); err != nil {
			return false, "", sessiondb.Wrap("", s.classify(err, "insert"), "import session %s: %s[%d]", p.ID, sessiondb.UsageKey, i)
		}
	}
	return true, missingParent, nil
}

func (t importTx) LinkChild(parent, child string) error {
	_, err := t.tx.Exec(t.ctx, "UPDATE sessions SET parent_session_id = $1 WHERE id = $2 AND parent_session_id IS NULL AND EXISTS (SELECT 1 FROM sessions WHERE id = $1)", parent, child)
	return err
}

// Alone runs fn inside a savepoint; a failure that makes the whole
// transaction retry is fatal.
func (t importTx) Alone(id string, fn func(sessiondb.ImportTx[*sessiondb.PreparedImport]) error) (failed, fatal error) {
	err := pgx.BeginFunc(t.ctx, t.tx, func(sp pgx.Tx) error {
		return fn(importTx{t.ctx, t.s, sp})
	})
	if err != nil && retryable(err) {
		return nil, err
	}
	if err != nil {
		return t.s.classify(err, "import session %s", id), nil
	}
	return nil, nil
}

// copyMessages inserts a session's imported messages with COPY, one COPY
// per set of columns (copyAllMessages), in a savepoint: one round trip for
// what takes one a message row by row (bench --db, 10,000 messages in 100
// sessions: 1,200 msgs/s before, 1,690-1,730 after, where PostgreSQL's own
// INSERT ... SELECT of the same rows into the same schema does 1,870: the
// indexes are the rest, docs/benchmarks.md).
// It copies only when every message has its original id, and then moves
// the id sequence past them. It returns false, having written nothing,
// when it cannot: a message without an id, a taken id (COPY has no ON
// CONFLICT) or any other failure, which the row-by-row path then meets
// and names with the message's index, or gets past by giving a taken id
// a new one. A failure that makes the transaction retry is returned.
func copyMessages(t importTx, p *sessiondb.PreparedImport) (bool, error) {
	maxID, withIDs, without, ok := messageIDs([]*sessiondb.PreparedImport{p})
	if !ok || without > 0 || withIDs < 2 {
		return false, nil
	}
	err := pgx.BeginFunc(t.ctx, t.tx, func(sp pgx.Tx) error {
		if err := copyAllMessages(sp, t, []*sessiondb.PreparedImport{p}, []bool{true}, nil); err != nil {
			return err
		}
		return t.s.advanceSequence(t.ctx, sp, maxID)
	})
	return triedInSavepoint(err)
}

// triedInSavepoint is the outcome of a fast path tried in a savepoint:
// done, or given up with nothing written (the slower path then meets the
// failure and names it), unless the failure makes the whole transaction
// retry.
func triedInSavepoint(err error) (done bool, fatal error) {
	switch {
	case err == nil:
		return true, nil
	case retryable(err):
		return false, err
	default:
		return false, nil
	}
}

// importedColumns gives the columns and values of one imported message:
// content as its readable text and, beside it, content_bytes holding the
// exact bytes where text cannot (storableContent).
func importedColumns(m sessiondb.ImportRow) (names []string, vals []any) {
	for i, c := range m.Cols {
		v := m.Vals[i]
		if c == "content" {
			var raw []byte
			if t, ok := v.(string); ok {
				text, b := storableContent(&t)
				v, raw = *text, b
			}
			names, vals = append(names, "content_bytes"), append(vals, raw)
		}
		names, vals = append(names, c), append(vals, v)
	}
	return names, vals
}

// advanceSequenceSQL moves the message id sequence past $1 where it is
// not past it yet, so the next id taken from it is above $1. A sequence
// no id has been taken from yet has no last value: its first id would be
// its start, 1. setval is not transactional and the check and the set are
// two steps: two imports at once could both see the sequence behind, and
// the lower set land last, leaving ids the next appends take again. So the
// check and the set run under a transaction-scoped advisory lock on the
// sequence (taken in the subquery, which OFFSET 0 keeps from being merged
// with the check), held to the import's commit.
const advanceSequenceSQL = `SELECT setval(seq, $1) FROM (
    SELECT seq FROM (SELECT pg_get_serial_sequence('messages', 'id')::regclass AS seq) q,
        LATERAL (SELECT pg_advisory_xact_lock(hashtextextended('sessiondb message ids ' || seq::oid::text, 0))) l
    OFFSET 0) s
    WHERE coalesce(pg_sequence_last_value(seq), 0) < $1`

// advanceSequence moves the message id sequence to at least id.
func (s *Store) advanceSequence(ctx context.Context, tx pgx.Tx, id int64) error {
	_, err := tx.Exec(ctx, advanceSequenceSQL, id)
	return err
}

// insertImported inserts one message, with its original id when that id
// is free, and returns the id it kept (0 when it took a new one, after
// calling beforeNew).
func insertImported(ctx context.Context, tx pgx.Tx, sessionID string, m sessiondb.ImportRow, beforeNew func() error) (int64, error) {
	names, vals := importedColumns(m)
	quoted, args := []string{"session_id"}, append([]any{sessionID}, vals...)
	for _, c := range names {
		quoted = append(quoted, quoteIdent(c))
	}
	cols := strings.Join(quoted, ", ")
	var id int64
	if m.ID != nil {
		err := tx.QueryRow(ctx, "INSERT INTO messages (id, "+cols+") VALUES ($1, "+placeholders(2, len(args))+") ON CONFLICT (id) DO NOTHING RETURNING id",
			append([]any{m.ID}, args...)...).Scan(&id)
		if err == nil || !noRows(err) {
			return id, err
		}
	}
	if err := beforeNew(); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, "INSERT INTO messages ("+cols+") VALUES ("+placeholders(1, len(args))+")", args...)
	return 0, err
}

// insertUsage inserts one usage row of an imported session; two rows of
// one route add up, as Hermes adds each call's usage to its row.
func insertUsage(ctx context.Context, tx pgx.Tx, sessionID string, u sessiondb.ImportRow) error {
	q, args := usageInsert(sessionID, u)
	_, err := tx.Exec(ctx, q, args...)
	return err
}

// usageInsert is the statement insertUsage runs, and its arguments.
func usageInsert(sessionID string, u sessiondb.ImportRow) (string, []any) {
	names := []string{"session_id"}
	var sums []string
	for _, c := range u.Cols {
		names = append(names, quoteIdent(c))
		if k := usageKinds[c]; (k == sessiondb.KindInteger || k == sessiondb.KindReal) && c != "first_seen" && c != "last_seen" {
			sums = append(sums, c+" = session_model_usage."+c+" + excluded."+c)
		}
	}
	q := "INSERT INTO session_model_usage (" + strings.Join(names, ", ") + ") VALUES (" + placeholders(1, len(names)) +
		") ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode) DO "
	if len(sums) == 0 {
		q += "NOTHING"
	} else {
		q += "UPDATE SET " + strings.Join(sums, ", ")
	}
	return q, append([]any{sessionID}, u.Vals...)
}

// ImportSession inserts one session of an export in one transaction (see
// sessiondb.ImportService); an existing id is skipped.
func (s *Store) ImportSession(ctx context.Context, rec map[string]any, opts sessiondb.ImportOptions) (sessiondb.ImportResult, error) {
	return sessiondb.ImportOne(ctx, &s.imports, importer{s}, rec, opts)
}

// ImportSessions imports several sessions in one transaction, each in a
// savepoint of its own, stopping at the first that fails: those before it
// are committed.
func (s *Store) ImportSessions(ctx context.Context, recs []map[string]any, opts sessiondb.ImportOptions) ([]sessiondb.ImportResult, error) {
	return sessiondb.ImportBatch(ctx, &s.imports, importer{s}, recs, opts)
}
