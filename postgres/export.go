package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// sessionRecord is the export form of a session row: every v6 column
// under its snake_case name, integers as int64, NULL as nil.
func sessionRecord(x *sessiondb.Session) map[string]any {
	str := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	num := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	return map[string]any{
		"id": x.ID, "source": x.Source, "user_id": str(x.UserID), "model": str(x.Model), "model_config": str(x.ModelConfig),
		"system_prompt": str(x.SystemPrompt), "parent_session_id": str(x.ParentSessionID), "started_at": x.StartedAt,
		"ended_at": num(x.EndedAt), "end_reason": str(x.EndReason), "message_count": x.MessageCount, "tool_call_count": x.ToolCallCount,
		"input_tokens": x.InputTokens, "output_tokens": x.OutputTokens, "cache_read_tokens": x.CacheReadTokens,
		"cache_write_tokens": x.CacheWriteTokens, "reasoning_tokens": x.ReasoningTokens, "billing_provider": str(x.BillingProvider),
		"billing_base_url": str(x.BillingBaseURL), "billing_mode": str(x.BillingMode), "estimated_cost_usd": num(x.EstimatedCostUSD),
		"actual_cost_usd": num(x.ActualCostUSD), "cost_status": str(x.CostStatus), "cost_source": str(x.CostSource),
		"pricing_version": str(x.PricingVersion), "title": str(x.Title),
	}
}

// ExportSession returns the session row with every column under its
// snake_case name, plus "messages" = GetMessages; missing is not_found.
func (s *Store) ExportSession(ctx context.Context, id string) (map[string]any, error) {
	x, err := s.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs, err := s.GetMessages(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := sessionRecord(x)
	rec["messages"] = msgs
	return rec, nil
}

// ExportSessionPages hands row the session row ExportSession returns,
// without "messages", then page its messages a page at a time
// (sessiondb.ExportPages), as the sqlite backend's.
func (s *Store) ExportSessionPages(ctx context.Context, id string, row func(map[string]any) error, page func([]sessiondb.Message) error) error {
	x, err := s.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if err := row(sessionRecord(x)); err != nil {
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

// sessionKinds and messageKinds are the importable columns and what each
// takes. message_count and tool_call_count are recomputed, never taken.
var sessionKinds = map[string]sessiondb.ColumnKind{
	"id": sessiondb.KindText, "source": sessiondb.KindText, "user_id": sessiondb.KindText, "model": sessiondb.KindText,
	"model_config": sessiondb.KindJSON, "system_prompt": sessiondb.KindText, "parent_session_id": sessiondb.KindText,
	"started_at": sessiondb.KindReal, "ended_at": sessiondb.KindReal, "end_reason": sessiondb.KindText,
	"input_tokens": sessiondb.KindInteger, "output_tokens": sessiondb.KindInteger, "cache_read_tokens": sessiondb.KindInteger,
	"cache_write_tokens": sessiondb.KindInteger, "reasoning_tokens": sessiondb.KindInteger,
	"billing_provider": sessiondb.KindText, "billing_base_url": sessiondb.KindText, "billing_mode": sessiondb.KindText,
	"estimated_cost_usd": sessiondb.KindReal, "actual_cost_usd": sessiondb.KindReal, "cost_status": sessiondb.KindText,
	"cost_source": sessiondb.KindText, "pricing_version": sessiondb.KindText, "title": sessiondb.KindText,
}

var messageKinds = map[string]sessiondb.ColumnKind{
	"id": sessiondb.KindInteger, "role": sessiondb.KindText, "content": sessiondb.KindText, "tool_call_id": sessiondb.KindText,
	"tool_calls": sessiondb.KindJSON, "tool_name": sessiondb.KindText, "timestamp": sessiondb.KindReal,
	"token_count": sessiondb.KindInteger, "finish_reason": sessiondb.KindText, "reasoning": sessiondb.KindText,
	"reasoning_details": sessiondb.KindJSON, "codex_reasoning_items": sessiondb.KindJSON,
}

// importColumns converts a record's values by each column's kind
// (sessionKinds, messageKinds), refusing text PostgreSQL cannot hold in a
// column other than message content (stored as bytes when needed); a
// message's empty tool_calls is stored as NULL.
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

func (b importer) Prepare(rec map[string]any) (*sessiondb.PreparedImport, error) {
	return sessiondb.PrepareImport(rec, importColumns)
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
		return false, "", sessiondb.Wrap(sessiondb.ECONFLICT, err, "import session %s (its title may be taken)", p.ID)
	}
	if err != nil {
		return false, "", err
	}
	if tag.RowsAffected() == 0 {
		return false, "", nil // already there: skipped, nothing changed
	}
	// Kept ids may lie ahead of the id sequence: it is moved past them
	// before the next row that takes its id from it, and at the end, so
	// no later append picks one of them.
	var ahead int64
	for i, m := range p.Messages {
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
		ahead = max(ahead, id)
	}
	if ahead > 0 {
		if err := s.advanceSequence(ctx, tx, ahead); err != nil {
			return false, "", err
		}
	}
	return true, missingParent, nil
}

func (t importTx) LinkChild(parent, child string) error {
	_, err := t.tx.Exec(t.ctx, "UPDATE sessions SET parent_session_id = $1 WHERE id = $2 AND parent_session_id IS NULL", parent, child)
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

// advanceSequence moves the message id sequence to at least id.
func (s *Store) advanceSequence(ctx context.Context, tx pgx.Tx, id int64) error {
	var seq string
	if err := tx.QueryRow(ctx, "SELECT pg_get_serial_sequence('messages', 'id')").Scan(&seq); err != nil {
		return err
	}
	// seq comes back quoted as needed: it is an identifier, not a value.
	_, err := tx.Exec(ctx, "SELECT setval($1::regclass, $2) FROM "+seq+" WHERE last_value < $2", seq, id)
	return err
}

// insertImported inserts one message, with its original id when that id
// is free, and returns the id it kept (0 when it took a new one, after
// calling beforeNew).
func insertImported(ctx context.Context, tx pgx.Tx, sessionID string, m sessiondb.ImportRow, beforeNew func() error) (int64, error) {
	names, args := []string{"session_id"}, []any{sessionID}
	for i, c := range m.Cols {
		v := m.Vals[i]
		if t, ok := v.(string); ok && c == "content" {
			text, raw := storableContent(&t)
			names, args = append(names, "content_bytes"), append(args, raw)
			v = *text
		}
		names, args = append(names, quoteIdent(c)), append(args, v)
	}
	cols := strings.Join(names, ", ")
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

// ImportSession inserts one session of an export in one transaction (see
// sessiondb.ImportService); an existing id is skipped.
func (s *Store) ImportSession(ctx context.Context, rec map[string]any) (bool, error) {
	return sessiondb.ImportOne(ctx, &s.imports, importer{s}, rec)
}

// ImportSessions imports several sessions in one transaction, each in a
// savepoint of its own, stopping at the first that fails: those before it
// are committed.
func (s *Store) ImportSessions(ctx context.Context, recs []map[string]any) (imported []bool, err error) {
	return sessiondb.ImportBatch(ctx, &s.imports, importer{s}, recs)
}
