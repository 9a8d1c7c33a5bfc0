package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// encodeJSONField returns the SQL value a JSON column stores for v
// (sessiondb.MarshalJSONField, then sessiondb.StoredJSON): nil for NULL.
func encodeJSONField(field string, v any) (any, error) {
	b, err := sessiondb.MarshalJSONField(field, v)
	if err != nil {
		return nil, err
	}
	return storedJSON(b), nil
}

// storedJSON is sessiondb.StoredJSON as an SQL value, nil for NULL.
func storedJSON(b []byte) any {
	if t, ok := sessiondb.StoredJSON(b); ok {
		return t
	}
	return nil
}

// storedToolCallCount is sessiondb.StoredToolCallCount of a column.
func storedToolCallCount(text sql.NullString) int64 {
	return sessiondb.StoredToolCallCount(text.String, text.Valid)
}

const insertMessageSQL = `INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,
    token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// AppendMessage inserts a message stamped now and bumps the session's
// message and tool call counters, in one transaction shared with other
// concurrent appends (group commit). Content is stored exactly as given,
// including NUL bytes and invalid UTF-8. An unknown session is invalid.
func (s *Store) AppendMessage(ctx context.Context, m sessiondb.NewMessage) (int64, error) {
	if err := m.Validate(); err != nil {
		return 0, inputErr(err, "append message to", m.SessionID)
	}
	// tool_calls is marshalled once, for the stored text and the count.
	tcJSON, err := sessiondb.MarshalJSONField("tool_calls", m.ToolCalls)
	if err != nil {
		return 0, sessiondb.Wrap("", err, "append message to %s", m.SessionID)
	}
	tc, n := storedJSON(tcJSON), sessiondb.ToolCallCount(tcJSON)
	rd, err := encodeJSONField("reasoning_details", m.ReasoningDetails)
	if err != nil {
		return 0, sessiondb.Wrap("", err, "append message to %s", m.SessionID)
	}
	cr, err := encodeJSONField("codex_reasoning_items", m.CodexReasoningItems)
	if err != nil {
		return 0, sessiondb.Wrap("", err, "append message to %s", m.SessionID)
	}
	var tokens any
	if m.TokenCount != nil {
		tokens = *m.TokenCount
	}
	now := s.epochNow()
	var id int64
	err = s.write(ctx, "append message to "+m.SessionID, func(tx *sqlitedb.Tx) error {
		res, err := tx.Exec(insertMessageSQL, m.SessionID, m.Role, optStr(m.Content), optStr(m.ToolCallID), tc, optStr(m.ToolName), now,
			tokens, optStr(m.FinishReason), optStr(m.Reasoning), rd, cr)
		if sqlitedb.IsForeignKey(err) {
			return sessiondb.Errorf(sessiondb.EINVALID, "append message: session %q does not exist", m.SessionID)
		}
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.Exec("UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?", n, m.SessionID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// decodeToolCalls turns a stored tool_calls text into the Message field:
// NULL or "" → nil; invalid JSON → [] with a warning.
func (s *Store) decodeToolCalls(r *rawMessage) {
	if !r.toolCalls.Valid || r.toolCalls.String == "" {
		return
	}
	b := []byte(r.toolCalls.String)
	if !json.Valid(b) {
		s.log.Warn("message has invalid tool_calls JSON; reading it as []", "message_id", r.ID, "session_id", r.SessionID)
		r.ToolCalls = json.RawMessage("[]")
		return
	}
	r.ToolCalls = json.RawMessage(b)
}

// queryMessages runs q, which selects s.q.msgSel, and returns its messages
// with tool_calls decoded; what names the operation in errors.
func (s *Store) queryMessages(ctx context.Context, what, q string, args ...any) ([]sessiondb.Message, error) {
	ms := s.q.newMessageScanner()
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.Message{}, func(row sqlitedb.Row) (sessiondb.Message, error) {
		r, err := ms.scan(row)
		if err != nil {
			return sessiondb.Message{}, err
		}
		s.decodeToolCalls(r)
		return r.Message, nil
	})
	if err != nil {
		return nil, s.readErr(err, "%s", what)
	}
	return out, nil
}

// pageSQL selects the session's visible messages that also match cond
// (alias m, with its own arguments after the session id) in id order,
// ascending or descending, at most LIMIT (the last argument) of them.
// Where the file has the (session_id, id) index the page is a seek in it,
// in order. Else the page's ids are cut from the (session_id, timestamp)
// index first and only its rows are read: ORDER BY id over the session's
// rows would sort every row of a long session, text and all, to keep
// fifty (150 ms against 13 ms on a 20,000-message session).
func (s *Store) pageSQL(cond string, desc bool) string {
	dir := ""
	if desc {
		dir = " DESC"
	}
	if s.si.indexes["idx_messages_session_id"] {
		return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.session_id = ?" + s.q.live + cond + " ORDER BY m.id" + dir + " LIMIT ?"
	}
	return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.id IN (SELECT m.id FROM messages m WHERE m.session_id = ?" +
		s.q.live + cond + " ORDER BY m.id" + dir + " LIMIT ?) ORDER BY m.id" + dir
}

// sessionMessagesSQL selects a session's messages in id order. Where the
// file has the (session_id, id) index the rows come straight from it, in
// order; else their ids come from the (session_id, timestamp) index and
// are looked up in rowid order, so SQLite never sorts whole rows (message
// text included), which ORDER BY id over the index's timestamp order
// would make it do.
func (s *Store) sessionMessagesSQL() string {
	if s.si.indexes["idx_messages_session_id"] {
		return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.session_id = ?" + s.q.live + " ORDER BY m.id"
	}
	return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE session_id = ?)" + s.q.live + " ORDER BY m.id"
}

// GetMessages returns every message of the session in insertion order
// (IMP-1); tool_calls decoded, reasoning_details and codex_reasoning_items
// as their JSON text. An unknown session has no messages.
func (s *Store) GetMessages(ctx context.Context, sessionID string) ([]sessiondb.Message, error) {
	return s.queryMessages(ctx, "get messages of "+sessionID, s.sessionMessagesSQL(), sessionID)
}

// GetMessagesPage returns one page of the session's messages in id order
// (IMP-12), cut and widened over tool-call groups by
// sessiondb.ReadMessagePage.
func (s *Store) GetMessagesPage(ctx context.Context, sessionID string, p sessiondb.Page) (*sessiondb.MessagePage, error) {
	return sessiondb.ReadMessagePage(ctx, pageReader{s}, sessionID, p)
}

// pageReader reads the visible messages of GetMessagesPage
// (sessiondb.MessageReader).
type pageReader struct{ s *Store }

func (r pageReader) MessagesIn(ctx context.Context, sessionID string, ids sessiondb.IDRange, newest bool, limit int) ([]sessiondb.Message, error) {
	cond, args := "", []any{sessionID}
	if ids.HasAfter {
		cond, args = cond+" AND m.id > ?", append(args, ids.After)
	}
	if ids.HasBefore {
		cond, args = cond+" AND m.id < ?", append(args, ids.Before)
	}
	return r.s.queryMessages(ctx, "get messages page of "+sessionID, r.s.pageSQL(cond, newest), append(args, limit)...)
}

func (r pageReader) AnyMessage(ctx context.Context, sessionID, op string, id int64) (bool, error) {
	var one int
	err := r.s.queryRow(ctx, "SELECT 1 FROM messages m WHERE m.session_id = ? AND m.id "+op+" ?"+r.s.q.live+" LIMIT 1", sessionID, id).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, r.s.readErr(err, "get messages page of %s", sessionID)
	}
	return true, nil
}

// GetMessagesAsConversation returns the session in the replay form an
// OpenAI-style API takes back (spec 6). lastN > 0 keeps the last lastN
// entries, widened backwards so a tool result never loses the assistant
// row that called it.
func (s *Store) GetMessagesAsConversation(ctx context.Context, sessionID string, lastN int) ([]sessiondb.ConversationItem, error) {
	if err := sessiondb.CheckLastN(sessionID, lastN); err != nil {
		return nil, err
	}
	ms := s.q.newMessageScanner()
	raws, err := sqlitedb.Append(ctx, readers{s}, s.sessionMessagesSQL(), []any{sessionID}, nil, func(row sqlitedb.Row) (*rawMessage, error) {
		return ms.scan(row)
	})
	if err != nil {
		return nil, s.readErr(err, "conversation of %s", sessionID)
	}
	return sessiondb.ReplayConversation(len(raws), lastN, func(i int) (*sessiondb.Message, string, bool) {
		return &raws[i].Message, raws[i].toolCalls.String, raws[i].toolCalls.Valid
	}, s.log), nil
}
