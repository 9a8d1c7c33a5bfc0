package storetest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// newerRecord is a session as a newer Hermes' file exports it (issue 19):
// its newer columns and live gateway state, a multimodal message given as
// its parts, an observed group message with a platform id given as
// message_id, reasoning content and codex items, a tool row's effect, a
// compacted and a rewound row (hidden), counters Hermes' writes left, and
// two usage rows by model.
func newerRecord(id string) map[string]any {
	return map[string]any{
		"id": id, "source": "telegram", "started_at": 1000.0, "model": "gpt-5-codex",
		"message_count": 6.0, "tool_call_count": 1.0,
		"api_call_count": 3.0, "cwd": "/home/dev/project", "git_branch": "main", "git_repo_root": "/home/dev/project",
		"session_key": "agent:main:telegram:group:-100:7", "chat_id": "-100", "chat_type": "group", "thread_id": "7",
		"display_name": "Ada", "origin_json": `{"platform": "telegram"}`, "expiry_finalized": 1.0,
		"handoff_state": "pending", "handoff_platform": "discord", "handoff_error": "busy",
		"compression_failure_cooldown_until": 2000.5, "compression_failure_error": "timeout",
		"compression_fallback_streak": 2.0, "rewind_count": 1.0,
		"messages": []any{
			map[string]any{"id": 1.0, "role": "user", "content": "old turn", "timestamp": 1001.0, "active": 0.0, "compacted": 1.0},
			map[string]any{"id": 2.0, "role": "user", "content": "taken back", "timestamp": 1002.0, "active": 0.0, "compacted": 0.0},
			map[string]any{"id": 3.0, "role": "user", "timestamp": 1003.0, "content": []any{
				map[string]any{"type": "text", "text": "what bird is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
			}},
			map[string]any{"id": 4.0, "role": "user", "content": "[Bob] hello", "timestamp": 1004.0, "observed": 1.0, "message_id": "tg-1001"},
			map[string]any{"id": 5.0, "role": "assistant", "content": "", "timestamp": 1005.0, "reasoning_content": "",
				"codex_message_items": `[{"type": "message", "id": "msg_1"}]`,
				"tool_calls":          []any{map[string]any{"id": "c1", "type": "function"}}},
			map[string]any{"id": 6.0, "role": "tool", "content": "ok", "timestamp": 1006.0, "tool_call_id": "c1", "effect_disposition": "none"},
			map[string]any{"id": 7.0, "role": "assistant", "content": "A pelican.", "timestamp": 1007.0, "platform_message_id": "tg-1002"},
		},
		sessiondb.UsageKey: []any{
			map[string]any{"model": "anthropic/claude-sonnet-4", "billing_provider": "anthropic", "api_call_count": 1.0,
				"input_tokens": 900.0, "output_tokens": 60.0, "estimated_cost_usd": 0.0036, "cost_status": "estimated",
				"first_seen": 1001.0, "last_seen": 1001.0},
			map[string]any{"model": "gpt-5-codex", "billing_provider": "openai-codex", "billing_base_url": "https://chatgpt.com/backend-api/codex",
				"billing_mode": "subscription_included", "api_call_count": 2.0, "input_tokens": 8600.0, "output_tokens": 360.0,
				"reasoning_tokens": 136.0, "cost_status": "included", "first_seen": 1005.0, "last_seen": 1007.0},
		},
	}
}

// newerSessionFields are newerRecord's session values that are no live
// state.
var newerSessionFields = []string{"api_call_count", "cwd", "git_branch", "git_repo_root"}

// newerMessageFields are the messages' values of a newer Hermes, by
// message index of newerRecord.
var newerMessageFields = map[int][]string{
	3: {"observed"}, 4: {"reasoning_content", "codex_message_items"}, 5: {"effect_disposition"}, 6: {"platform_message_id"},
}

// droppedOf is a result's dropped counts by field.
func droppedOf(r sessiondb.ImportResult) map[string]int {
	out := map[string]int{}
	for _, d := range r.Dropped {
		out[d.Field] = d.Values
	}
	return out
}

// testMoves covers what an import keeps of a newer Hermes' record: every
// field the store has a place for, the rest named in Dropped, never
// both missing; the live state reset unless kept; hidden rows kept with
// their marks and the counters as given, or left out whole and named;
// content given as parts stored as Hermes stores it; usage rows.
func testMoves(t *testing.T, h Harness) {
	e := newEnv(t, h)
	rec := newerRecord("newer")
	res, err := e.s.ImportSession(e.ctx, rec, sessiondb.ImportOptions{})
	noErr(t, "ImportSession", err)
	if !res.Imported {
		t.Fatalf("ImportSession = %+v", res)
	}
	dropped := droppedOf(res)
	got := normJSON(t, e.exported("newer")).(map[string]any)
	want := normJSON(t, rec).(map[string]any)

	// kept reports whether the export holds field with the record's value;
	// else Dropped must name it, once.
	kept := func(what string, have map[string]any, field, dropName string, value any) bool {
		t.Helper()
		if v, ok := have[field]; ok && reflect.DeepEqual(v, value) {
			if dropped[dropName] != 0 {
				t.Errorf("%s: kept and named dropped", what)
			}
			return true
		}
		if dropped[dropName] == 0 {
			t.Errorf("%s = %v: neither kept (%v) nor named in Dropped %v", what, value, have[field], res.Dropped)
		}
		return false
	}
	for _, f := range newerSessionFields {
		kept("sessions."+f, got, f, "sessions."+f, want[f])
	}
	for _, f := range sessiondb.LiveStateColumns {
		if v, ok := got[f]; ok && v != nil && v != 0.0 {
			t.Errorf("live state %s = %v after an import, want its default (Hermes' import resets it)", f, v)
		}
		if dropped["sessions."+f] != 0 {
			t.Errorf("live state %s named dropped: it is reset, not lost", f)
		}
	}
	wantMsgs := want["messages"].([]any)
	gotMsgs := got["messages"].([]any)
	hiddenKept := len(gotMsgs) == len(wantMsgs)
	switch {
	case hiddenKept:
		for i, m := range gotMsgs[:2] {
			mm := m.(map[string]any)
			if mm["active"] != 0.0 || mm["compacted"] != wantMsgs[i].(map[string]any)["compacted"] {
				t.Errorf("hidden message %d exported as %v, want its marks", i, mm)
			}
		}
		if dropped["messages.active"] != 0 {
			t.Errorf("hidden rows kept and named dropped: %v", res.Dropped)
		}
	case len(gotMsgs) == len(wantMsgs)-2 && dropped["messages.active"] == 2:
		wantMsgs = wantMsgs[2:]
	default:
		t.Fatalf("%d messages exported, dropped %v; want all 7, or the 5 live ones and messages.active: 2", len(gotMsgs), res.Dropped)
	}
	off := len(newerRecord("x")["messages"].([]any)) - len(wantMsgs)
	for i, m := range gotMsgs {
		gm, wm := m.(map[string]any), wantMsgs[i].(map[string]any)
		for _, k := range []string{"role", "content", "timestamp", "tool_call_id", "tool_calls"} {
			if wv, ok := wm[k]; ok && !reflect.DeepEqual(gm[k], wv) {
				t.Errorf("message %d: %s = %v, want %v", i+off, k, gm[k], wv)
			}
		}
		for _, f := range newerMessageFields[i+off] {
			src, name := f, f
			if f == "platform_message_id" && wm[f] == nil {
				src = "message_id"
			}
			kept("messages."+f, gm, name, "messages."+name, wm[src])
		}
	}
	if tc := gotMsgs[len(gotMsgs)-3].(map[string]any)["tool_calls"]; !reflect.DeepEqual(tc, []any{map[string]any{"id": "c1", "type": "function"}}) {
		t.Errorf("tool_calls exported as %v", tc)
	}
	s := e.get("newer")
	wantCount, wantCalls := int64(5), int64(1)
	if hiddenKept {
		wantCount = 6 // as given: what Hermes' last write left, no count of rows
	}
	if s.MessageCount != wantCount || s.ToolCallCount != wantCalls {
		t.Errorf("message_count/tool_call_count = %d/%d, want %d/%d", s.MessageCount, s.ToolCallCount, wantCount, wantCalls)
	}
	if u, ok := got[sessiondb.UsageKey]; ok {
		for i, row := range u.([]any) {
			for k, v := range want[sessiondb.UsageKey].([]any)[i].(map[string]any) {
				if !reflect.DeepEqual(row.(map[string]any)[k], v) {
					t.Errorf("usage row %d: %s = %v, want %v", i, k, row.(map[string]any)[k], v)
				}
			}
		}
		if len(u.([]any)) != 2 || dropped[sessiondb.UsageKey] != 0 {
			t.Errorf("usage rows %v, dropped %v; want both kept", u, res.Dropped)
		}
	} else if dropped[sessiondb.UsageKey] != 2 {
		t.Errorf("usage rows neither exported nor named dropped: %v", res.Dropped)
	}

	t.Run("KeepLiveState", func(t *testing.T) {
		r, err := e.s.ImportSession(e.ctx, newerRecord("kept"), sessiondb.ImportOptions{KeepLiveState: true})
		noErr(t, "ImportSession", err)
		d := droppedOf(r)
		g := normJSON(t, e.exported("kept")).(map[string]any)
		for _, f := range sessiondb.LiveStateColumns {
			v, ok := g[f]
			switch {
			case ok && reflect.DeepEqual(v, want[f]):
				if d["sessions."+f] != 0 {
					t.Errorf("%s kept and named dropped", f)
				}
			case d["sessions."+f] != 1:
				t.Errorf("live state %s = %v: neither kept nor named dropped (%v)", f, v, r.Dropped)
			}
		}
	})

	t.Run("ThroughALine", func(t *testing.T) {
		// The export's line read back as an import reads a file: the
		// same session again.
		b, err := json.Marshal(e.exported("newer"))
		noErr(t, "Marshal", err)
		back, err := sessiondb.DecodeRecord(b)
		noErr(t, "DecodeRecord", err)
		back["id"] = "again"
		r, err := e.s.ImportSession(e.ctx, back, sessiondb.ImportOptions{})
		noErr(t, "ImportSession", err)
		if !r.Imported || len(r.Dropped) != 0 && !reflect.DeepEqual(r.Dropped, res.Dropped) {
			t.Errorf("re-import %+v, want nothing more dropped than %v", r, res.Dropped)
		}
		a, b2 := e.exported("newer"), e.exported("again")
		for _, x := range []map[string]any{a, b2} {
			delete(x, "id")
			for _, m := range x["messages"].([]any) {
				delete(m.(map[string]any), "id")
				delete(m.(map[string]any), "session_id")
			}
		}
		if !reflect.DeepEqual(a, b2) {
			t.Errorf("export → import changed the session:\n%v\n%v", a, b2)
		}
	})

	t.Run("ForkCopiesTheLiveRows", func(t *testing.T) {
		// As Hermes' /branch: the rows Hermes resumes, copied live.
		_, err := e.s.ForkSession(e.ctx, "newer", 1<<40, sessiondb.NewSession{ID: "fork"})
		noErr(t, "ForkSession", err)
		f := normJSON(t, e.exported("fork")).(map[string]any)
		var contents []any
		for _, m := range f["messages"].([]any) {
			mm := m.(map[string]any)
			contents = append(contents, mm["content"])
			if a, ok := mm["active"]; ok && a != 1.0 || mm["compacted"] != nil && mm["compacted"] != 0.0 {
				t.Errorf("forked row %v is not live", mm)
			}
		}
		var live []any
		for _, m := range wantMsgs {
			if m.(map[string]any)["active"] != 0.0 {
				live = append(live, m.(map[string]any)["content"])
			}
		}
		if !reflect.DeepEqual(contents, live) {
			t.Errorf("fork holds %v, want the live rows %v", contents, live)
		}
		if s := e.get("fork"); s.MessageCount != 5 || s.ToolCallCount != 1 {
			t.Errorf("fork's message_count/tool_call_count = %d/%d, want 5/1", s.MessageCount, s.ToolCallCount)
		}
	})
}
