package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// asJSONL is rec as an import reads it back from a JSONL line: encoded and
// decoded with encoding/json (numbers float64, messages a list of objects).
func asJSONL(t *testing.T, rec map[string]any) map[string]any {
	t.Helper()
	m, ok := normJSON(t, rec).(map[string]any)
	if !ok {
		t.Fatalf("record is not a JSON object: %v", rec)
	}
	return m
}

// exported returns ExportSession's record of id in JSONL form.
func (e *env) exported(id string) map[string]any {
	e.t.Helper()
	rec, err := e.s.ExportSession(e.ctx, id)
	if err != nil {
		e.t.Fatalf("ExportSession(%q): %v", id, err)
	}
	return asJSONL(e.t, rec)
}

// importOne imports rec and fails unless the result is want.
func (e *env) importOne(rec map[string]any, want bool) {
	e.t.Helper()
	got, err := e.s.ImportSession(e.ctx, rec, sessiondb.ImportOptions{})
	if err != nil {
		e.t.Fatalf("ImportSession(%v): %v", rec["id"], err)
	}
	if got.Imported != want {
		e.t.Fatalf("ImportSession(%v) = %+v, want imported %v", rec["id"], got, want)
	}
}

// importRecord is a small valid record with two messages, the second an
// assistant row with two tool calls.
func importRecord(id string) map[string]any {
	return map[string]any{
		"id": id, "source": "cli", "started_at": 1000.5, "model": "m1",
		"messages": []any{
			map[string]any{"role": "user", "content": "first words", "timestamp": 1001.0},
			map[string]any{"role": "assistant", "content": nil, "timestamp": 1002.0,
				"tool_calls": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}},
		},
	}
}

// testImport covers ImportSession and ImportSessions.
func testImport(t *testing.T, h Harness) {
	t.Run("RoundTrip", func(t *testing.T) {
		src := newEnv(t, h)
		src.createWith(sessiondb.NewSession{ID: "root", Source: "cli", Model: "m", ModelConfig: map[string]any{"t": 0.5}, UserID: "u"})
		src.msg("root", "user", "hello zebra")
		src.append(sessiondb.NewMessage{SessionID: "root", Role: "assistant", Content: str(""),
			ToolCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}},
			Reasoning: str("think"), ReasoningDetails: []any{map[string]any{"type": "reasoning.text"}}})
		src.append(sessiondb.NewMessage{SessionID: "root", Role: "tool", Content: str("ok"), ToolCallID: str("c1"), ToolName: str("terminal"), TokenCount: i64(12)})
		noErr(t, "UpdateTokenCounts", src.s.UpdateTokenCounts(src.ctx, "root", sessiondb.TokenUpdate{Input: 10, Output: 5, EstimatedCostUSD: f64(0.25)}))
		src.end("root", "compression")
		src.child("child", "root")
		src.msg("child", "user", "continued zebra")
		src.setTitle("child", "zebra work")

		// ExportAll lists the child before its parent: the import links
		// them once the parent is in.
		var recs []map[string]any
		noErr(t, "ExportAll", src.s.ExportAll(src.ctx, "", func(r map[string]any) error {
			recs = append(recs, asJSONL(t, r))
			return nil
		}))
		if len(recs) != 2 || recs[0]["id"] != "child" {
			t.Fatalf("ExportAll order = %v, want child then root", recs)
		}
		dst := newEnv(t, h)
		for _, r := range recs {
			dst.importOne(r, true)
		}
		for _, id := range []string{"root", "child"} {
			if a, b := src.exported(id), dst.exported(id); !reflect.DeepEqual(a, b) {
				t.Errorf("%s differs after export and import:\n got %v\nwant %v", id, b, a)
			}
		}
		if tip, err := dst.s.CompressionTip(dst.ctx, "root"); err != nil || tip != "child" {
			t.Errorf("CompressionTip(root) after import = %q, %v; want child", tip, err)
		}
		if hits := hitIDs(dst.search("zebra", sessiondb.SearchFilter{})); len(hits) != 2 {
			t.Errorf("imported messages found by search: %v, want 2", hits)
		}
	})

	t.Run("ReimportSkips", func(t *testing.T) {
		e := newEnv(t, h)
		e.importOne(importRecord("s1"), true)
		before := e.exported("s1")
		changed := importRecord("s1")
		changed["model"] = "other"
		changed["messages"] = []any{map[string]any{"role": "user", "content": "more", "timestamp": 5.0}}
		for _, rec := range []map[string]any{importRecord("s1"), changed} {
			e.importOne(rec, false)
		}
		if after := e.exported("s1"); !reflect.DeepEqual(after, before) {
			t.Errorf("a skipped import changed the session:\n got %v\nwant %v", after, before)
		}
		if n, err := e.s.SessionCount(e.ctx, ""); err != nil || n != 1 {
			t.Errorf("SessionCount = %d, %v; want 1", n, err)
		}
	})

	t.Run("Fields", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("x", "cli")
		taken := e.msg("x", "user", "holds an id")
		rec := map[string]any{
			"id": "imp", "source": "hermes", "started_at": 1000.5, "ended_at": 1010.0, "end_reason": "user_exit",
			"message_count": 99.0, "tool_call_count": 99.0, "input_tokens": 7.0, "estimated_cost_usd": 0.5,
			"model_config": map[string]any{"k": "v"}, "unknown_future_key": "ignored",
			"messages": []any{
				map[string]any{"id": float64(taken), "role": "user", "content": "first", "timestamp": 1001.0},
				map[string]any{"id": 500.0, "role": "assistant", "content": nil, "timestamp": 1002.0,
					"tool_calls": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}, "reasoning_details": `[{"k":1}]`},
				map[string]any{"role": "tool", "content": "r", "timestamp": 1003.0, "tool_call_id": "a", "token_count": 12.0},
			},
		}
		e.importOne(rec, true)
		s := e.get("imp")
		if s.MessageCount != 3 || s.ToolCallCount != 2 {
			t.Errorf("message_count/tool_call_count = %d/%d, want 3/2 recomputed from the messages", s.MessageCount, s.ToolCallCount)
		}
		if s.StartedAt != 1000.5 || derefF(s.EndedAt) != 1010.0 || deref(s.EndReason) != "user_exit" || s.InputTokens != 7 || s.Source != "hermes" {
			t.Errorf("session = %+v; want the record's started_at, ended_at, end_reason, tokens and source", s)
		}
		checkFloat(t, "estimated_cost_usd", s.EstimatedCostUSD, f64(0.5))
		if s.ModelConfig == nil || !reflect.DeepEqual(jsonText(t, *s.ModelConfig), map[string]any{"k": "v"}) {
			t.Errorf("model_config = %v, want the object stored as JSON", deref(s.ModelConfig))
		}
		ms := e.messages("imp")
		if len(ms) != 3 {
			t.Fatalf("%d messages, want 3", len(ms))
		}
		// The first id is taken: every message takes a new one, in order.
		if ms[0].ID == taken || ms[1].ID <= ms[0].ID || ms[2].ID <= ms[1].ID || deref(ms[0].Content) != "first" {
			t.Errorf("ids = %d %d %d, first %q; want new ids in the record's order", ms[0].ID, ms[1].ID, ms[2].ID, deref(ms[0].Content))
		}
		if ms[1].Timestamp != 1002 || string(ms[1].ToolCalls) != `[{"id":"a"},{"id":"b"}]` || deref(ms[1].ReasoningDetails) != `[{"k":1}]` {
			t.Errorf("assistant message = %+v", ms[1])
		}
		if ms[2].TokenCount == nil || *ms[2].TokenCount != 12 || deref(ms[2].ToolCallID) != "a" {
			t.Errorf("tool message = %+v", ms[2])
		}
		if got := e.messages("x"); len(got) != 1 || got[0].ID != taken {
			t.Errorf("the session holding the taken id changed: %v", msgIDs(got))
		}
	})

	t.Run("ParentLinkedWhenImported", func(t *testing.T) {
		e := newEnv(t, h)
		child := importRecord("child")
		child["parent_session_id"] = "parent"
		e.importOne(child, true)
		if p := e.get("child").ParentSessionID; p != nil {
			t.Fatalf("parent_session_id = %q before the parent exists, want NULL", *p)
		}
		e.importOne(importRecord("parent"), true)
		if p := deref(e.get("child").ParentSessionID); p != "parent" {
			t.Errorf("parent_session_id = %s after the parent's import, want parent", p)
		}
	})

	// A session whose message ids are partly taken (another machine's
	// history merged in), or that has a message without one, keeps its
	// messages in their order: from the first taken or missing id on,
	// every message takes a new id, above every id kept before it. One at
	// a time and in a batch alike.
	t.Run("TakenIDsKeepOrder", func(t *testing.T) {
		for _, batch := range []bool{false, true} {
			e := newEnv(t, h)
			msg := func(id float64, text string) map[string]any {
				return map[string]any{"id": id, "role": "user", "content": text, "timestamp": 1000 + id}
			}
			owner := map[string]any{"id": "owner", "source": "cli", "started_at": 1.0, "messages": []any{msg(2, "owned"), msg(100, "owned too")}}
			e.importOne(owner, true)
			merged := map[string]any{"id": "merged", "source": "cli", "started_at": 2.0,
				"messages": []any{msg(1, "first"), msg(2, "second"), msg(3, "third"), msg(4, "fourth")}}
			// A message without an id between two with free ones.
			unnumbered := map[string]any{"role": "user", "content": "middle", "timestamp": 1050.0}
			mixed := map[string]any{"id": "mixed", "source": "cli", "started_at": 3.0, "messages": []any{msg(50, "before"), unnumbered, msg(51, "after")}}
			if batch {
				_, err := e.s.ImportSessions(e.ctx, []map[string]any{merged, mixed}, sessiondb.ImportOptions{})
				noErr(t, "ImportSessions", err)
			} else {
				e.importOne(merged, true)
				e.importOne(mixed, true)
			}
			for id, want := range map[string]string{"merged": "first second third fourth", "mixed": "before middle after"} {
				var got []string
				for _, m := range objectsOf(e.exported(id)["messages"]) {
					got = append(got, m["content"].(string))
				}
				if strings.Join(got, " ") != want {
					t.Errorf("batch %v: the messages of %s read %v, want %s", batch, id, got, want)
				}
			}
			if owned := objectsOf(e.exported("owner")["messages"]); len(owned) != 2 || owned[0]["content"] != "owned" {
				t.Errorf("batch %v: the session holding the taken id reads %v", batch, owned)
			}
		}
	})

	t.Run("TakenTitleIsConflict", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.setTitle("a", "Shared")
		rec := importRecord("b")
		rec["title"] = "Shared"
		r, err := e.s.ImportSession(e.ctx, rec, sessiondb.ImportOptions{})
		wantCode(t, "ImportSession with a taken title", err, sessiondb.ECONFLICT)
		if !strings.Contains(fmt.Sprint(err), `import session b: its title "Shared" is another session's`) {
			t.Errorf("ImportSession with a taken title: %v; want it to name the session and the title", err)
		}
		// In a batch, through the bulk path where a backend has one.
		recs := []map[string]any{importRecord("c"), rec}
		_, err = e.s.ImportSessions(e.ctx, recs, sessiondb.ImportOptions{})
		if !strings.Contains(fmt.Sprint(err), `import session b: its title "Shared" is another session's`) {
			t.Errorf("ImportSessions with a taken title: %v; want it to name the session and the title", err)
		}
		if r.Imported {
			t.Error("ImportSession reported true with an error")
		}
		_, err = e.s.GetSession(e.ctx, "b")
		wantCode(t, "GetSession after a refused import", err, sessiondb.ENOTFOUND)
	})

	t.Run("CleansAsTheAPIDoes", func(t *testing.T) {
		// A title is stored as SetSessionTitle stores it; JSON text that
		// is JSON is kept.
		e := newEnv(t, h)
		r := importRecord("s")
		r["title"] = "  Deploy\x1b]0;PWNED\x07\x1b[2J  fix\u200b  "
		r["model_config"] = `{"t": 0.5}`
		r["messages"].([]any)[0].(map[string]any)["reasoning_details"] = `[{"type": "reasoning.text"}]`
		res, err := e.s.ImportSession(e.ctx, r, sessiondb.ImportOptions{})
		if !res.Imported || err != nil {
			t.Fatalf("ImportSession = %+v, %v", res, err)
		}
		title, _, err := e.s.GetSessionTitle(e.ctx, "s")
		noErr(t, "GetSessionTitle", err)
		if want := "Deploy]0;PWNED[2J fix"; title != want {
			t.Errorf("title = %q, want %q (as SetSessionTitle cleans it)", title, want)
		}
		sess, err := e.s.GetSession(e.ctx, "s")
		noErr(t, "GetSession", err)
		if sess.ModelConfig == nil || *sess.ModelConfig != `{"t": 0.5}` {
			t.Errorf("model_config = %v", sess.ModelConfig)
		}
	})

	t.Run("WrongShapes", func(t *testing.T) {
		msg0 := func(r map[string]any) map[string]any { return r["messages"].([]any)[0].(map[string]any) }
		cases := []struct {
			name  string
			edit  func(r map[string]any)
			field string // the error names it
		}{
			{"no id", func(r map[string]any) { delete(r, "id") }, "id"},
			{"empty id", func(r map[string]any) { r["id"] = "" }, "id"},
			{"numeric id", func(r map[string]any) { r["id"] = 3.0 }, "id"},
			{"no source", func(r map[string]any) { delete(r, "source") }, "source"},
			{"no started_at", func(r map[string]any) { delete(r, "started_at") }, "started_at"},
			{"started_at text", func(r map[string]any) { r["started_at"] = "yesterday" }, "started_at"},
			{"fractional tokens", func(r map[string]any) { r["input_tokens"] = 1.5 }, "input_tokens"},
			{"model as number", func(r map[string]any) { r["model"] = 4.0 }, "model"},
			{"cost as text", func(r map[string]any) { r["estimated_cost_usd"] = "1" }, "estimated_cost_usd"},
			{"messages not a list", func(r map[string]any) { r["messages"] = "none" }, "messages"},
			{"message not an object", func(r map[string]any) { r["messages"] = []any{"hi"} }, "messages[0]"},
			{"message without role", func(r map[string]any) { delete(msg0(r), "role") }, "messages[0].role"},
			{"message with empty role", func(r map[string]any) { msg0(r)["role"] = "" }, "messages[0].role"},
			{"message without timestamp", func(r map[string]any) { delete(msg0(r), "timestamp") }, "messages[0].timestamp"},
			{"timestamp text", func(r map[string]any) { msg0(r)["timestamp"] = "now" }, "messages[0].timestamp"},
			{"content as true", func(r map[string]any) { msg0(r)["content"] = true }, "messages[0].content"},
			{"token_count text", func(r map[string]any) { msg0(r)["token_count"] = "5" }, "messages[0].token_count"},
			{"second message bad", func(r map[string]any) {
				r["messages"] = append(r["messages"].([]any), map[string]any{"role": "user", "timestamp": "later"})
			}, "messages[2].timestamp"},
			// The rules the API keeps (issue 8, defect 5).
			{"title of a million characters", func(r map[string]any) { r["title"] = strings.Repeat("t", 1_000_000) }, "title"},
			{"title too long once cleaned", func(r map[string]any) { r["title"] = strings.Repeat("ab\x07", 51) }, "title"},
			{"started_at 1e308", func(r map[string]any) { r["started_at"] = 1e308 }, "started_at"},
			{"started_at before 1970", func(r map[string]any) { r["started_at"] = -1.0 }, "started_at"},
			{"ended_at past the year 9999", func(r map[string]any) { r["ended_at"] = 1e13 }, "ended_at"},
			{"timestamp 1e308", func(r map[string]any) { msg0(r)["timestamp"] = 1e308 }, "messages[0].timestamp"},
			{"tool_calls not JSON", func(r map[string]any) { msg0(r)["tool_calls"] = "notjson" }, "messages[0].tool_calls"},
			{"reasoning_details not JSON", func(r map[string]any) { msg0(r)["reasoning_details"] = "[1," }, "messages[0].reasoning_details"},
			{"codex_reasoning_items not JSON", func(r map[string]any) { msg0(r)["codex_reasoning_items"] = "{" }, "messages[0].codex_reasoning_items"},
			{"model_config not JSON", func(r map[string]any) { r["model_config"] = "{bad" }, "model_config"},
		}
		e := newEnv(t, h)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := importRecord("s")
				tc.edit(r)
				res, err := e.s.ImportSession(e.ctx, r, sessiondb.ImportOptions{})
				wantCode(t, "ImportSession", err, sessiondb.EINVALID)
				if res.Imported || !strings.Contains(err.Error(), tc.field) {
					t.Errorf("ImportSession = %+v, %v; want nothing imported and an error naming %s", res, err, tc.field)
				}
			})
		}
		if n, err := e.s.SessionCount(e.ctx, ""); err != nil || n != 0 {
			t.Errorf("SessionCount = %d, %v after refused imports; want 0", n, err)
		}
		if n, err := e.s.MessageCount(e.ctx, ""); err != nil || n != 0 {
			t.Errorf("MessageCount = %d, %v after refused imports; want 0", n, err)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		bad := importRecord("bad")
		bad["started_at"] = "never"
		taken := importRecord("taken")
		taken["title"] = "Shared"
		cases := []struct {
			name     string
			recs     []map[string]any
			want     []bool
			code     string   // of the error; "" none
			errNames string   // the error names this session
			stored   []string // sessions present afterwards (besides "old")
		}{
			{name: "all new", recs: []map[string]any{importRecord("a"), importRecord("b")}, want: []bool{true, true}, stored: []string{"a", "b"}},
			{name: "existing one skipped", recs: []map[string]any{importRecord("a"), importRecord("old"), importRecord("b")},
				want: []bool{true, false, true}, stored: []string{"a", "b"}},
			{name: "stops at an invalid record", recs: []map[string]any{importRecord("a"), bad, importRecord("b")},
				want: []bool{true}, code: sessiondb.EINVALID, errNames: "bad", stored: []string{"a"}},
			{name: "stops at a conflict", recs: []map[string]any{importRecord("a"), taken, importRecord("b")},
				want: []bool{true}, code: sessiondb.ECONFLICT, errNames: "taken", stored: []string{"a"}},
			{name: "first fails", recs: []map[string]any{bad, importRecord("a")}, want: []bool{}, code: sessiondb.EINVALID, errNames: "bad"},
			{name: "empty batch", recs: nil, want: []bool{}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("old", "cli")
				e.setTitle("old", "Shared")
				results, err := e.s.ImportSessions(e.ctx, tc.recs, sessiondb.ImportOptions{})
				got := make([]bool, len(results))
				for i, r := range results {
					got[i] = r.Imported
				}
				if tc.code == "" {
					noErr(t, "ImportSessions", err)
				} else {
					wantCode(t, "ImportSessions", err, tc.code)
					if !strings.Contains(err.Error(), tc.errNames) {
						t.Errorf("error %q does not name session %s", err, tc.errNames)
					}
				}
				if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
					t.Errorf("imported = %v, want %v", got, tc.want)
				}
				all, err := e.s.SearchSessions(e.ctx, "", 100, 0)
				noErr(t, "SearchSessions", err)
				want := append([]string{"old"}, tc.stored...)
				if g := sorted(ids(all)); !reflect.DeepEqual(g, sorted(want)) {
					t.Errorf("sessions stored = %v, want %v", g, sorted(want))
				}
				for _, id := range tc.stored {
					if s := e.get(id); s.MessageCount != 2 || s.ToolCallCount != 2 {
						t.Errorf("%s: message_count/tool_call_count = %d/%d, want 2/2", id, s.MessageCount, s.ToolCallCount)
					}
				}
			})
		}
	})
}

// objectsOf is a decoded JSON list of objects.
func objectsOf(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, m)
	}
	return out
}
