package sessiondb

import (
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"unicode/utf8"
)

// NewConversationItem builds the replay form of one stored message (spec
// 6): role and content (null when NULL), tool_call_id and tool_name when
// non-empty, tool_calls decoded from its stored text when there is one
// (rawToolCalls, valid=false for NULL), and for assistant rows reasoning
// when non-empty and reasoning_details and codex_reasoning_items decoded.
// Stored tool_calls that are not JSON replay as [] and badToolCalls tells
// the caller to warn; undecodable reasoning fields replay as null.
func NewConversationItem(m *Message, rawToolCalls string, valid bool) (it ConversationItem, badToolCalls bool) {
	it = ConversationItem{"role": m.Role}
	if m.Content != nil {
		it["content"] = *m.Content
	} else {
		it["content"] = nil
	}
	if m.ToolCallID != nil && *m.ToolCallID != "" {
		it["tool_call_id"] = *m.ToolCallID
	}
	if m.ToolName != nil && *m.ToolName != "" {
		it["tool_name"] = *m.ToolName
	}
	if valid && rawToolCalls != "" {
		var v any
		if err := json.Unmarshal([]byte(rawToolCalls), &v); err != nil {
			badToolCalls = true
			v = []any{}
		}
		it["tool_calls"] = v
	}
	if m.Role == "assistant" {
		if m.Reasoning != nil && *m.Reasoning != "" {
			it["reasoning"] = *m.Reasoning
		}
		for key, p := range map[string]*string{"reasoning_details": m.ReasoningDetails, "codex_reasoning_items": m.CodexReasoningItems} {
			if p == nil || *p == "" {
				continue
			}
			var v any
			if json.Unmarshal([]byte(*p), &v) != nil {
				v = nil
			}
			it[key] = v
		}
	}
	return it, badToolCalls
}

// ConversationStart returns the index of the first of a session's messages
// (their roles, in insertion order) that GetMessagesAsConversation keeps
// for lastN: the last lastN, widened back so a tool result never loses the
// assistant row that called it; 0 (all) when lastN is 0 or covers them.
func ConversationStart(roles []string, lastN int) int {
	if lastN <= 0 || lastN >= len(roles) {
		return 0
	}
	start := len(roles) - lastN
	for start > 0 && roles[start] == "tool" {
		start--
	}
	return start
}

// ReplayConversation is the tail of GetMessagesAsConversation for every
// backend, over a session's n stored messages in insertion order: row(i)
// gives the i-th with its tool_calls text (has false for NULL). It keeps
// the rows ConversationStart keeps for lastN, each in NewConversationItem's
// form, and warns on log about stored tool_calls that are not JSON (they
// replay as []).
func ReplayConversation(n, lastN int, row func(i int) (m *Message, toolCalls string, has bool), log *slog.Logger) []ConversationItem {
	roles := make([]string, n)
	for i := range roles {
		m, _, _ := row(i)
		roles[i] = m.Role
	}
	start := ConversationStart(roles, lastN)
	out := make([]ConversationItem, 0, n-start)
	for i := start; i < n; i++ {
		m, tc, has := row(i)
		it, bad := NewConversationItem(m, tc, has)
		if bad {
			log.Warn("message has invalid tool_calls JSON; replaying it as []", "message_id", m.ID, "session_id", m.SessionID)
		}
		out = append(out, it)
	}
	return out
}

// CheckLastN refuses a negative lastN of GetMessagesAsConversation.
func CheckLastN(sessionID string, lastN int) error {
	if lastN < 0 {
		return Errorf(EINVALID, "conversation of %s: last %d is negative", sessionID, lastN)
	}
	return nil
}

// CheckPruneDays refuses an age for PruneSessions that is not a number >= 0.
func CheckPruneDays(days float64) error {
	if math.IsNaN(days) || math.IsInf(days, 0) || days < 0 {
		return Errorf(EINVALID, "prune sessions: older-than days must be a number >= 0, not %v", days)
	}
	return nil
}

// Preview shapes the start of a session's first user message (its first
// 63 code points, which is all a store needs to read) as Hermes v6 shows
// it: line breaks become spaces, the text is trimmed, and more than 60
// code points are cut to 60 plus "...".
func Preview(raw string) string {
	t := strings.NewReplacer("\n", " ", "\r", " ").Replace(raw)
	t = strings.TrimSpace(t)
	if utf8.RuneCountInString(t) > 60 {
		r := []rune(t)
		return string(r[:60]) + "..."
	}
	return t
}

// PreviewSourceLen is how many code points of the first user message
// Preview needs.
const PreviewSourceLen = 63
