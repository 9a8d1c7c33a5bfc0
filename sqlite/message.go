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
	ms := newMessageScanner()
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
		return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.session_id = ?" + s.q.visible + cond + " ORDER BY m.id" + dir + " LIMIT ?"
	}
	return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.id IN (SELECT m.id FROM messages m WHERE m.session_id = ?" +
		s.q.visible + cond + " ORDER BY m.id" + dir + " LIMIT ?) ORDER BY m.id" + dir
}

// sessionMessagesSQL selects a session's messages in id order. Where the
// file has the (session_id, id) index the rows come straight from it, in
// order; else their ids come from the (session_id, timestamp) index and
// are looked up in rowid order, so SQLite never sorts whole rows (message
// text included), which ORDER BY id over the index's timestamp order
// would make it do.
func (s *Store) sessionMessagesSQL() string {
	if s.si.indexes["idx_messages_session_id"] {
		return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.session_id = ?" + s.q.visible + " ORDER BY m.id"
	}
	return "SELECT " + s.q.msgSel + " FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE session_id = ?)" + s.q.visible + " ORDER BY m.id"
}

// GetMessages returns every message of the session in insertion order
// (IMP-1); tool_calls decoded, reasoning_details and codex_reasoning_items
// as their JSON text. An unknown session has no messages.
func (s *Store) GetMessages(ctx context.Context, sessionID string) ([]sessiondb.Message, error) {
	return s.queryMessages(ctx, "get messages of "+sessionID, s.sessionMessagesSQL(), sessionID)
}

// defaultPageLimit is the page size of GetMessagesPage when Limit is 0.
const defaultPageLimit = 50

// GetMessagesPage returns one page of the session's messages in id order
// (IMP-12). With BeforeID it is the newest Limit messages older than it;
// with AfterID the oldest Limit newer than it; with neither the newest
// Limit. A page never splits a tool-call group (an assistant row and the
// tool rows that follow it): it grows at its far edge to keep the group
// whole.
func (s *Store) GetMessagesPage(ctx context.Context, sessionID string, p sessiondb.Page) (*sessiondb.MessagePage, error) {
	if err := p.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "get messages page of %s", sessionID)
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultPageLimit
	}
	what := "get messages page of " + sessionID
	var msgs []sessiondb.Message
	var err error
	forward := (p.AfterID > 0 || p.FromStart) && p.BeforeID == 0
	switch {
	case forward:
		msgs, err = s.queryMessages(ctx, what, s.pageSQL(" AND m.id > ?", false), sessionID, p.AfterID, limit)
	case p.AfterID > 0:
		msgs, err = s.queryMessages(ctx, what, s.pageSQL(" AND m.id > ? AND m.id < ?", false), sessionID, p.AfterID, p.BeforeID, limit)
		forward = true
	case p.BeforeID > 0:
		msgs, err = s.queryMessages(ctx, what, s.pageSQL(" AND m.id < ?", true), sessionID, p.BeforeID, limit)
		reverse(msgs)
	default:
		msgs, err = s.queryMessages(ctx, what, s.pageSQL("", true), sessionID, limit)
		reverse(msgs)
	}
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		if forward {
			// Extend the newest edge over the tool results that follow.
			last := msgs[len(msgs)-1]
			if last.Role == "tool" || (last.Role == "assistant" && len(last.ToolCalls) > 0) {
				more, err := s.followingTools(ctx, what, sessionID, last.ID)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, more...)
			}
		} else if msgs[0].Role == "tool" {
			// Extend the oldest edge back to the assistant row that made
			// the calls.
			more, err := s.precedingGroup(ctx, what, sessionID, msgs[0].ID)
			if err != nil {
				return nil, err
			}
			msgs = append(more, msgs...)
		}
	}
	page := &sessiondb.MessagePage{Messages: msgs}
	if page.Messages == nil {
		page.Messages = []sessiondb.Message{}
	}
	lo, hi := p.AfterID, p.BeforeID
	if len(msgs) > 0 {
		lo, hi = msgs[0].ID, msgs[len(msgs)-1].ID
	} else if hi == 0 && lo == 0 {
		return page, nil
	}
	// An empty page after a cursor still has the cursor's row before it
	// (and one before a cursor the row after it): the edge is inclusive.
	strict := len(msgs) > 0
	if lo > 0 {
		if page.HasBefore, err = s.anyVisible(ctx, sessionID, "<", strict, lo); err != nil {
			return nil, s.readErr(err, "%s", what)
		}
	}
	if hi > 0 {
		if page.HasAfter, err = s.anyVisible(ctx, sessionID, ">", strict, hi); err != nil {
			return nil, s.readErr(err, "%s", what)
		}
	}
	return page, nil
}

// anyVisible reports whether the session has a visible message whose id is
// op ("<" or ">") id, or equal to it too when not strict.
func (s *Store) anyVisible(ctx context.Context, sessionID, op string, strict bool, id int64) (bool, error) {
	if !strict {
		op += "="
	}
	var one int
	err := s.queryRow(ctx, "SELECT 1 FROM messages m WHERE m.session_id = ? AND m.id "+op+" ?"+s.q.visible+" LIMIT 1", sessionID, id).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil, err
}

func reverse(m []sessiondb.Message) {
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
}

// groupScan is how many rows one step of group widening reads.
const groupScan = 32

// followingTools returns the run of tool rows right after id.
func (s *Store) followingTools(ctx context.Context, what, sessionID string, id int64) ([]sessiondb.Message, error) {
	var out []sessiondb.Message
	for {
		next, err := s.queryMessages(ctx, what, s.pageSQL(" AND m.id > ?", false), sessionID, id, groupScan)
		if err != nil {
			return nil, err
		}
		for _, m := range next {
			if m.Role != "tool" {
				return out, nil
			}
			out = append(out, m)
			id = m.ID
		}
		if len(next) < groupScan {
			return out, nil
		}
	}
}

// precedingGroup returns the tool rows before id and the row that started
// them (normally the assistant row with the calls), oldest first.
func (s *Store) precedingGroup(ctx context.Context, what, sessionID string, id int64) ([]sessiondb.Message, error) {
	var out []sessiondb.Message
	for {
		prev, err := s.queryMessages(ctx, what, s.pageSQL(" AND m.id < ?", true), sessionID, id, groupScan)
		if err != nil {
			return nil, err
		}
		for _, m := range prev {
			out = append(out, m)
			id = m.ID
			if m.Role != "tool" {
				reverse(out)
				return out, nil
			}
		}
		if len(prev) < groupScan {
			reverse(out)
			return out, nil
		}
	}
}

// GetMessagesAsConversation returns the session in the replay form an
// OpenAI-style API takes back (spec 6). lastN > 0 keeps the last lastN
// entries, widened backwards so a tool result never loses the assistant
// row that called it.
func (s *Store) GetMessagesAsConversation(ctx context.Context, sessionID string, lastN int) ([]sessiondb.ConversationItem, error) {
	if err := sessiondb.CheckLastN(sessionID, lastN); err != nil {
		return nil, err
	}
	ms := newMessageScanner()
	raws, err := sqlitedb.Append(ctx, readers{s}, s.sessionMessagesSQL(), []any{sessionID}, nil, func(row sqlitedb.Row) (*rawMessage, error) {
		return ms.scan(row)
	})
	if err != nil {
		return nil, s.readErr(err, "conversation of %s", sessionID)
	}
	roles := make([]string, len(raws))
	for i, r := range raws {
		roles[i] = r.Role
	}
	start := sessiondb.ConversationStart(roles, lastN)
	out := make([]sessiondb.ConversationItem, 0, len(raws)-start)
	for _, r := range raws[start:] {
		it, bad := sessiondb.NewConversationItem(&r.Message, r.toolCalls.String, r.toolCalls.Valid)
		if bad {
			s.log.Warn("message has invalid tool_calls JSON; replaying it as []", "message_id", r.ID, "session_id", r.SessionID)
		}
		out = append(out, it)
	}
	return out, nil
}
