package sessiondb

import (
	"bytes"
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
