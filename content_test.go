package sessiondb

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestContentText(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"plain text stays", "hello\nworld", "hello\nworld"},
		{"empty", "", ""},
		{"text and an inline image", "\x00json:" + `[{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]`,
			"what is this?\n[image: image/png]"},
		{"remote image keeps no query", "\x00json:" + `[{"type": "image_url", "image_url": {"url": "https://cdn.example.com/a/cat.jpg?sig=SECRET"}}]`,
			"[image: https://cdn.example.com/a/cat.jpg]"},
		{"anthropic image and document", "\x00json:" + `[{"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "AAAA"}}, {"type": "document", "source": {"media_type": "application/pdf"}}]`,
			"[image: image/webp]\n[document: application/pdf]"},
		{"audio, file, thinking, unknown", "\x00json:" + `[{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, {"type": "file", "file": {"filename": "report.csv"}}, {"type": "thinking", "thinking": "hmm"}, {"type": "hologram"}]`,
			"[audio: wav]\n[file: report.csv]\n[thinking]\n[hologram]"},
		{"a single part object", "\x00json:" + `{"type": "text", "text": "only me"}`, "only me"},
		{"an object that is no part", "\x00json:" + `{"parts": [1, 2]}`, "[structured content]"},
		{"strings in the list are text", "\x00json:" + `["a", 5]`, "a\n[part]"},
		{"the fork's marker", "\x01json:" + `[{"type": "text", "text": "forked"}]`, "forked"},
		{"marked but not JSON stays raw", "\x00json:{broken", "\x00json:{broken"},
		{"marker not at the start is text", "see \x00json:[]", "see \x00json:[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContentText(tc.content); got != tc.want {
				t.Errorf("ContentText(%q) = %q, want %q", tc.content, got, tc.want)
			}
			m := Message{Content: &tc.content}
			if got := m.Text(); got != tc.want {
				t.Errorf("Message.Text() = %q, want %q", got, tc.want)
			}
		})
	}
	if got := (&Message{}).Text(); got != "" {
		t.Errorf("NULL content: %q", got)
	}
	long := "\x00json:" + `[{"type": "document", "title": "` + strings.Repeat("é", 200) + `"}]`
	if got := ContentText(long); !strings.HasSuffix(got, "…]") || len([]rune(got)) != len("[document: ")+120+2 {
		t.Errorf("a long name is not cut: %q", got)
	}
}

// FuzzContentText feeds arbitrary stored content: it never panics, and
// content without a marker comes back unchanged.
func FuzzContentText(f *testing.F) {
	f.Add("\x00json:" + `[{"type": "text", "text": "x"}, {"type": "image_url", "image_url": "data:image/png,"}]`)
	f.Add("\x00json:" + `{"type": "image", "source": {"url": "http://[::1"}}`)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, content string) {
		got := ContentText(content)
		if _, marked := structuredJSON(content); !marked && got != content {
			t.Fatalf("unmarked content changed: %q -> %q", content, got)
		}
	})
}

func TestNonNilListsEncodeAsEmptyArrays(t *testing.T) {
	var none []string
	for _, tc := range []struct {
		in   []string
		want string
	}{{none, "[]"}, {[]string{}, "[]"}, {[]string{"a"}, `["a"]`}} {
		b, err := json.Marshal(NonNil(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("NonNil(%#v) encodes as %s (%v), want %s", tc.in, b, err, tc.want)
		}
	}
}
