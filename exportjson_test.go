package sessiondb_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestWriteExportMatchesEncoder: WriteExport writes a session a value at a
// time, and the bytes are what encoding the whole record at once gives.
func TestWriteExportMatchesEncoder(t *testing.T) {
	tc := json.RawMessage(`[{"id":"c1","function":{"name":"t","arguments":"{\"a\":\"<b>&\"}"}}]`)
	content := "<html> & \u2028 \"quoted\" é \x00"
	recs := []map[string]any{
		{"id": "s1", "source": "cli", "started_at": 1.5e9, "title": nil, "model_config": map[string]any{"z": 1.0, "a": []any{"x", nil}},
			"messages": []sessiondb.Message{
				{ID: 1, SessionID: "s1", Role: "user", Content: &content, Timestamp: 1.5e9 + 0.25},
				{ID: 2, SessionID: "s1", Role: "assistant", ToolCalls: tc, Timestamp: 1.5e9 + 1},
			}},
		{"id": "s2", "source": "cli", "messages": []sessiondb.Message{}},
		{"id": "s3", "source": "cli", "messages": nil, "zz": "last key"},
	}
	for _, rec := range recs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		if err := sessiondb.WriteExport(w, rec); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got.String() != want.String() {
			t.Errorf("record %v:\n got %s\nwant %s", rec["id"], got.String(), want.String())
		}
	}
}
