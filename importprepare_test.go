package sessiondb

import (
	"reflect"
	"slices"
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

// TestPrepareImportNewerHermes: what a record of a newer Hermes becomes
// for a store that keeps some of its fields: the live state left out
// unless kept (and never counted dropped); a value whose column the store
// lacks counted unless null or the column's default; hidden messages
// left out whole and counted where the store cannot mark them, kept with
// the counters as given where it can; message_id standing for
// platform_message_id; usage rows with Hermes' defaults, or counted
// dropped without a table.
func TestPrepareImportNewerHermes(t *testing.T) {
	lacking := func(missing ...string) func(field, col string, v any) (any, bool, error) {
		return func(field, col string, v any) (any, bool, error) {
			for _, m := range missing {
				if col == m {
					return nil, false, nil
				}
			}
			return v, true, nil
		}
	}
	rec := func() map[string]any {
		return map[string]any{
			"id": "s", "source": "telegram", "started_at": 1.0, "message_count": 9.0, "tool_call_count": 4.0,
			"session_key": "k", "handoff_state": "pending", "rewind_count": 2.0, "api_call_count": 3.0, "archived": 0.0,
			"cwd": nil, "last_active": 5.0,
			"messages": []any{
				map[string]any{"role": "user", "timestamp": 2.0, "active": 0.0, "compacted": 1.0},
				map[string]any{"role": "user", "timestamp": 3.0, "observed": 0.0, "message_id": "tg-1"},
				map[string]any{"role": "user", "timestamp": 4.0, "observed": 1.0, "platform_message_id": "tg-2", "message_id": "other"},
			},
			UsageKey: []any{map[string]any{"model": "m", "billing_base_url": nil, "input_tokens": 5.0, "session_id": "x"}},
		}
	}
	cols := func(r ImportRow) map[string]any {
		out := map[string]any{}
		for i, c := range r.Cols {
			out[c] = r.Vals[i]
		}
		return out
	}

	// A schema-6 store: no newer column, no usage table.
	v6 := lacking("session_key", "handoff_state", "rewind_count", "api_call_count", "archived", "cwd",
		"active", "compacted", "observed", "platform_message_id")
	p, err := PrepareImport(rec(), ImportColumns{Session: v6, Message: v6}, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantDropped := []DroppedField{{"messages.active", 1}, {"messages.observed", 1}, {"messages.platform_message_id", 2},
		{UsageKey, 1}, {"sessions.api_call_count", 1}}
	if !reflect.DeepEqual(p.Dropped, wantDropped) {
		t.Errorf("schema 6: dropped %v\nwant %v", p.Dropped, wantDropped)
	}
	if s := cols(p.Session); len(p.Messages) != 2 || s["message_count"] != int64(2) || s["tool_call_count"] != int64(0) {
		t.Errorf("schema 6: %d messages, counters %v/%v; want the 2 live ones, counted", len(p.Messages), s["message_count"], s["tool_call_count"])
	}
	// With the live state kept, its values are offered, and counted where
	// the store lacks them.
	p, err = PrepareImport(rec(), ImportColumns{Session: v6, Message: v6}, ImportOptions{KeepLiveState: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sessions.session_key", "sessions.handoff_state", "sessions.rewind_count"} {
		if !slices.Contains(p.Dropped, DroppedField{f, 1}) {
			t.Errorf("kept live state: %s not named in %v", f, p.Dropped)
		}
	}

	// A schema-21 store.
	all := lacking()
	p, err = PrepareImport(rec(), ImportColumns{Session: all, Message: all, Usage: all}, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := cols(p.Session)
	for _, live := range LiveStateColumns {
		if _, ok := s[live]; ok {
			t.Errorf("schema 21: live state %s stored without KeepLiveState", live)
		}
	}
	if p.Dropped != nil || s["api_call_count"] != 3.0 || s["message_count"] != int64(9) || s["tool_call_count"] != int64(4) || len(p.Messages) != 3 {
		t.Errorf("schema 21: session %v, %d messages, dropped %v; want the counters as given with the hidden row kept", s, len(p.Messages), p.Dropped)
	}
	m0, m1, m2 := cols(p.Messages[0]), cols(p.Messages[1]), cols(p.Messages[2])
	if m0["active"] != int64(0) && m0["active"] != 0.0 || m1["active"] != int64(1) || m1["platform_message_id"] != "tg-1" || m2["platform_message_id"] != "tg-2" {
		t.Errorf("schema 21 messages: %v %v %v", m0, m1, m2)
	}
	if _, ok := m1["message_id"]; ok {
		t.Errorf("message_id stored as a column: %v", m1)
	}
	u := cols(p.Usage[0])
	if len(p.Usage) != 1 || u["billing_base_url"] != "" || u["model"] != "m" || u["input_tokens"] != 5.0 {
		t.Errorf("usage row %v, want Hermes' '' for a NULL route", u)
	}
	if _, ok := u["session_id"]; ok {
		t.Errorf("usage row keeps the record's session_id: %v", u)
	}
	r := rec()
	r[UsageKey] = []any{map[string]any{"input_tokens": 5.0}}
	if _, err := PrepareImport(r, ImportColumns{Session: all, Message: all, Usage: all}, ImportOptions{}); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "session_model_usage[0].model") {
		t.Errorf("a usage row without model = %v, want invalid naming it", err)
	}
}
