package sessiondb

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestPythonJSON: the bytes Python's json.dumps(json.loads(text)) writes
// (each want below printed by /usr/bin/python3, Python 3.11): member order
// kept, ", " and ": ", non-ASCII escaped (a surrogate pair beyond the BMP),
// DEL escaped, "/" not, ints as digits, floats as repr, an overflow as
// Infinity.
func TestPythonJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[{"type":"text","text":"café ☕ 😀"},{"type":"image_url","image_url":{"url":"data:x","detail":"low"}}]`,
			`[{"type": "text", "text": "caf\u00e9 \u2615 \ud83d\ude00"}, {"type": "image_url", "image_url": {"url": "data:x", "detail": "low"}}]`},
		{`{"b":1,"a":[1.0,2.50,1e5,1E-7,-0,0.1,123456789012345678901234567890,1e400],"c":null,"d":true,"e":false}`,
			`{"b": 1, "a": [1.0, 2.5, 100000.0, 1e-07, 0, 0.1, 123456789012345678901234567890, Infinity], "c": null, "d": true, "e": false}`},
		{`"line\nbreak\ttab \u0001 \u007f \"q\" \\ / <html>"`, `"line\nbreak\ttab \u0001 \u007f \"q\" \\ / <html>"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`[[],{}]`, `[[], {}]`},
		{` { "spaced" : [ 1 , 2 ] } `, `{"spaced": [1, 2]}`},
		{`{"z":{"y":{"x":[{"w":"v"}]}}}`, `{"z": {"y": {"x": [{"w": "v"}]}}}`},
		{`12`, `12`},
		{`-3.25`, `-3.25`},
		{`"\ud83d\ude00"`, `"\ud83d\ude00"`},
	} {
		got, err := PythonJSON([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("PythonJSON(%s) = %s, %v\nwant %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `[1,`, `{"a":1}x`, `nul`} {
		if _, err := PythonJSON([]byte(bad)); ErrorCode(err) != EINVALID {
			t.Errorf("PythonJSON(%q) = %v, want invalid", bad, err)
		}
	}
}

// TestPythonFloat: Python's repr of each (printed by /usr/bin/python3).
func TestPythonFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{1e+16, "1e+16"}, {1000000000000000.0, "1000000000000000.0"}, {0.0001, "0.0001"}, {1e-05, "1e-05"},
		{1.5e-07, "1.5e-07"}, {1.2345678901234568e+17, "1.2345678901234568e+17"}, {5.0, "5.0"},
		{math.Copysign(0, -1), "-0.0"}, {0.1, "0.1"}, {1e+22, "1e+22"}, {1.7976931348623157e+308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"}, {12345.678, "12345.678"}, {1234567890123456.8, "1234567890123456.8"}, {-2.5e-05, "-2.5e-05"},
		{100.0, "100.0"}, {0.0036, "0.0036"},
	} {
		if got := PythonFloat(c.f); got != c.want {
			t.Errorf("PythonFloat(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

// TestDecodeRecord: numbers as json.Number; model_config's and each
// message's content and JSON columns' lists and objects kept as their
// text, in the order written; other values decoded; not an object is
// invalid.
func TestDecodeRecord(t *testing.T) {
	rec, err := DecodeRecord([]byte(`{"id":"s","started_at":1767225600.5,"input_tokens":9007199254740993,
		"model_config":{"z":1,"a":2},"title":null,"extra":{"k":[1]},
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"tool_calls":"[]","reasoning_details":{"b":1,"a":2},"timestamp":2},"not an object"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec["input_tokens"] != json.Number("9007199254740993") || rec["started_at"] != json.Number("1767225600.5") {
		t.Errorf("numbers = %#v, %#v", rec["input_tokens"], rec["started_at"])
	}
	if string(rec["model_config"].(json.RawMessage)) != `{"z":1,"a":2}` {
		t.Errorf("model_config = %#v, want its text in order", rec["model_config"])
	}
	if _, ok := rec["extra"].(map[string]any); !ok {
		t.Errorf("another object = %#v, want it decoded", rec["extra"])
	}
	msgs := rec["messages"].([]any)
	m := msgs[0].(map[string]any)
	if string(m["content"].(json.RawMessage)) != `[{"type":"text","text":"hi"}]` || m["tool_calls"] != "[]" ||
		string(m["reasoning_details"].(json.RawMessage)) != `{"b":1,"a":2}` || m["timestamp"] != json.Number("2") {
		t.Errorf("message = %#v", m)
	}
	if msgs[1] != "not an object" {
		t.Errorf("a message that is not an object = %#v, want it as it is (Validate names it)", msgs[1])
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":`, `"s"`} {
		if _, err := DecodeRecord([]byte(bad)); ErrorCode(err) != EINVALID {
			t.Errorf("DecodeRecord(%s) = %v, want invalid", bad, err)
		}
	}
}

// TestImportContent: a message's content as Hermes' _encode_content
// stores it: a string as it is, parts (in the order given, or a decoded
// list) as the marker and json.dumps' bytes, a number as Python writes
// it; anything else invalid naming the field.
func TestImportContent(t *testing.T) {
	for _, c := range []struct {
		in   any
		want any
	}{
		{"plain", "plain"},
		{nil, nil},
		{json.RawMessage(`[{"type":"text","text":"café"},{"type":"image_url","image_url":{"url":"data:x"}}]`),
			"\x00json:" + `[{"type": "text", "text": "caf\u00e9"}, {"type": "image_url", "image_url": {"url": "data:x"}}]`},
		{[]any{map[string]any{"type": "text", "text": "hi"}}, "\x00json:" + `[{"text": "hi", "type": "text"}]`},
		{json.Number("5"), "5"},
		{json.Number("2.50"), "2.5"},
		{7.0, "7"},
	} {
		got, err := ImportValue("messages[0].content", KindContent, c.in)
		if err != nil || got != c.want {
			t.Errorf("content %#v = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	if _, err := ImportValue("messages[3].content", KindContent, true); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "messages[3].content") {
		t.Errorf("content true = %v, want invalid naming the field", err)
	}
	// A JSON column given in order: json.dumps' bytes; an empty list is
	// stored as nothing, as Hermes stores it.
	got, err := ImportValue("tool_calls", KindJSON, json.RawMessage(`[{"id":"c1","type":"function"}]`))
	if err != nil || got != `[{"id": "c1", "type": "function"}]` {
		t.Errorf("tool_calls = %#v, %v", got, err)
	}
	if got, err := ImportValue("tool_calls", KindJSON, json.RawMessage(`[]`)); got != nil || err != nil {
		t.Errorf("tool_calls [] = %#v, %v; want NULL", got, err)
	}
	if _, err := ImportValue("model", KindText, json.RawMessage(`{}`)); ErrorCode(err) != EINVALID {
		t.Errorf("an object for a text column = %v, want invalid", err)
	}
}

// BenchmarkDecodeRecord measures reading an export line for import, a
// session of 200 messages (text, tool calls, a multimodal message), with
// DecodeRecord against a plain json.Unmarshal of the same line.
func BenchmarkDecodeRecord(b *testing.B) {
	msgs := []any{}
	for i := range 200 {
		m := map[string]any{"id": i, "role": "user", "timestamp": 1767225600.0 + float64(i), "content": strings.Repeat("words of a turn ", 40)}
		if i%10 == 1 {
			m["role"], m["tool_calls"] = "assistant", []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "terminal", "arguments": "{}"}}}
		}
		if i == 5 {
			m["content"] = []any{map[string]any{"type": "text", "text": "what is this?"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + strings.Repeat("QUJD", 20000)}}}
		}
		msgs = append(msgs, m)
	}
	line, err := json.Marshal(map[string]any{"id": "s", "source": "cli", "started_at": 1767225600.0, "messages": msgs})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeRecord", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := DecodeRecord(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
