package sessiondb

import (
	"reflect"
	"strings"
	"testing"
)

// TestPrepareImport: columns in name order through the backend's
// converter, the counters computed from the messages (not taken), the
// parent kept apart, a message's id and session_id out of its columns, a
// message marked active where the store has the column, a value whose
// column the store lacks counted dropped, and a converter's refusal named
// with the session.
func TestPrepareImport(t *testing.T) {
	keep := func(field, col string, v any) (any, bool, error) { return v, col != "unknown", nil }
	rec := map[string]any{
		"source": "cli", "id": "s1", "started_at": 1000.0, "parent_session_id": "p0", "unknown": "x",
		"message_count": 99.0, "tool_call_count": 99.0,
		"messages": []any{
			map[string]any{"role": "user", "timestamp": 1001.0, "content": "hi", "session_id": "other", "id": 7.0},
			map[string]any{"role": "assistant", "timestamp": 1002.0, "tool_calls": `[{"id":"a"},{"id":"b"}]`},
		},
	}
	p, err := PrepareImport(rec, ImportColumns{Session: keep, Message: keep}, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &PreparedImport{ID: "s1", Parent: "p0",
		Session: ImportRow{Cols: []string{"id", "source", "started_at", "message_count", "tool_call_count"}, Vals: []any{"s1", "cli", 1000.0, int64(2), int64(2)}},
		Messages: []ImportRow{
			{Cols: []string{"active", "content", "role", "timestamp"}, Vals: []any{int64(1), "hi", "user", 1001.0}, ID: 7.0},
			{Cols: []string{"active", "role", "timestamp", "tool_calls"}, Vals: []any{int64(1), "assistant", 1002.0, `[{"id":"a"},{"id":"b"}]`}, ToolCalls: 2},
		},
		Dropped: []DroppedField{{Field: "sessions.unknown", Values: 1}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("PrepareImport =\n%+v\nwant\n%+v", p, want)
	}
	refuse := func(field, col string, v any) (any, bool, error) {
		if col == "content" {
			return nil, true, Errorf(EINVALID, "%s refused", field)
		}
		return v, true, nil
	}
	_, err = PrepareImport(rec, ImportColumns{Session: keep, Message: refuse}, ImportOptions{})
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "import session s1: messages[0].content refused") {
		t.Errorf("a refused message value = %v, want invalid naming the session and field", err)
	}
	_, err = PrepareImport(map[string]any{"id": "s2"}, ImportColumns{Session: keep, Message: keep}, ImportOptions{})
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "import session s2: source") {
		t.Errorf("a record Validate refuses = %v, want invalid naming the session", err)
	}
}
