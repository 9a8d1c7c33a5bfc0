package mailbox

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func FuzzDecodeContent(f *testing.F) {
	for _, s := range []string{
		`{"text":"hi"}`,
		`{"sender":"a","senderId":"1","text":"x","attachments":[{"type":"image","data":"aGk="}]}`,
		`{"operation":"edit","messageId":"m","text":"t"}`,
		`{"type":"ask_question","questionId":"q","options":[{"label":"a"}]}`,
		`{"files":["a","b"]}`,
		`{"text":5}`,
		`[1,2]`,
		`{"a":1,"a":2}`,
		`{"x":{"y":[null,true]}} `,
		``,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := DecodeContent(raw)
		if err != nil {
			if !reflect.ValueOf(c).IsZero() {
				t.Fatalf("decode failed but content was returned: %+v", c)
			}
			return
		}
		// Whatever decodes is a JSON object that stores compactly and
		// decodes again to the same fields.
		norm, err := normalizeContent("content", raw)
		if err != nil {
			t.Fatalf("decoded but not storable: %v", err)
		}
		if !json.Valid(norm) {
			t.Fatalf("stored form is not JSON: %q", norm)
		}
		c2, err := DecodeContent(norm)
		if err != nil || c2.Text != c.Text || c2.MessageID != c.MessageID || len(c2.Files) != len(c.Files) {
			t.Fatalf("re-decode differs: %+v vs %+v (%v)", c2, c, err)
		}
		o, err := parseObject("content", norm)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(o.marshal()) {
			t.Fatalf("ordered re-marshal is not JSON: %q", o.marshal())
		}
	})
}

func FuzzParseRecurrence(f *testing.F) {
	for _, s := range []string{"0 9 * * *", "*/5 * * * *", "0 0 30 2 *", "0 9 * JAN MON-FRI", "30 0 9 * * *", "@daily", "1-2/0 * * * *", "", "? ? ? ? ?"} {
		f.Add(s)
	}
	ny, _ := time.LoadLocation("America/New_York")
	from := time.Date(2026, 3, 8, 6, 59, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		r, err := ParseRecurrence(expr)
		if err != nil {
			return
		}
		for _, loc := range []*time.Location{time.UTC, ny} {
			n := r.Next(from, loc)
			if n.IsZero() {
				continue
			}
			if !n.After(from) {
				t.Fatalf("Next(%s) = %v, not after %v", expr, n, from)
			}
		}
	})
}
