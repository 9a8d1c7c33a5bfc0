package storetest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testMessages covers section 6's AppendMessage and GetMessages.
func testMessages(t *testing.T, h Harness) {
	t.Run("ToolCallCount", func(t *testing.T) {
		cases := []struct {
			name      string
			role      string
			toolCalls any
			wantN     int64
			wantNull  bool // tool_calls stored as NULL
			wantCalls any  // decoded tool_calls when stored
		}{
			{name: "nil", role: "assistant", toolCalls: nil, wantN: 0, wantNull: true},
			{name: "empty list", role: "assistant", toolCalls: []any{}, wantN: 0, wantNull: true},
			{name: "list of two", role: "assistant", toolCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}}, wantN: 2,
				wantCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}}},
			{name: "typed list", role: "assistant", toolCalls: []map[string]string{{"id": "c1"}, {"id": "c2"}, {"id": "c3"}}, wantN: 3,
				wantCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}, map[string]any{"id": "c3"}}},
			{name: "single object counts one", role: "assistant", toolCalls: map[string]any{"id": "c1"}, wantN: 1, wantCalls: map[string]any{"id": "c1"}},
			{name: "empty object counts one but is not stored", role: "assistant", toolCalls: map[string]any{}, wantN: 1, wantNull: true},
			{name: "empty string counts one but is not stored", role: "assistant", toolCalls: "", wantN: 1, wantNull: true},
			{name: "role does not matter", role: "tool", toolCalls: []any{map[string]any{"id": "c1"}}, wantN: 1, wantCalls: []any{map[string]any{"id": "c1"}}},
			{name: "tool result adds nothing", role: "tool", toolCalls: nil, wantN: 0, wantNull: true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("s1", "cli")
				e.append(sessiondb.NewMessage{SessionID: "s1", Role: tc.role, Content: str("x"), ToolCalls: tc.toolCalls})
				e.msg("s1", "user", "plain")
				s := e.get("s1")
				if s.ToolCallCount != tc.wantN || s.MessageCount != 2 {
					t.Errorf("tool_call_count/message_count = %d/%d, want %d/2", s.ToolCallCount, s.MessageCount, tc.wantN)
				}
				ms := e.messages("s1")
				if len(ms) != 2 {
					t.Fatalf("%d messages, want 2", len(ms))
				}
				tcs := ms[0].ToolCalls
				if tc.wantNull {
					if len(tcs) != 0 && string(tcs) != "null" {
						t.Errorf("tool_calls = %s, want NULL", tcs)
					}
					return
				}
				if got := jsonText(t, string(tcs)); !reflect.DeepEqual(got, tc.wantCalls) {
					t.Errorf("tool_calls = %v, want %v", got, tc.wantCalls)
				}
			})
		}
	})

	t.Run("TruthyJSON", func(t *testing.T) {
		cases := []struct {
			name  string
			value any
			want  any // decoded stored JSON; nil = NULL
		}{
			{name: "nil", value: nil},
			{name: "empty list", value: []any{}},
			{name: "empty object", value: map[string]any{}},
			{name: "empty string", value: ""},
			{name: "list", value: []any{map[string]any{"type": "reasoning.text", "text": "t"}}, want: []any{map[string]any{"type": "reasoning.text", "text": "t"}}},
			{name: "object", value: map[string]any{"a": 1.0}, want: map[string]any{"a": 1.0}},
			{name: "string", value: "s", want: "s"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("s1", "cli")
				e.append(sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("x"), ReasoningDetails: tc.value, CodexReasoningItems: tc.value})
				m := e.messages("s1")[0]
				for _, f := range []struct {
					name string
					got  *string
				}{{"reasoning_details", m.ReasoningDetails}, {"codex_reasoning_items", m.CodexReasoningItems}} {
					switch {
					case tc.want == nil && f.got != nil:
						t.Errorf("%s = %q, want NULL", f.name, *f.got)
					case tc.want != nil && f.got == nil:
						t.Errorf("%s = NULL, want JSON text of %v", f.name, tc.want)
					case tc.want != nil && !reflect.DeepEqual(jsonText(t, *f.got), tc.want):
						t.Errorf("%s = %q, want JSON text of %v", f.name, *f.got, tc.want)
					}
				}
				if e.get("s1").ToolCallCount != 0 {
					t.Error("reasoning fields changed tool_call_count")
				}
			})
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		at := e.now()
		id := e.append(sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("answer"),
			ToolName: str("terminal"), ToolCallID: str("c9"), FinishReason: str("stop"), Reasoning: str("because"),
			TokenCount: i64(42)})
		nullID := e.append(sessiondb.NewMessage{SessionID: "s1", Role: "user"})
		ms := e.messages("s1")
		if len(ms) != 2 {
			t.Fatalf("%d messages, want 2", len(ms))
		}
		m := ms[0]
		if m.ID != id || m.SessionID != "s1" || m.Role != "assistant" || deref(m.Content) != "answer" || deref(m.ToolName) != "terminal" ||
			deref(m.ToolCallID) != "c9" || deref(m.FinishReason) != "stop" || deref(m.Reasoning) != "because" ||
			m.TokenCount == nil || *m.TokenCount != 42 || m.Timestamp != at {
			t.Errorf("message = %+v", m)
		}
		n := ms[1]
		if n.ID != nullID || n.Content != nil || n.ToolName != nil || n.ToolCallID != nil || n.FinishReason != nil ||
			n.Reasoning != nil || n.TokenCount != nil || n.ReasoningDetails != nil || n.CodexReasoningItems != nil {
			t.Errorf("unset fields should be NULL: %+v", n)
		}
		if nullID <= id {
			t.Errorf("ids not increasing: %d then %d", id, nullID)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		_, err := e.s.AppendMessage(e.ctx, sessiondb.NewMessage{SessionID: "ghost", Role: "user", Content: str("x")})
		wantCode(t, "AppendMessage to an unknown session", err, sessiondb.EINVALID)
		if n, _ := e.s.MessageCount(e.ctx, ""); n != 0 {
			t.Errorf("rejected append left %d messages", n)
		}
		if n, _ := e.s.SessionCount(e.ctx, ""); n != 1 {
			t.Errorf("rejected append changed the session count to %d", n)
		}
	})

	t.Run("InsertionOrderWhenClockStepsBack", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("s1", "cli")
		var want []int64
		for i, step := range []time.Duration{0, -time.Hour, -time.Hour, 2 * time.Hour, -time.Minute} {
			e.clock.Advance(step)
			want = append(want, e.msg("s1", []string{"user", "assistant"}[i%2], "m"))
		}
		if got := msgIDs(e.messages("s1")); !reflect.DeepEqual(got, want) {
			t.Errorf("GetMessages order = %v, want insertion order %v", got, want)
		}
		conv, err := e.s.GetMessagesAsConversation(e.ctx, "s1", 0)
		noErr(t, "GetMessagesAsConversation", err)
		var roles []any
		for _, c := range conv {
			roles = append(roles, c["role"])
		}
		if want := []any{"user", "assistant", "user", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
			t.Errorf("conversation roles = %v, want %v", roles, want)
		}
	})

	t.Run("InvalidStoredJSON", func(t *testing.T) {
		if h.SetMessageColumn == nil {
			t.Fatal("Harness.SetMessageColumn is nil: every backend must let the suite plant raw column text to test invalid stored JSON")
		}
		e := newEnv(t, h)
		e.create("s1", "cli")
		id := e.append(sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: str("x"),
			ToolCalls: []any{map[string]any{"id": "c1"}}, ReasoningDetails: []any{"r"}, CodexReasoningItems: []any{"c"}})
		for _, col := range []string{"tool_calls", "reasoning_details", "codex_reasoning_items"} {
			h.SetMessageColumn(t, e.s, id, col, "{not json")
		}
		ms := e.messages("s1")
		if len(ms) != 1 {
			t.Fatalf("%d messages, want 1", len(ms))
		}
		if got := jsonText(t, string(ms[0].ToolCalls)); !reflect.DeepEqual(got, []any{}) {
			t.Errorf("GetMessages tool_calls = %s, want [] for invalid stored JSON", ms[0].ToolCalls)
		}
		if deref(ms[0].ReasoningDetails) != "{not json" || deref(ms[0].CodexReasoningItems) != "{not json" {
			t.Errorf("reasoning_details/codex_reasoning_items = %s/%s, want the stored text", deref(ms[0].ReasoningDetails), deref(ms[0].CodexReasoningItems))
		}
		conv, err := e.s.GetMessagesAsConversation(e.ctx, "s1", 0)
		noErr(t, "GetMessagesAsConversation", err)
		got := withoutTimestamps(t, normJSON(t, conv), ms)
		want := jsonText(t, `[{"role":"assistant","content":"x","tool_calls":[],"reasoning_details":null,"codex_reasoning_items":null}]`)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("conversation = %v\nwant %v", got, want)
		}
	})
}

// testConversation covers GetMessagesAsConversation's shape.
func testConversation(t *testing.T, h Harness) {
	cases := []struct {
		name string
		msgs []sessiondb.NewMessage
		want string // JSON
	}{
		{
			name: "spec example",
			msgs: []sessiondb.NewMessage{
				{Role: "user", Content: str("Hello")},
				{Role: "assistant", Content: str(""), Reasoning: str("think"),
					ToolCalls:        []any{map[string]any{"id": "c1", "function": map[string]any{"name": "terminal", "arguments": "{}"}}},
					ReasoningDetails: []any{map[string]any{"type": "reasoning.text", "text": "think"}}},
				{Role: "tool", Content: str("ok"), ToolCallID: str("c1"), ToolName: str("terminal")},
			},
			want: `[{"role":"user","content":"Hello"},
 {"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"terminal","arguments":"{}"}}],
  "reasoning":"think","reasoning_details":[{"type":"reasoning.text","text":"think"}]},
 {"role":"tool","content":"ok","tool_call_id":"c1","tool_name":"terminal"}]`,
		},
		{
			name: "NULL content is null",
			msgs: []sessiondb.NewMessage{{Role: "assistant"}},
			want: `[{"role":"assistant","content":null}]`,
		},
		{
			name: "finish reason on assistant rows, no other keys",
			msgs: []sessiondb.NewMessage{{Role: "assistant", Content: str("a"), FinishReason: str("stop"), TokenCount: i64(3)},
				{Role: "user", Content: str("u"), FinishReason: str("stop")}},
			want: `[{"role":"assistant","content":"a","finish_reason":"stop"},{"role":"user","content":"u"}]`,
		},
		{
			name: "memory context stripped from user and assistant text",
			msgs: []sessiondb.NewMessage{{Role: "user", Content: str("<memory-context>likes tea</memory-context>\n hi ")},
				{Role: "tool", Content: str(" <memory-context>x</memory-context> ")}},
			want: `[{"role":"user","content":"hi"},{"role":"tool","content":" <memory-context>x</memory-context> "}]`,
		},
		{
			name: "empty strings are left out",
			msgs: []sessiondb.NewMessage{{Role: "tool", Content: str("r"), ToolCallID: str(""), ToolName: str("")},
				{Role: "assistant", Content: str("a"), Reasoning: str("")}},
			want: `[{"role":"tool","content":"r"},{"role":"assistant","content":"a"}]`,
		},
		{
			name: "reasoning only on assistant rows",
			msgs: []sessiondb.NewMessage{{Role: "user", Content: str("u"), Reasoning: str("r"),
				ReasoningDetails: []any{"d"}, CodexReasoningItems: []any{"c"}}},
			want: `[{"role":"user","content":"u"}]`,
		},
		{
			name: "codex reasoning items decoded",
			msgs: []sessiondb.NewMessage{{Role: "assistant", Content: str("a"), CodexReasoningItems: []any{map[string]any{"id": "rs_1", "encrypted_content": "xyz"}}}},
			want: `[{"role":"assistant","content":"a","codex_reasoning_items":[{"id":"rs_1","encrypted_content":"xyz"}]}]`,
		},
		{
			name: "tool calls on any role",
			msgs: []sessiondb.NewMessage{{Role: "user", Content: str("u"), ToolCalls: []any{map[string]any{"id": "c1"}}}},
			want: `[{"role":"user","content":"u","tool_calls":[{"id":"c1"}]}]`,
		},
		{name: "empty session", want: `[]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			e.create("s1", "cli")
			for _, m := range tc.msgs {
				m.SessionID = "s1"
				e.append(m)
			}
			conv, err := e.s.GetMessagesAsConversation(e.ctx, "s1", 0)
			noErr(t, "GetMessagesAsConversation", err)
			got := withoutTimestamps(t, normJSON(t, conv), e.messages("s1"))
			if conv == nil {
				got = []any{} // a nil slice is an empty conversation
			}
			if want := jsonText(t, tc.want); !reflect.DeepEqual(got, want) {
				b, _ := json.Marshal(conv)
				t.Errorf("conversation = %s\nwant %s", b, tc.want)
			}
		})
	}
}

// withoutTimestamps checks that each entry of a replay (normJSON's form)
// carries its message's timestamp, as Hermes' replay does, and returns
// the entries without it.
func withoutTimestamps(t *testing.T, conv any, ms []sessiondb.Message) any {
	t.Helper()
	items, _ := conv.([]any)
	if len(items) != len(ms) {
		t.Fatalf("%d replayed entries of %d messages", len(items), len(ms))
	}
	for i, it := range items {
		m := it.(map[string]any)
		if ts, _ := m["timestamp"].(float64); ts != ms[i].Timestamp || ts == 0 {
			t.Errorf("entry %d: timestamp %v, want the message's %v", i, m["timestamp"], ms[i].Timestamp)
		}
		delete(m, "timestamp")
	}
	return conv
}
