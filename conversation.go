package sessiondb

import (
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"unicode/utf8"
)

// NewConversationItem builds the replay form of one stored message as
// Hermes' get_messages_as_conversation gives it (docs/hermes-versions.md
// 4.2): role and content (null when NULL; a multimodal message's list of
// parts decoded; a user or assistant text without its recalled-memory
// blocks, SanitizeContext, and trimmed), timestamp when not 0,
// tool_call_id, tool_name and effect_disposition when non-empty,
// tool_calls decoded from its stored text when there is one
// (rawToolCalls, valid=false for NULL), message_id (the platform's id)
// when set, observed when set; and for assistant rows finish_reason and
// reasoning when non-empty, reasoning_content when not NULL, and
// reasoning_details, codex_reasoning_items and codex_message_items
// decoded. Stored tool_calls that are not JSON replay as [] and
// badToolCalls tells the caller to warn; undecodable reasoning fields
// replay as null.
func NewConversationItem(m *Message, rawToolCalls string, valid bool) (it ConversationItem, badToolCalls bool) {
	it = ConversationItem{"role": m.Role, "content": nil}
	if m.Content != nil {
		c := DecodeContent(*m.Content)
		if t, ok := c.(string); ok && (m.Role == "user" || m.Role == "assistant") {
			c = PyStrip(SanitizeContext(t))
		}
		it["content"] = c
	}
	if m.Timestamp != 0 {
		it["timestamp"] = m.Timestamp
	}
	for key, p := range map[string]*string{"tool_call_id": m.ToolCallID, "tool_name": m.ToolName, "effect_disposition": m.EffectDisposition, "message_id": m.PlatformMessageID} {
		if p != nil && *p != "" {
			it[key] = *p
		}
	}
	if valid && rawToolCalls != "" {
		var v any
		if err := json.Unmarshal([]byte(rawToolCalls), &v); err != nil {
			badToolCalls = true
			v = []any{}
		}
		it["tool_calls"] = v
	}
	if m.Observed != 0 {
		it["observed"] = true
	}
	if m.Role == "assistant" {
		if m.FinishReason != nil && *m.FinishReason != "" {
			it["finish_reason"] = *m.FinishReason
		}
		if m.Reasoning != nil && *m.Reasoning != "" {
			it["reasoning"] = *m.Reasoning
		}
		if m.ReasoningContent != nil {
			it["reasoning_content"] = *m.ReasoningContent
		}
		for key, p := range map[string]*string{"reasoning_details": m.ReasoningDetails, "codex_reasoning_items": m.CodexReasoningItems, "codex_message_items": m.CodexMessageItems} {
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

// reviewHarnessPrefixes open the turns a background skill or memory
// review of an older Hermes wrote into the session it reviewed; Hermes'
// replay drops them and the answer after each.
var reviewHarnessPrefixes = []string{
	"Review the conversation above and update the skill library",
	"Review the conversation above and consider saving to memory",
}

// isReviewHarness reports a replayed user or system turn that is such a
// review's prompt.
func isReviewHarness(it ConversationItem) bool {
	if r := it["role"]; r != "user" && r != "system" {
		return false
	}
	c, ok := it["content"].(string)
	if !ok {
		return false
	}
	c = strings.TrimLeftFunc(c, pyIsSpace)
	for _, p := range reviewHarnessPrefixes {
		if strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
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
// backend, over a session's n live messages in insertion order: row(i)
// gives the i-th with its tool_calls text (has false for NULL). Each is
// given NewConversationItem's form; the turns a background review wrote
// into the session are dropped with the assistant answer right after
// each, as Hermes drops them; then the entries ConversationStart keeps
// for lastN are returned. It warns on log about stored tool_calls that
// are not JSON (they replay as []).
func ReplayConversation(n, lastN int, row func(i int) (m *Message, toolCalls string, has bool), log *slog.Logger) []ConversationItem {
	out := make([]ConversationItem, 0, n)
	harness := false
	for i := range n {
		m, tc, has := row(i)
		it, bad := NewConversationItem(m, tc, has)
		if bad {
			log.Warn("message has invalid tool_calls JSON; replaying it as []", "message_id", m.ID, "session_id", m.SessionID)
		}
		switch {
		case isReviewHarness(it):
			harness = true
			continue
		case harness:
			harness = false
			if m.Role == "assistant" {
				continue
			}
		}
		out = append(out, it)
	}
	roles := make([]string, len(out))
	for i, it := range out {
		roles[i], _ = it["role"].(string)
	}
	return out[ConversationStart(roles, lastN):]
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
