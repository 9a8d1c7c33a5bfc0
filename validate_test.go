package sessiondb

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestValidate holds each input type's Validate to its rules: valid inputs
// pass, and each refusal is invalid and names the field.
func TestValidate(t *testing.T) {
	nan, inf, neg := math.NaN(), math.Inf(1), -1.0
	okMsg := map[string]any{"role": "user", "content": "hi", "timestamp": 2.0}
	rec := func(edit func(SessionRecord)) SessionRecord {
		r := SessionRecord{"id": "s", "source": "cli", "started_at": 1.0, "messages": []any{okMsg}}
		edit(r)
		return r
	}
	cases := []struct {
		name  string
		v     interface{ Validate() error }
		field string // the refusal names it; "" = valid
	}{
		{"session", NewSession{ID: "s", Source: "cli", ModelConfig: map[string]any{"t": 0.5}}, ""},
		{"session without id", NewSession{Source: "cli"}, "session id"},
		{"session without id or source", NewSession{}, "session id"},
		{"session without source", NewSession{ID: "s"}, "source"},
		{"session with unencodable config", NewSession{ID: "s", Source: "cli", ModelConfig: map[string]any{"f": func() {}}}, "model_config"},
		{"session with empty config", NewSession{ID: "s", Source: "cli", ModelConfig: map[string]any{}}, ""},
		{"session with an id at the limit", NewSession{ID: strings.Repeat("s", MaxSessionIDBytes), Source: "cli"}, ""},
		{"session with an id over the limit", NewSession{ID: strings.Repeat("s", MaxSessionIDBytes+1), Source: "cli"}, "session id \"sss"},

		{"message", NewMessage{SessionID: "s", Role: "user"}, ""},
		{"message without session", NewMessage{Role: "user"}, "session id"},
		{"message without role", NewMessage{SessionID: "s"}, "role"},
		{"message to an id over the limit", NewMessage{SessionID: strings.Repeat("s", 8000), Role: "user"}, "8000 bytes, the limit is 255"},

		{"tokens", TokenUpdate{Input: 3, EstimatedCostUSD: &neg, ActualCostUSD: new(float64)}, ""},
		{"NaN estimate", TokenUpdate{EstimatedCostUSD: &nan}, "estimated_cost_usd"},
		{"infinite actual", TokenUpdate{ActualCostUSD: &inf}, "actual_cost_usd"},

		{"page", Page{BeforeID: 5, Limit: 10}, ""},
		{"negative page limit", Page{Limit: -1}, "limit"},
		{"negative cursor", Page{AfterID: -1}, "cursors"},

		{"rich filter", RichFilter{Limit: 0, Offset: 3}, ""},
		{"rich negative limit", RichFilter{Limit: -1}, "limit -1"},
		{"rich negative offset", RichFilter{Offset: -2}, "offset -2"},
		{"search filter", SearchFilter{Limit: 5}, ""},
		{"search negative limit", SearchFilter{Limit: -3}, "limit -3"},
		{"search negative offset", SearchFilter{Offset: -4}, "offset -4"},

		{"retention", RetentionPolicy{MaxAgeDays: 30, MinInterval: time.Hour}, ""},
		{"retention zero age", RetentionPolicy{}, "max age"},
		{"retention negative age", RetentionPolicy{MaxAgeDays: -1}, "max age"},
		{"retention NaN age", RetentionPolicy{MaxAgeDays: nan}, "max age"},
		{"retention infinite age", RetentionPolicy{MaxAgeDays: inf}, "max age"},
		{"retention negative interval", RetentionPolicy{MaxAgeDays: 1, MinInterval: -time.Second}, "min interval"},

		{"record", rec(func(SessionRecord) {}), ""},
		{"record without messages", rec(func(r SessionRecord) { delete(r, "messages") }), ""},
		{"record with null messages", rec(func(r SessionRecord) { r["messages"] = nil }), ""},
		{"record with json.Number times", rec(func(r SessionRecord) {
			r["started_at"] = json.Number("1.5")
			r["messages"] = []any{map[string]any{"role": "user", "timestamp": json.Number("2")}}
		}), ""},
		{"record with exported messages", rec(func(r SessionRecord) { r["messages"] = []Message{{Role: "user"}} }), ""},
		{"record without id", rec(func(r SessionRecord) { delete(r, "id") }), "id"},
		{"record with an id over the limit", rec(func(r SessionRecord) { r["id"] = strings.Repeat("s", 256) }), "id: session id"},
		{"record with numeric id", rec(func(r SessionRecord) { r["id"] = 3.0 }), "id"},
		{"record with empty source", rec(func(r SessionRecord) { r["source"] = "" }), "source"},
		{"record with an end reason", rec(func(r SessionRecord) { r["end_reason"] = "cli_close" }), ""},
		{"record with a null end reason", rec(func(r SessionRecord) { r["end_reason"] = nil }), ""},
		{"record with an escape in end_reason", rec(func(r SessionRecord) { r["end_reason"] = "\x1b]0;x\x07" }), "end_reason"},
		{"record with text started_at", rec(func(r SessionRecord) { r["started_at"] = "yesterday" }), "started_at"},
		{"record with messages as text", rec(func(r SessionRecord) { r["messages"] = "none" }), "messages"},
		{"record with a message not an object", rec(func(r SessionRecord) { r["messages"] = []any{okMsg, "hi"} }), "messages[1]"},
		{"record with a message without role", rec(func(r SessionRecord) { r["messages"] = []any{map[string]any{"timestamp": 1.0}} }), "messages[0].role"},
		{"record with a text timestamp", rec(func(r SessionRecord) {
			r["messages"] = []any{okMsg, map[string]any{"role": "user", "timestamp": "now"}}
		}), "messages[1].timestamp"},
		{"record with an exported message without role", rec(func(r SessionRecord) { r["messages"] = []Message{{Role: "user"}, {}} }), "messages[1].role"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.v.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), c.field) {
				t.Errorf("Validate() = %v (code %q), want invalid naming %q", err, ErrorCode(err), c.field)
			}
		})
	}
}

// TestCheckEndReason: an end reason is one line of text of at most
// MaxEndReasonBytes; every refusal is invalid and names end_reason.
func TestCheckEndReason(t *testing.T) {
	for _, ok := range []string{"compression", "orphaned_compression", "user closed the tab", "fermé", strings.Repeat("r", MaxEndReasonBytes)} {
		if err := CheckEndReason(ok); err != nil {
			t.Errorf("CheckEndReason(%.20q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("r", MaxEndReasonBytes+1), strings.Repeat("r", 900<<10),
		"nul\x00", "esc\x1b[2J", "two\nlines", "tab\there", "del\x7f", "c1\u0085", "csi\u009b2J", "bad\xff"} {
		err := CheckEndReason(bad)
		if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "end_reason") {
			t.Errorf("CheckEndReason(%.20q) = %v, want invalid naming end_reason", bad, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("CheckEndReason(%.20q): the error is %d bytes long", bad, len(err.Error()))
		}
	}
}

func TestValidateFork(t *testing.T) {
	cases := []struct {
		name  string
		n     NewSession
		field string
	}{
		{"source inherited", NewSession{ID: "f"}, ""},
		{"no id", NewSession{}, "session id"},
		{"same id as the source session", NewSession{ID: "src"}, "id of its own"},
		{"unencodable config", NewSession{ID: "f", ModelConfig: map[string]any{"c": make(chan int)}}, "model_config"},
		{"id over the limit", NewSession{ID: strings.Repeat("f", 256)}, "256 bytes, the limit is 255"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.n.ValidateFork("src")
			if c.field == "" {
				if err != nil {
					t.Fatalf("ValidateFork = %v, want nil", err)
				}
				return
			}
			if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), c.field) {
				t.Errorf("ValidateFork = %v, want invalid naming %q", err, c.field)
			}
		})
	}
}
