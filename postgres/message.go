package postgres

import (
	"context"
	"encoding/json"

	"github.com/sessiondb/sessiondb"
)

// optText returns the stored JSON text of a JSON field as a column value.
func optText(b []byte) *string {
	if t, ok := sessiondb.StoredJSON(b); ok {
		return &t
	}
	return nil
}

// AppendMessage inserts a message stamped now and bumps the session's
// message and tool call counters in the same transaction, shared with
// other appends queued at the same moment (group commit). Content is kept
// exactly, NUL bytes and invalid UTF-8 included. An unknown session is
// invalid.
func (s *Store) AppendMessage(ctx context.Context, m sessiondb.NewMessage) (int64, error) {
	if err := m.Validate(); err != nil {
		return 0, sessiondb.Wrap("", err, "append message to %s", m.SessionID)
	}
	if s.readOnly {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "append message to %s: store opened read-only", m.SessionID)
	}
	fail := func(err error) (int64, error) { return 0, sessiondb.Wrap("", err, "append message to %s", m.SessionID) }
	tcJSON, err := sessiondb.MarshalJSONField("tool_calls", m.ToolCalls)
	if err != nil {
		return fail(err)
	}
	rd, err := sessiondb.MarshalJSONField("reasoning_details", m.ReasoningDetails)
	if err != nil {
		return fail(err)
	}
	cr, err := sessiondb.MarshalJSONField("codex_reasoning_items", m.CodexReasoningItems)
	if err != nil {
		return fail(err)
	}
	sid, role := m.SessionID, m.Role
	for _, f := range []struct {
		name string
		v    *string
	}{{"session_id", &sid}, {"role", &role}, {"tool_name", m.ToolName}, {"tool_call_id", m.ToolCallID}, {"finish_reason", m.FinishReason}, {"reasoning", m.Reasoning}} {
		if err := checkText(f.name, f.v); err != nil {
			return fail(err)
		}
	}
	text, raw := storableContent(m.Content)
	r := &appendReq{
		sessionID: m.SessionID,
		args: []any{m.Role, text, raw, m.ToolCallID, optText(tcJSON), m.ToolName, s.epochNow(),
			m.TokenCount, m.FinishReason, m.Reasoning, optText(rd), optText(cr)},
		toolCalls: sessiondb.ToolCallCount(tcJSON),
	}
	return s.app.append(ctx, r)
}

// decodeToolCalls sets the Message's ToolCalls from the stored text:
// NULL or "" → nil; invalid JSON → [] with a warning.
func (s *Store) decodeToolCalls(r *rawMessage) {
	if r.toolCalls == nil || *r.toolCalls == "" {
		return
	}
	b := []byte(*r.toolCalls)
	if !json.Valid(b) {
		s.log.Warn("message has invalid tool_calls JSON; reading it as []", "message_id", r.ID, "session_id", r.SessionID)
		r.ToolCalls = json.RawMessage("[]")
		return
	}
	r.ToolCalls = json.RawMessage(b)
}

// queryRaw runs q, which selects messageColumns, and returns the rows as
// stored.
func (s *Store) queryRaw(ctx context.Context, q querier, sql string, args ...any) ([]rawMessage, error) {
	return appendRows(ctx, q, sql, args, nil, scanMessage)
}

// queryMessages runs q (selecting messageColumns) and returns its messages
// with tool_calls decoded; what names the operation in errors.
func (s *Store) queryMessages(ctx context.Context, what, sql string, args ...any) ([]sessiondb.Message, error) {
	raws, err := s.queryRaw(ctx, s.pool, sql, args...)
	if err != nil {
		return nil, s.readErr(err, "%s", what)
	}
	out := make([]sessiondb.Message, 0, len(raws))
	for i := range raws {
		s.decodeToolCalls(&raws[i])
		out = append(out, raws[i].Message)
	}
	return out, nil
}

// live keeps the rows of the conversation Hermes resumes: a row a rewind
// took back (active 0) or an in-place compaction summarised away (active
// 0, compacted 1) is not read as a message (docs/hermes-versions.md 4.1).
const live = " AND m.active = 1"

const sessionMessagesSQL = "SELECT " + messageColumns + " FROM messages m WHERE m.session_id = $1" + live + " ORDER BY m.id"

// GetMessages returns the session's messages in insertion order (IMP-1):
// the live ones, as Hermes' get_messages. An unknown session has no
// messages.
func (s *Store) GetMessages(ctx context.Context, sessionID string) ([]sessiondb.Message, error) {
	return s.queryMessages(ctx, "get messages of "+sessionID, sessionMessagesSQL, sessionID)
}

// GetMessagesPage returns one page of the session's messages in id order
// (IMP-12), cut and widened over tool-call groups by
// sessiondb.ReadMessagePage, as the sqlite backend's.
func (s *Store) GetMessagesPage(ctx context.Context, sessionID string, p sessiondb.Page) (*sessiondb.MessagePage, error) {
	return sessiondb.ReadMessagePage(ctx, pageReader{s}, sessionID, p)
}

// pageReader reads the messages of GetMessagesPage
// (sessiondb.MessageReader).
type pageReader struct{ s *Store }

func (r pageReader) MessagesIn(ctx context.Context, sessionID string, ids sessiondb.IDRange, newest bool, limit int) ([]sessiondb.Message, error) {
	q, args := "SELECT "+messageColumns+" FROM messages m WHERE m.session_id = $1"+live, []any{sessionID}
	if ids.HasAfter {
		args = append(args, ids.After)
		q += " AND m.id > $" + itoa(len(args))
	}
	if ids.HasBefore {
		args = append(args, ids.Before)
		q += " AND m.id < $" + itoa(len(args))
	}
	q += " ORDER BY m.id"
	if newest {
		q += " DESC"
	}
	args = append(args, limit)
	return r.s.queryMessages(ctx, "get messages page of "+sessionID, q+" LIMIT $"+itoa(len(args)), args...)
}

func (r pageReader) AnyMessage(ctx context.Context, sessionID, op string, id int64) (bool, error) {
	var one bool
	err := r.s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = $1 AND m.id "+op+" $2"+live+")", sessionID, id).Scan(&one)
	if err != nil {
		return false, r.s.readErr(err, "get messages page of %s", sessionID)
	}
	return one, nil
}

// GetMessagesAsConversation returns the session in replay form (spec 6);
// lastN > 0 keeps the last lastN entries, widened so a tool result keeps
// the assistant row that called it.
func (s *Store) GetMessagesAsConversation(ctx context.Context, sessionID string, lastN int) ([]sessiondb.ConversationItem, error) {
	if err := sessiondb.CheckLastN(sessionID, lastN); err != nil {
		return nil, err
	}
	raws, err := s.queryRaw(ctx, s.pool, sessionMessagesSQL, sessionID)
	if err != nil {
		return nil, s.readErr(err, "conversation of %s", sessionID)
	}
	return sessiondb.ReplayConversation(len(raws), lastN, func(i int) (*sessiondb.Message, string, bool) {
		if tc := raws[i].toolCalls; tc != nil {
			return &raws[i].Message, *tc, true
		}
		return &raws[i].Message, "", false
	}, s.log), nil
}
