package sessiondb

import (
	"bytes"
	"encoding/json"
)

// MarshalJSONField returns v as the JSON text a JSON column (tool_calls,
// reasoning_details, codex_reasoning_items) would hold, nil for nil. A
// value that cannot be encoded is invalid, naming field.
func MarshalJSONField(field string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Errorf(EINVALID, "%s cannot be stored as JSON: %v", field, err)
	}
	return b, nil
}

// StoredJSON is what a JSON column stores for the JSON text b: ok=false
// (NULL) when b is nil, null, or an empty list, object or string, which
// Hermes treats as false and does not store; else b as text.
func StoredJSON(b []byte) (text string, ok bool) {
	if b == nil {
		return "", false
	}
	switch string(bytes.TrimSpace(b)) {
	case "null", "[]", "{}", `""`:
		return "", false
	}
	return string(b), true
}

// ToolCallCount is how much a message adds to its session's
// tool_call_count, given its tool_calls as valid JSON text (nil when
// absent): a list counts its elements, any other non-null value 1, null 0.
// It depends only on the value, never on the role.
func ToolCallCount(b []byte) int64 {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return 0
	}
	if b[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) == nil {
			return int64(len(list))
		}
	}
	return 1
}

// StoredToolCallCount is ToolCallCount for a stored tool_calls column
// (valid=false for NULL): text that does not decode as JSON counts 1, as
// Hermes counts any non-empty value it cannot read as a list.
func StoredToolCallCount(text string, valid bool) int64 {
	if !valid || text == "" {
		return 0
	}
	b := []byte(text)
	if !json.Valid(b) {
		return 1
	}
	return ToolCallCount(b)
}

// ModelConfigJSON returns the JSON text stored for a session's model
// config: ok=false (NULL) for nil or an empty map.
func ModelConfigJSON(mc map[string]any) (text string, ok bool, err error) {
	if len(mc) == 0 {
		return "", false, nil
	}
	b, err := json.Marshal(mc)
	if err != nil {
		return "", false, Errorf(EINVALID, "model_config cannot be stored as JSON: %v", err)
	}
	return string(b), true, nil
}

// NonNil returns xs, or an empty list when xs is nil, so that JSON answers
// a list of nothing as [] rather than null (the faces' lists are never
// null).
func NonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// JSONKind names the kind of a decoded JSON value for an error message, in
// JSON's words rather than Go's ("null", "text", "an object"), so a
// refusal never shows a Go type such as <nil> or map[string]interface {}.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null (or missing)"
	case string:
		return "text"
	case bool:
		return "true or false"
	case float64, json.Number, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a value of another kind"
}
