package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

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
func (s *Store) queryRaw(ctx context.Context, q querier, sql string, args ...any) ([]*rawMessage, error) {
	var out []*rawMessage
	err := each(ctx, q, sql, args, func(rows pgx.Rows) error {
		r, err := scanMessage(rows)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queryMessages runs q (selecting messageColumns) and returns its messages
// with tool_calls decoded; what names the operation in errors.
func (s *Store) queryMessages(ctx context.Context, what, sql string, args ...any) ([]sessiondb.Message, error) {
	raws, err := s.queryRaw(ctx, s.pool, sql, args...)
	if err != nil {
		return nil, s.readErr(err, "%s", what)
	}
	out := make([]sessiondb.Message, 0, len(raws))
	for _, r := range raws {
		s.decodeToolCalls(r)
		out = append(out, r.Message)
	}
	return out, nil
}

const sessionMessagesSQL = "SELECT " + messageColumns + " FROM messages m WHERE m.session_id = $1 ORDER BY m.id"

// GetMessages returns every message of the session in insertion order
// (IMP-1). An unknown session has no messages.
func (s *Store) GetMessages(ctx context.Context, sessionID string) ([]sessiondb.Message, error) {
	return s.queryMessages(ctx, "get messages of "+sessionID, sessionMessagesSQL, sessionID)
}

// defaultPageLimit is the page size of GetMessagesPage when Limit is 0.
const defaultPageLimit = 50

// groupScan is how many rows one step of group widening reads.
const groupScan = 32

// GetMessagesPage returns one page of the session's messages in id order
// (IMP-12), never splitting a tool-call group, as the sqlite backend does.
func (s *Store) GetMessagesPage(ctx context.Context, sessionID string, p sessiondb.Page) (*sessiondb.MessagePage, error) {
	if err := p.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "get messages page of %s", sessionID)
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultPageLimit
	}
	what := "get messages page of " + sessionID
	sel := "SELECT " + messageColumns + " FROM messages m WHERE m.session_id = $1"
	var msgs []sessiondb.Message
	var err error
	forward := (p.AfterID > 0 || p.FromStart) && p.BeforeID == 0
	switch {
	case forward:
		msgs, err = s.queryMessages(ctx, what, sel+" AND m.id > $2 ORDER BY m.id LIMIT $3", sessionID, p.AfterID, limit)
	case p.AfterID > 0:
		msgs, err = s.queryMessages(ctx, what, sel+" AND m.id > $2 AND m.id < $3 ORDER BY m.id LIMIT $4", sessionID, p.AfterID, p.BeforeID, limit)
		forward = true
	case p.BeforeID > 0:
		msgs, err = s.queryMessages(ctx, what, sel+" AND m.id < $2 ORDER BY m.id DESC LIMIT $3", sessionID, p.BeforeID, limit)
		reverse(msgs)
	default:
		msgs, err = s.queryMessages(ctx, what, sel+" ORDER BY m.id DESC LIMIT $2", sessionID, limit)
		reverse(msgs)
	}
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		if forward {
			last := msgs[len(msgs)-1]
			if last.Role == "tool" || (last.Role == "assistant" && len(last.ToolCalls) > 0) {
				more, err := s.followingTools(ctx, what, sel, sessionID, last.ID)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, more...)
			}
		} else if msgs[0].Role == "tool" {
			more, err := s.precedingGroup(ctx, what, sel, sessionID, msgs[0].ID)
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
	exists := func(cmp string, id int64) (bool, error) {
		var one bool
		err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = $1 AND "+cmp+")", sessionID, id).Scan(&one)
		if err != nil {
			return false, s.readErr(err, "%s", what)
		}
		return one, nil
	}
	if lo > 0 {
		// An empty page after a cursor still has the cursor's row before it.
		cmp := "m.id < $2"
		if len(msgs) == 0 {
			cmp = "m.id <= $2"
		}
		if page.HasBefore, err = exists(cmp, lo); err != nil {
			return nil, err
		}
	}
	if hi > 0 {
		cmp := "m.id > $2"
		if len(msgs) == 0 {
			cmp = "m.id >= $2"
		}
		if page.HasAfter, err = exists(cmp, hi); err != nil {
			return nil, err
		}
	}
	return page, nil
}

func reverse(m []sessiondb.Message) {
	for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
		m[i], m[j] = m[j], m[i]
	}
}

// followingTools returns the run of tool rows right after id.
func (s *Store) followingTools(ctx context.Context, what, sel, sessionID string, id int64) ([]sessiondb.Message, error) {
	var out []sessiondb.Message
	for {
		next, err := s.queryMessages(ctx, what, sel+" AND m.id > $2 ORDER BY m.id LIMIT $3", sessionID, id, groupScan)
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
// them, oldest first.
func (s *Store) precedingGroup(ctx context.Context, what, sel, sessionID string, id int64) ([]sessiondb.Message, error) {
	var out []sessiondb.Message
	for {
		prev, err := s.queryMessages(ctx, what, sel+" AND m.id < $2 ORDER BY m.id DESC LIMIT $3", sessionID, id, groupScan)
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
	roles := make([]string, len(raws))
	for i, r := range raws {
		roles[i] = r.Role
	}
	start := sessiondb.ConversationStart(roles, lastN)
	out := make([]sessiondb.ConversationItem, 0, len(raws)-start)
	for _, r := range raws[start:] {
		var tc string
		if r.toolCalls != nil {
			tc = *r.toolCalls
		}
		it, bad := sessiondb.NewConversationItem(&r.Message, tc, r.toolCalls != nil)
		if bad {
			s.log.Warn("message has invalid tool_calls JSON; replaying it as []", "message_id", r.ID, "session_id", r.SessionID)
		}
		out = append(out, it)
	}
	return out, nil
}
