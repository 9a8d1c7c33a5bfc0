package http

import (
	"reflect"
	"strings"
	"testing"
)

func TestSnippetSegments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []segment
	}{
		{"plain", []segment{{"plain", false}}},
		{"a >>>b<<< c", []segment{{"a ", false}, {"b", true}, {" c", false}}},
		{">>>b<<<", []segment{{"b", true}}},
		{"<b>>>>needle<<<</b>", []segment{{"<b>", false}, {"needle", true}, {"</b>", false}}},
		{"x>>>>>>y<<<", []segment{{"x>>>", false}, {"y", true}}},
		{"<<<>>>x<<<<", []segment{{"<<<", false}, {"x", true}, {"<", false}}},
		{"open >>>to the end", []segment{{"open ", false}, {"to the end", true}}},
		{"", nil},
	} {
		if got := snippetSegments(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("snippetSegments(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	text := strings.Repeat("ab\n", 10) // 30 characters, 11 lines (the last empty)
	if c := clip(text, 100, 100, "u"); c.Cut || c.Head != text || c.Lines != 11 {
		t.Errorf("short text: %+v", c)
	}
	if c := clip(text, 5, 100, "u"); !c.Cut || c.Head != "ab\nab" || c.Total != 30 || c.URL != "u" {
		t.Errorf("by characters: %+v", c)
	}
	if c := clip(text, 100, 2, "u"); !c.Cut || c.Head != "ab\nab\n" {
		t.Errorf("by lines: %+v", c)
	}
	if c := clip("é"+strings.Repeat("ü", 9), 3, 100, "u"); c.Head != "éüü" || c.Total != 10 {
		t.Errorf("multibyte: %+v", c)
	}
	if c := clip("", 5, 5, "u"); c.Lines != 0 || c.Cut {
		t.Errorf("empty: %+v", c)
	}
}

func TestArgumentsText(t *testing.T) {
	for in, want := range map[string]string{
		`"{\"a\":1}"`: "{\n  \"a\": 1\n}",                     // a JSON string holding JSON
		`{"a":[1,2]}`: "{\n  \"a\": [\n    1,\n    2\n  ]\n}", // an object as stored by some agents
		`"ls -la"`:    "ls -la",                               // a plain string
		`"{broken"`:   "{broken",
		``:            "",
	} {
		if got := argumentsText([]byte(in)); got != want {
			t.Errorf("argumentsText(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestParseToolCalls(t *testing.T) {
	calls := parseToolCalls([]byte(`[{"id":"c1","type":"function","function":{"name":"grep","arguments":"{}"}},{"id":"c2","name":"bare"}]`))
	if len(calls) != 2 || calls[0].ID != "c1" || calls[0].Function.Name != "grep" || calls[1].Name != "bare" {
		t.Errorf("calls %+v", calls)
	}
	odd := parseToolCalls([]byte(`{"not":"a list"}`))
	if len(odd) != 1 || odd[0].Function.Name != "(tool calls)" || string(odd[0].Function.Arguments) != `{"not":"a list"}` {
		t.Errorf("unknown shape %+v", odd)
	}
	if parseToolCalls(nil) != nil || parseToolCalls([]byte("[]")) != nil || parseToolCalls([]byte("null")) != nil {
		t.Error("no calls should parse as none")
	}
}
