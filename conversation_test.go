package sessiondb

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func TestReplayConversation(t *testing.T) {
	text := func(s string) *string { return &s }
	msgs := []Message{
		{ID: 1, SessionID: "s", Role: "user", Content: text("hi")},
		{ID: 2, SessionID: "s", Role: "assistant", Content: text("")},
		{ID: 3, SessionID: "s", Role: "tool", Content: text("r1")},
		{ID: 4, SessionID: "s", Role: "tool", Content: text("r2")},
		{ID: 5, SessionID: "s", Role: "assistant", Content: text("done")},
	}
	toolCalls := map[int64]string{2: `[{"id":"c1"},{"id":"c2"}]`, 5: `not json`}
	row := func(i int) (*Message, string, bool) {
		tc, ok := toolCalls[msgs[i].ID]
		return &msgs[i], tc, ok
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	contents := func(items []ConversationItem) []any {
		var out []any
		for _, it := range items {
			out = append(out, it["content"])
		}
		return out
	}

	all := ReplayConversation(len(msgs), 0, row, log)
	if got, want := contents(all), []any{"hi", "", "r1", "r2", "done"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("all: %v, want %v", got, want)
	}
	if got := all[1]["tool_calls"]; !reflect.DeepEqual(got, []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}}) {
		t.Fatalf("decoded tool_calls %#v", got)
	}
	if got := all[4]["tool_calls"]; !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("invalid tool_calls replay as %#v, want []", got)
	}
	if _, ok := all[0]["tool_calls"]; ok {
		t.Fatalf("a NULL tool_calls column replayed: %v", all[0])
	}
	if l := logged.String(); strings.Count(l, "invalid tool_calls") != 1 || !strings.Contains(l, "message_id=5") || !strings.Contains(l, "session_id=s") {
		t.Fatalf("warnings %q, want one naming message 5 of s", l)
	}

	// The last 2 start at a tool row: widened back to the assistant
	// row that made the calls.
	if got, want := contents(ReplayConversation(len(msgs), 3, row, log)), []any{"", "r1", "r2", "done"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("last 3: %v, want %v", got, want)
	}
	if got, want := contents(ReplayConversation(len(msgs), 1, row, log)), []any{"done"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("last 1: %v, want %v", got, want)
	}
	if got := ReplayConversation(0, 3, row, log); got == nil || len(got) != 0 {
		t.Fatalf("no messages: %#v, want an empty list", got)
	}
}

// TestReplayNewerHermes: the keys a newer Hermes' replay gives, what it
// strips, and the turns of a background review it drops.
func TestReplayNewerHermes(t *testing.T) {
	text := func(s string) *string { return &s }
	msgs := []Message{
		{ID: 1, Role: "user", Content: text("<memory-context>likes tea</memory-context>\n  Hello  "), Timestamp: 10, PlatformMessageID: text("tg-1"), Observed: 1},
		{ID: 2, Role: "assistant", Content: text(" Hi "), Timestamp: 11, ReasoningContent: text(""), FinishReason: text("stop"), CodexMessageItems: text(`[{"type":"message"}]`)},
		{ID: 3, Role: "user", Content: text("Review the conversation above and consider saving to memory.")},
		{ID: 4, Role: "assistant", Content: text("Saved.")},
		{ID: 5, Role: "system", Content: text("  Review the conversation above and update the skill library")},
		{ID: 6, Role: "user", Content: text("next")},
		{ID: 7, Role: "tool", Content: text("<memory-context>kept</memory-context>"), ToolCallID: text("c1"), EffectDisposition: text("none"), ReasoningContent: text("not replayed")},
		{ID: 8, Role: "user", Content: text(StructuredPrefix + `[{"type": "text", "text": "look"}]`)},
	}
	row := func(i int) (*Message, string, bool) { return &msgs[i], "", false }
	got := ReplayConversation(len(msgs), 0, row, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	want := []ConversationItem{
		{"role": "user", "content": "Hello", "timestamp": 10.0, "message_id": "tg-1", "observed": true},
		{"role": "assistant", "content": "Hi", "timestamp": 11.0, "reasoning_content": "", "finish_reason": "stop", "codex_message_items": []any{map[string]any{"type": "message"}}},
		{"role": "user", "content": "next"},
		{"role": "tool", "content": "<memory-context>kept</memory-context>", "tool_call_id": "c1", "effect_disposition": "none"},
		{"role": "user", "content": json.RawMessage(`[{"type": "text", "text": "look"}]`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replay\n got %#v\nwant %#v", got, want)
	}
	// The last 2 are cut from what is left once the review's turns are
	// dropped, widened back over the tool row.
	if got := ReplayConversation(len(msgs), 2, row, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))); len(got) != 3 || got[0]["content"] != "next" {
		t.Errorf("last 2: %v, want the 3 from \"next\"", got)
	}
}
