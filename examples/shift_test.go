package examples

import (
	"bufio"
	"encoding/json"
	"io"
	"reflect"
	"testing"
	"time"
)

// records decodes JSONL into records, numbers as written.
func records(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.UseNumber()
	var out []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// stamps lists a record's timestamps in a fixed order, as numbers.
func stamps(t *testing.T, r map[string]any) []float64 {
	t.Helper()
	var out []float64
	add := func(v any) {
		if n, ok := v.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
	}
	add(r["started_at"])
	add(r["ended_at"])
	for _, m := range r["messages"].([]any) {
		add(m.(map[string]any)["timestamp"])
	}
	return out
}

// TestConversationsEndingAt: every timestamp moves by one whole number of
// seconds, the newest lands on the time asked for, and nothing else of a
// record changes; the embedded file keeps its own dates.
func TestConversationsEndingAt(t *testing.T) {
	newest := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	r, n, err := ConversationsEndingAt(newest)
	if err != nil {
		t.Fatal(err)
	}
	moved := records(t, r)
	orig := records(t, Conversations())
	if n <= 0 || len(moved) != len(orig) || len(orig) != 8 {
		t.Fatalf("%d records (%d bytes), want the 8 of the file", len(moved), n)
	}
	var shift, last float64
	for i := range orig {
		a, b := stamps(t, orig[i]), stamps(t, moved[i])
		if len(a) != len(b) || len(a) < 3 {
			t.Fatalf("record %d: %d timestamps moved, %d in the file", i, len(b), len(a))
		}
		for j := range a {
			d := b[j] - a[j]
			if i == 0 && j == 0 {
				shift = d
			}
			if d != shift || d != float64(int64(d)) {
				t.Errorf("record %d timestamp %d moved by %v, the first by %v: the spacing changed", i, j, d, shift)
			}
			last = max(last, b[j])
		}
		for _, rec := range []map[string]any{orig[i], moved[i]} {
			for _, m := range rec["messages"].([]any) {
				delete(m.(map[string]any), "timestamp")
			}
		}
		for _, k := range []string{"started_at", "ended_at"} {
			delete(orig[i], k)
			delete(moved[i], k)
		}
		if !reflect.DeepEqual(orig[i], moved[i]) {
			t.Errorf("record %d changed beyond its timestamps:\n%v\n%v", i, orig[i], moved[i])
		}
	}
	if got := time.Unix(int64(last), 0); got.Sub(newest).Abs() > time.Second {
		t.Errorf("the newest timestamp is %v, want %v", got.UTC(), newest)
	}
	if string(moved[0]["id"].(string)) != "20260315_092437_c9a6ff" {
		t.Errorf("ids changed: %v", moved[0]["id"])
	}
}
