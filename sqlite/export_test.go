package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// jsonRoundTrip turns an exported record into what a JSONL reader gets.
func jsonRoundTrip(t *testing.T, rec map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	src := openTestStore(t, "", Options{Now: c.Now})
	if _, err := src.CreateSession(ctx, sessiondb.NewSession{ID: "root", Source: "cli", Model: "m", ModelConfig: map[string]any{"t": 0.5}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, src, sessiondb.NewMessage{SessionID: "root", Role: "user", Content: str("hello zebra")})
	mustAppend(t, src, sessiondb.NewMessage{SessionID: "root", Role: "assistant", Content: str(""), ToolCalls: []any{map[string]any{"id": "c1"}, map[string]any{"id": "c2"}},
		Reasoning: str("think"), ReasoningDetails: []any{map[string]any{"type": "reasoning.text"}}})
	mustAppend(t, src, sessiondb.NewMessage{SessionID: "root", Role: "tool", Content: str("ok"), ToolCallID: str("c1"), ToolName: str("terminal")})
	if err := src.EndSession(ctx, "root", "compression"); err != nil {
		t.Fatal(err)
	}
	c.Advance(1e9)
	if _, err := src.CreateSession(ctx, sessiondb.NewSession{ID: "child", Source: "cli", ParentSessionID: "root"}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, src, sessiondb.NewMessage{SessionID: "child", Role: "user", Content: str("continued zebra")})
	if _, err := src.SetSessionTitle(ctx, "child", "zebra work"); err != nil {
		t.Fatal(err)
	}
	if err := src.UpdateTokenCounts(ctx, "root", sessiondb.TokenUpdate{Input: 10, Output: 5, EstimatedCostUSD: ptrF(0.25)}); err != nil {
		t.Fatal(err)
	}

	// Export newest first (child before its parent), import into a new file.
	var recs []map[string]any
	if err := src.ExportAll(ctx, "", func(r map[string]any) error { recs = append(recs, jsonRoundTrip(t, r)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0]["id"] != "child" {
		t.Fatalf("export order: %v", recs)
	}
	dst := openTestStore(t, "", Options{})
	for _, r := range recs {
		ok, err := dst.ImportSession(ctx, r)
		if err != nil || !ok {
			t.Fatalf("import %v: %v, %v", r["id"], ok, err)
		}
	}
	for _, id := range []string{"root", "child"} {
		a, _ := src.ExportSession(ctx, id)
		b, err := dst.ExportSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(jsonRoundTrip(t, a), jsonRoundTrip(t, b)) {
			t.Errorf("%s differs after import:\n%v\n%v", id, a, b)
		}
	}
	// Idempotent: a second import skips.
	if ok, err := dst.ImportSession(ctx, recs[0]); ok || err != nil {
		t.Errorf("re-import = %v, %v; want skipped", ok, err)
	}
	hits, err := dst.SearchMessages(ctx, "zebra", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 2 {
		t.Errorf("imported rows not searchable: %v %v", hits, err)
	}
	if tip, _ := dst.CompressionTip(ctx, "root"); tip != "child" {
		t.Errorf("lineage lost: tip of root = %s", tip)
	}
}

func ptrF(f float64) *float64 { return &f }

func TestImportRecomputesCountersAndKeepsFreeIDs(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "x", "cli")
	taken := mustAppend(t, s, sessiondb.NewMessage{SessionID: "x", Role: "user", Content: str("x")})
	rec := map[string]any{
		"id": "imp", "source": "hermes", "started_at": 1000.5, "message_count": 99.0, "tool_call_count": 99.0, "unknown_future_key": "ignored",
		"messages": []any{
			map[string]any{"id": float64(taken), "role": "user", "content": "first", "timestamp": 1001.0},
			map[string]any{"id": 500.0, "role": "assistant", "content": nil, "timestamp": 1002.0, "tool_calls": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}, "reasoning_details": `[{"k":1}]`},
			map[string]any{"role": "tool", "content": "r", "timestamp": 1003.0, "tool_call_id": "a", "token_count": 12.0},
		},
	}
	if ok, err := s.ImportSession(ctx, rec); !ok || err != nil {
		t.Fatalf("import = %v, %v", ok, err)
	}
	x, err := s.GetSession(ctx, "imp")
	if err != nil || x.MessageCount != 3 || x.ToolCallCount != 2 || x.StartedAt != 1000.5 {
		t.Fatalf("session = %+v, %v", x, err)
	}
	ms, err := s.GetMessages(ctx, "imp")
	if err != nil || len(ms) != 3 {
		t.Fatal(ms, err)
	}
	if ms[0].ID == taken || ms[1].ID != 500 || ms[2].ID <= 500 {
		t.Errorf("ids = %d %d %d; want a new id for the taken one, 500 kept, then later", ms[0].ID, ms[1].ID, ms[2].ID)
	}
	if ms[1].Timestamp != 1002 || string(ms[1].ToolCalls) != `[{"id":"a"},{"id":"b"}]` || *ms[1].ReasoningDetails != `[{"k":1}]` || *ms[2].TokenCount != 12 {
		t.Errorf("fields = %+v", ms[1])
	}
}

func TestImportRejectsWrongShapes(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	good := func() map[string]any {
		return map[string]any{"id": "s", "source": "cli", "started_at": 1.0,
			"messages": []any{map[string]any{"role": "user", "content": "c", "timestamp": 2.0}}}
	}
	cases := []struct {
		name  string
		edit  func(r map[string]any)
		field string
	}{
		{"no id", func(r map[string]any) { delete(r, "id") }, "id"},
		{"numeric id", func(r map[string]any) { r["id"] = 3.0 }, "id"},
		{"no source", func(r map[string]any) { delete(r, "source") }, "source"},
		{"started_at text", func(r map[string]any) { r["started_at"] = "yesterday" }, "started_at"},
		{"fractional tokens", func(r map[string]any) { r["input_tokens"] = 1.5 }, "input_tokens"},
		{"model as number", func(r map[string]any) { r["model"] = 4.0 }, "model"},
		{"cost as text", func(r map[string]any) { r["estimated_cost_usd"] = "1" }, "estimated_cost_usd"},
		{"messages not a list", func(r map[string]any) { r["messages"] = "none" }, "messages"},
		{"message not an object", func(r map[string]any) { r["messages"] = []any{"hi"} }, "messages[0]"},
		{"message without role", func(r map[string]any) { delete(r["messages"].([]any)[0].(map[string]any), "role") }, "messages[0].role"},
		{"timestamp text", func(r map[string]any) { r["messages"].([]any)[0].(map[string]any)["timestamp"] = "now" }, "messages[0].timestamp"},
		{"content as list", func(r map[string]any) { r["messages"].([]any)[0].(map[string]any)["content"] = []any{1.0} }, "messages[0].content"},
		{"token_count text", func(r map[string]any) { r["messages"].([]any)[0].(map[string]any)["token_count"] = "5" }, "messages[0].token_count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(r)
			ok, err := s.ImportSession(ctx, r)
			if ok || sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("ImportSession = %v, %v; want invalid naming %s", ok, err, tc.field)
			}
		})
	}
	if n, _ := s.SessionCount(ctx, ""); n != 0 {
		t.Errorf("%d sessions stored by failed imports", n)
	}
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	s := openTestStore(t, "", Options{Now: c.Now})
	add := func(id, source, model string, in, out int64, est float64, act *float64) {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: source, Model: model}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateTokenCounts(ctx, id, sessiondb.TokenUpdate{Input: in, Output: out, EstimatedCostUSD: &est, ActualCostUSD: act}); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, sessiondb.NewMessage{SessionID: id, Role: "user", Content: str("x")})
		c.Advance(1e9)
	}
	add("a", "cli", "big", 100, 10, 1.0, nil)
	add("b", "cli", "small", 10, 1, 0.1, ptrF(0.2))
	add("c", "telegram", "big", 1000, 100, 3.0, nil)
	add("d", "telegram", "", 5, 5, 0, nil)
	rep, err := s.Usage(ctx, sessiondb.UsageFilter{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	wantModel := []sessiondb.UsageRow{
		{Key: "big", Sessions: 2, Messages: 2, InputTokens: 1100, OutputTokens: 110, EstimatedCostUSD: 4.0},
		{Key: "small", Sessions: 1, Messages: 1, InputTokens: 10, OutputTokens: 1, EstimatedCostUSD: 0.1, ActualCostUSD: 0.2},
		{Key: "", Sessions: 1, Messages: 1, InputTokens: 5, OutputTokens: 5},
	}
	if !reflect.DeepEqual(rep.ByModel, wantModel) {
		t.Errorf("ByModel = %+v\nwant %+v", rep.ByModel, wantModel)
	}
	if len(rep.BySource) != 2 || rep.BySource[0].Key != "telegram" || rep.BySource[1].InputTokens != 110 {
		t.Errorf("BySource = %+v", rep.BySource)
	}
	var top []string
	for _, r := range rep.Top {
		top = append(top, r.Key)
	}
	if !reflect.DeepEqual(top, []string{"c", "a", "b"}) {
		t.Errorf("Top = %v; want c a b", top)
	}
	rep, err = s.Usage(ctx, sessiondb.UsageFilter{Source: "cli", Since: sessiondb.EpochSeconds(c.Now()) - 3})
	if err != nil || len(rep.BySource) != 1 || rep.BySource[0].Sessions != 1 {
		t.Errorf("filtered = %+v, %v; want only b", rep, err)
	}
}

// FuzzImportSession feeds arbitrary JSON records to the import path: it
// must never panic, must classify every refusal as invalid or conflict,
// and must leave the file intact.
func FuzzImportSession(f *testing.F) {
	for _, seed := range []string{
		`{"id":"s","source":"cli","started_at":1,"messages":[{"role":"user","content":"hi","timestamp":2}]}`,
		`{"id":"s","source":"cli","started_at":1,"parent_session_id":"p","title":"t","messages":[{"id":7,"role":"assistant","tool_calls":[{"id":"c"}],"timestamp":2}]}`,
		`{"id":"s","source":"cli","started_at":"x"}`,
		`{"id":"","messages":null}`,
		`{"id":"s","source":"cli","started_at":1e308,"input_tokens":1e300,"messages":[{"role":"tool","timestamp":-1,"token_count":1.5}]}`,
		`{"id":"s","source":"cli","started_at":1,"model_config":{"a":[1,{"b":null}]},"messages":[{"role":"u","timestamp":1,"reasoning_details":{"x":1},"content":"\u0000json:{}"}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := openTestStore(f, "", Options{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec map[string]any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&rec) != nil || rec == nil {
			return
		}
		_, err := s.ImportSession(ctx, rec)
		if code := sessiondb.ErrorCode(err); err != nil && code != sessiondb.EINVALID && code != sessiondb.ECONFLICT {
			t.Fatalf("ImportSession(%s) = %v (code %s); want invalid or conflict", data, err, code)
		}
		if id, ok := rec["id"].(string); ok && err == nil {
			if _, err := s.ExportSession(ctx, id); err != nil {
				t.Fatalf("imported %q cannot be exported: %v", id, err)
			}
		}
	})
}
