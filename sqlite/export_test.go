package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/sessiondb/sessiondb"
)

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
		_, err := s.ImportSession(ctx, rec, sessiondb.ImportOptions{})
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
