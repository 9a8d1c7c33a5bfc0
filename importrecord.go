package sessiondb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ImportOptions changes what an import keeps of a record.
type ImportOptions struct {
	// KeepLiveState stores the record's live gateway and runtime state
	// (LiveStateColumns) as given. Without it they are left at their
	// defaults, as Hermes' own import_sessions leaves them: an imported
	// session restores a conversation, not the ownership of a live chat or
	// a pending handoff. Copy, which moves a whole store, keeps them.
	KeepLiveState bool
}

// LiveStateColumns are the session columns of a newer Hermes that hold a
// running gateway's or agent's state rather than the conversation:
// Hermes' import_sessions never restores them, and neither does an import
// here without ImportOptions.KeepLiveState.
var LiveStateColumns = []string{
	"session_key", "chat_id", "chat_type", "thread_id", "display_name", "origin_json", "expiry_finalized",
	"handoff_state", "handoff_platform", "handoff_error",
	"compression_failure_cooldown_until", "compression_failure_error", "compression_fallback_streak",
	"rewind_count",
}

// UsageKey is the key of a record holding the session's rows of a newer
// Hermes' session_model_usage table (each row's columns but session_id):
// its tokens and cost by the model and billing route they were spent on.
const UsageKey = "session_model_usage"

// columnDefaults are the defaults of the newer Hermes' columns that have
// one: a value equal to it is no loss when the target lacks the column.
var columnDefaults = map[string]int64{
	"api_call_count": 0, "expiry_finalized": 0, "compression_fallback_streak": 0, "rewind_count": 0,
	"archived": 0, "observed": 0, "active": 1, "compacted": 0,
}

// computedKeys are keys of an export that hold no column: Hermes'
// export_all adds last_active (the latest activity, computed), and its
// lineage export the segments it joined.
var computedKeys = map[string]bool{"last_active": true, "segments": true, "lineage_session_ids": true}

// ImportResult is what an import did with one record.
type ImportResult struct {
	// Imported is false when the store held the session already (nothing
	// changed).
	Imported bool `json:"imported"`
	// Dropped names the values of the record the store has no place for
	// (a column or table its schema lacks), which were not stored; nil
	// when none, or when nothing was imported.
	Dropped []DroppedField `json:"dropped,omitempty"`
}

// DroppedField is one field an import could not store and how many of
// the record's values it held.
type DroppedField struct {
	// Field is "sessions.<column>", "messages.<column>" or
	// "session_model_usage" (whole rows). "messages.active" counts the
	// hidden rows (rewound or compacted) left out whole: stored without
	// their mark they would become live.
	Field  string `json:"field"`
	Values int    `json:"values"`
}

// droppedSet counts dropped values by field while a record is prepared.
type droppedSet map[string]int

func (d droppedSet) add(field string, n int) {
	if n > 0 {
		d[field] += n
	}
}

// list returns the counts sorted by field, nil when none.
func (d droppedSet) list() []DroppedField {
	if len(d) == 0 {
		return nil
	}
	out := make([]DroppedField, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		out = append(out, DroppedField{Field: k, Values: d[k]})
	}
	return out
}

// MergeDropped adds the counts of b to a, keeping the list sorted by field.
func MergeDropped(a, b []DroppedField) []DroppedField {
	if len(b) == 0 {
		return a
	}
	d := droppedSet{}
	for _, x := range append(a, b...) {
		d.add(x.Field, x.Values)
	}
	return d.list()
}

// DroppedText is the list as people read it: "sessions.cwd (3 values),
// session_model_usage (2 rows)".
func DroppedText(fields []DroppedField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		unit := "value"
		switch f.Field {
		case UsageKey:
			unit = "row"
		case "messages.active":
			unit = "hidden message"
		}
		if f.Values != 1 {
			unit += "s"
		}
		parts[i] = fmt.Sprintf("%s (%d %s)", f.Field, f.Values, unit)
	}
	return strings.Join(parts, ", ")
}

// isLost reports whether storing nothing for column col loses v: a value
// that is neither null nor the column's default.
func isLost(col string, v any) bool {
	if v == nil {
		return false
	}
	def, has := columnDefaults[col]
	if !has {
		return true
	}
	i, err := ImportValue(col, KindInteger, v)
	return err != nil || i != def
}

// rawJSONKeys are the fields whose JSON list or object DecodeRecord keeps
// as its text (a json.RawMessage), so an import stores its members in the
// order given (see PythonJSON): a session's model_config, and a message's
// content and JSON columns.
var rawJSONKeys = map[string]bool{
	"model_config": true, "content": true, "tool_calls": true, "reasoning_details": true,
	"codex_reasoning_items": true, "codex_message_items": true,
}

// DecodeRecord decodes one line of an export (ours or Hermes') for
// ImportService: a JSON object, numbers as json.Number, and the lists and
// objects of model_config and of each message's content and JSON columns
// kept as their JSON text (json.RawMessage), in the order written. Text
// that is not a JSON object is invalid.
func DecodeRecord(line []byte) (map[string]any, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return nil, Errorf(EINVALID, "not a JSON object (%v)", err)
	}
	if top == nil {
		return nil, Errorf(EINVALID, "not a JSON object (null)")
	}
	raw, hasMessages := top["messages"]
	delete(top, "messages")
	rec, err := decodeMembers(top, map[string]bool{"model_config": true})
	if err != nil {
		return nil, err
	}
	if !hasMessages {
		return rec, nil
	}
	var objs []map[string]json.RawMessage
	if json.Unmarshal(raw, &objs) == nil && objs != nil {
		msgs := make([]any, len(objs))
		for i, obj := range objs {
			if obj == nil { // null: Validate names it
				continue
			}
			if msgs[i], err = decodeMembers(obj, rawJSONKeys); err != nil {
				return nil, err
			}
		}
		rec["messages"] = msgs
		return rec, nil
	}
	// Not a list of objects: decoded as it is, for Validate to name
	// what is wrong.
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || list == nil {
		rec["messages"], err = decodeNumber(raw)
		return rec, err
	}
	msgs := make([]any, len(list))
	for i, m := range list {
		var obj map[string]json.RawMessage
		if json.Unmarshal(m, &obj) != nil || obj == nil {
			if msgs[i], err = decodeNumber(m); err != nil {
				return nil, err
			}
			continue
		}
		if msgs[i], err = decodeMembers(obj, rawJSONKeys); err != nil {
			return nil, err
		}
	}
	rec["messages"] = msgs
	return rec, nil
}

// decodeMembers decodes an object's members, keeping the lists and
// objects of the keys keep names as JSON text.
func decodeMembers(obj map[string]json.RawMessage, keep map[string]bool) (map[string]any, error) {
	out := make(map[string]any, len(obj))
	for k, raw := range obj {
		t := bytes.TrimSpace(raw)
		if keep[k] && len(t) > 0 && (t[0] == '[' || t[0] == '{') {
			out[k] = json.RawMessage(t)
			continue
		}
		v, err := decodeNumber(raw)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// decodeNumber decodes one JSON value, numbers as json.Number. The
// scalars an export is made of are read without a decoder of their own.
func decodeNumber(raw []byte) (any, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 {
		switch c := t[0]; {
		case c == '"':
			var s string
			if err := json.Unmarshal(t, &s); err == nil {
				return s, nil
			}
		case string(t) == "null":
			return nil, nil
		case string(t) == "true":
			return true, nil
		case string(t) == "false":
			return false, nil
		case c == '-' || (c >= '0' && c <= '9'):
			if json.Valid(t) {
				return json.Number(t), nil
			}
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, Errorf(EINVALID, "not JSON (%v)", err)
	}
	return v, nil
}
