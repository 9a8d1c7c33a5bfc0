package sessiondb

import (
	"encoding/json"
	"testing"
)

// TestMessageJSON: a Message in JSON gives multimodal content as its list
// of parts (Hermes' get_messages), other content as its text, and reads
// back to the bytes Hermes stores.
func TestMessageJSON(t *testing.T) {
	for _, c := range []struct {
		name, stored, json string
	}{
		{"parts", "\x00json:" + `[{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]`,
			`[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]`},
		{"object", "\x00json:" + `{"type": "text", "text": "x"}`, `{"type":"text","text":"x"}`},
		{"text", "plain text", `"plain text"`},
		{"marked but not JSON", "\x00json:[oops", `"\u0000json:[oops"`},
		{"marked scalar", "\x00json:5", `"\u0000json:5"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Message{ID: 7, Role: "user", Content: &c.stored, Active: 1}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Content json.RawMessage `json:"content"`
				Active  int             `json:"active"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Content) != c.json || got.Active != 1 {
				t.Errorf("content %s, active %d; want %s, 1", got.Content, got.Active, c.json)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Content == nil || *back.Content != c.stored || back.ID != 7 || back.Role != "user" {
				t.Errorf("read back %+v (content %q), want the stored %q", back, deref(back.Content), c.stored)
			}
		})
	}
	var null Message
	if err := json.Unmarshal([]byte(`{"id":1,"content":null}`), &null); err != nil || null.Content != nil {
		t.Errorf("null content read as %v (%v)", null.Content, err)
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
