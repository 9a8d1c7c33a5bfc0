package sessiondb

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// Message is one row of the messages table. ToolCalls is decoded (invalid
// stored JSON reads as an empty list); ReasoningDetails,
// CodexReasoningItems and CodexMessageItems stay JSON text as Hermes
// returns them. Content is the stored text: a newer Hermes stores a
// multimodal message's list of parts as StructuredPrefix and its JSON,
// and in JSON a Message gives such content as that list (MarshalJSON),
// as Hermes' get_messages does.
//
// The fields after CodexReasoningItems are the columns a newer Hermes
// added (schema 7 to 21, docs/hermes-versions.md), named as its columns
// are; a store without a column reads its default (NULL, observed 0,
// active 1, compacted 0).
type Message struct {
	ID                  int64           `json:"id"`
	SessionID           string          `json:"session_id"`
	Role                string          `json:"role"`
	Content             *string         `json:"content"`
	ToolCallID          *string         `json:"tool_call_id"`
	ToolCalls           json.RawMessage `json:"tool_calls"`
	ToolName            *string         `json:"tool_name"`
	Timestamp           float64         `json:"timestamp"`
	TokenCount          *int64          `json:"token_count"`
	FinishReason        *string         `json:"finish_reason"`
	Reasoning           *string         `json:"reasoning"`
	ReasoningDetails    *string         `json:"reasoning_details"`
	CodexReasoningItems *string         `json:"codex_reasoning_items"`
	// ReasoningContent is the provider's reasoning text as it returned
	// it (schema 7); Hermes replays it on assistant rows, "" included.
	ReasoningContent *string `json:"reasoning_content"`
	// CodexMessageItems is the Codex Responses API's message items, as
	// JSON text (schema 9).
	CodexMessageItems *string `json:"codex_message_items"`
	// PlatformMessageID is the chat platform's id of the message
	// (schema 12); the replay form calls it message_id.
	PlatformMessageID *string `json:"platform_message_id"`
	// Observed is 1 for a group message the agent saw but was not
	// addressed by (schema 13): context, not a turn of the user.
	Observed int64 `json:"observed"`
	// EffectDisposition is a tool row's effect: "none" or "unknown".
	EffectDisposition *string `json:"effect_disposition"`
	// Active is 0 for a row a rewind took back or a compaction
	// summarised away; Compacted is 1 for the latter. Reads of the
	// conversation return active rows only (docs/hermes-versions.md 4.1).
	Active    int64 `json:"active"`
	Compacted int64 `json:"compacted"`
}

// MarshalJSON writes m as Hermes' get_messages gives a row: content a
// newer Hermes stored as its list of parts (StructuredPrefix and a JSON
// list or object) as that list, every other content as its text.
func (m Message) MarshalJSON() ([]byte, error) {
	type row Message
	if m.Content == nil || !strings.HasPrefix(*m.Content, StructuredPrefix) {
		return json.Marshal(row(m))
	}
	return json.Marshal(struct {
		row
		Content any `json:"content"`
	}{row(m), ExportValue("content", *m.Content)})
}

// UnmarshalJSON reads what MarshalJSON writes: content given as a list of
// parts (or an object) is kept as Hermes stores it (StructuredPrefix and
// json.dumps' text, KindContent).
func (m *Message) UnmarshalJSON(b []byte) error {
	type row Message
	in := struct {
		*row
		Content json.RawMessage `json:"content"`
	}{row: (*row)(m)}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	m.Content = nil
	switch c := bytes.TrimSpace(in.Content); {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		m.Content = &s
	default:
		v, err := ImportValue("content", KindContent, json.RawMessage(c))
		if err != nil {
			return err
		}
		s, _ := v.(string)
		m.Content = &s
	}
	return nil
}

// Live reports whether m is part of the conversation Hermes resumes:
// neither rewound nor compacted away.
func (m *Message) Live() bool { return m.Active != 0 }

// StructuredPrefix marks content that a newer Hermes stores as JSON.
const StructuredPrefix = "\x00json:"

// StructuredContent returns the decoded JSON of content written by a newer
// Hermes as "\x00json:<json>", and ok=false for plain text.
func (m *Message) StructuredContent() (json.RawMessage, bool) {
	if m.Content == nil {
		return nil, false
	}
	body, ok := strings.CutPrefix(*m.Content, StructuredPrefix)
	raw := json.RawMessage(body)
	if !ok || !json.Valid(raw) {
		return nil, false
	}
	return raw, true
}

// NewMessage is the input of AppendMessage. ToolCalls, ReasoningDetails and
// CodexReasoningItems are stored as JSON only when truthy (non-nil and not an
// empty list, object or string). The session's tool_call_count grows by the
// length of a ToolCalls list, or 1 for any other non-nil value.
type NewMessage struct {
	SessionID           string
	Role                string
	Content             *string
	ToolName            *string
	ToolCallID          *string
	FinishReason        *string
	Reasoning           *string
	ToolCalls           any
	ReasoningDetails    any
	CodexReasoningItems any
	TokenCount          *int64
}

// Validate checks that m names its session (an id CheckSessionID accepts)
// and role. The error is invalid
// and names the field. Whether ToolCalls, ReasoningDetails and
// CodexReasoningItems encode as JSON is found when the backend encodes them
// (once, for storing), and reported naming the field too.
func (m NewMessage) Validate() error {
	if err := CheckSessionID(m.SessionID); err != nil {
		return err
	}
	if m.Role == "" {
		return Errorf(EINVALID, "role is empty")
	}
	return nil
}

// ConversationItem is one entry of GetMessagesAsConversation, in the shape
// an OpenAI-style chat API takes back. Only the keys Hermes emits are set.
type ConversationItem map[string]any

// Page selects a window of messages by id (IMP-12). BeforeID/AfterID are
// exclusive cursors; 0 means unset. Limit 0 means 50. Without cursors the
// page is the newest Limit messages, or with FromStart the oldest (a
// transcript read from its beginning).
type Page struct {
	BeforeID  int64
	AfterID   int64
	Limit     int
	FromStart bool
}

// Validate refuses a negative limit or cursor (invalid).
func (p Page) Validate() error {
	if p.Limit < 0 || p.BeforeID < 0 || p.AfterID < 0 {
		return Errorf(EINVALID, "limit and cursors must not be negative")
	}
	return nil
}

// MessagePage is one page of messages in id order with cursors to move on.
type MessagePage struct {
	Messages []Message `json:"messages"`
	// HasBefore/HasAfter tell whether older/newer messages exist.
	HasBefore bool `json:"has_before"`
	HasAfter  bool `json:"has_after"`
}

// MessageService is the message half of the history store contract
// (spec/history-store.md section 6).
type MessageService interface {
	// AppendMessage inserts a message (timestamp = now) and bumps the
	// session's counters in one transaction; an unknown session is invalid.
	// Concurrent calls share commits (group commit); each returns only after
	// the commit holding its row.
	AppendMessage(ctx context.Context, m NewMessage) (int64, error)
	// GetMessages returns every message of the session in insertion order.
	GetMessages(ctx context.Context, sessionID string) ([]Message, error)
	GetMessagesPage(ctx context.Context, sessionID string, p Page) (*MessagePage, error)
	// GetMessagesAsConversation returns the replay form; lastN > 0 keeps only
	// the last lastN entries, widened so no tool-call group is split.
	GetMessagesAsConversation(ctx context.Context, sessionID string, lastN int) ([]ConversationItem, error)
	SearchMessages(ctx context.Context, query string, f SearchFilter) ([]SearchHit, error)
	// ExportSession returns the session row with all stored columns, plus
	// "messages": every stored row of the session in id order, hidden
	// ones (rewound, compacted) included with their active and compacted
	// marks, each with every column the store keeps (ExportValue: content
	// parts and tool_calls decoded as Hermes' export gives them), and,
	// where the store keeps them, UsageKey: the session's usage rows by
	// model. not_found when missing.
	ExportSession(ctx context.Context, id string) (map[string]any, error)
	// ExportAll streams every session (optionally of one source) newest
	// first; yield returning an error stops and returns it.
	ExportAll(ctx context.Context, source string, yield func(map[string]any) error) error
	// ExportSessionPages is ExportSession for a session too large to hold:
	// row gets the session row (ExportSession's record without
	// "messages"), then page gets its message rows in id order, a page at
	// a time, each page a read of its own of about ExportPageBytes
	// (ExportPages). not_found when missing, before row is called; an
	// error of row or page stops and is returned.
	ExportSessionPages(ctx context.Context, id string, row func(map[string]any) error, page func([]map[string]any) error) error
}

// MessageRoles are the roles a message of a Hermes store has: what a
// search's role filter may name.
func MessageRoles() []string { return []string{"user", "assistant", "tool", "system"} }

// CheckRoles refuses (invalid, naming field and listing the roles) a role
// filter that names a role no message has, which would otherwise match
// nothing without saying why.
func CheckRoles(field string, roles []string) error {
	valid := MessageRoles()
	for _, r := range roles {
		if !slices.Contains(valid, r) {
			return Errorf(EINVALID, "%s %q: want one of %s", field, r, strings.Join(valid, ", "))
		}
	}
	return nil
}
