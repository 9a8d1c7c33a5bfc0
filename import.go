package sessiondb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
)

// SessionRecord is one session as ExportSession writes it and
// ImportSession reads it: the session's columns under their snake_case
// names plus "messages", a list of message objects (the messages table's
// columns: the []map[string]any ExportSession returns, a []any of them as
// JSON decodes, or a []Message), and, from a newer Hermes' file,
// UsageKey's rows. Values are decoded JSON: numbers as float64 (or
// json.Number), objects as map[string]any, or a list or object kept as its
// JSON text (json.RawMessage, see DecodeRecord). The import methods take
// it as a plain map[string]any.
type SessionRecord map[string]any

// Validate checks a record against the rules the API keeps, so an import
// stores nothing the API would have refused: id and source non-empty
// strings, the id within CheckSessionID's limit; started_at, ended_at
// (when set) and every message's timestamp finite epoch seconds from 1970
// to the year 9999 (MaxEpoch); an end_reason, when a string, one that
// CheckEndReason accepts; a title that SanitizeTitle accepts (at most
// MaxTitleLength code points once cleaned; ImportValue stores the cleaned
// title, as SetSessionTitle does);
// model_config and every message's tool_calls, reasoning_details and
// codex_reasoning_items, when given as text, valid JSON; messages absent,
// null or a list of objects each with a non-empty string role. The error
// is invalid and names the field ("messages[2].tool_calls"). Whether the
// other values fit their columns is for the backend, which knows the
// columns (ImportValue).
func (r SessionRecord) Validate() error {
	id, ok := r["id"].(string)
	if !ok || id == "" {
		return Errorf(EINVALID, "id must be a non-empty string")
	}
	if err := CheckSessionID(id); err != nil {
		return Wrap(EINVALID, err, "id")
	}
	if src, ok := r["source"].(string); !ok || src == "" {
		return Errorf(EINVALID, "source must be a non-empty string")
	}
	if err := checkEpoch("started_at", r["started_at"], true); err != nil {
		return err
	}
	if err := checkEpoch("ended_at", r["ended_at"], false); err != nil {
		return err
	}
	if er, ok := r["end_reason"].(string); ok {
		if err := CheckEndReason(er); err != nil {
			return err
		}
	}
	if t, ok := r["title"].(string); ok {
		if _, err := SanitizeTitle(t); err != nil {
			return Wrap(EINVALID, err, "title")
		}
	}
	if err := checkJSONText("model_config", r["model_config"]); err != nil {
		return err
	}
	switch msgs := r["messages"].(type) {
	case nil:
	case []any:
		for i, raw := range msgs {
			m, ok := raw.(map[string]any)
			if !ok {
				return Errorf(EINVALID, "messages[%d] must be an object, not %s", i, JSONKind(raw))
			}
			if role, ok := m["role"].(string); !ok || role == "" {
				return Errorf(EINVALID, "messages[%d].role must be a non-empty string", i)
			}
			if err := checkEpoch(fmt.Sprintf("messages[%d].timestamp", i), m["timestamp"], true); err != nil {
				return err
			}
			for _, k := range messageJSONFields {
				if err := checkJSONText(fmt.Sprintf("messages[%d].%s", i, k), m[k]); err != nil {
					return err
				}
			}
		}
	case []map[string]any:
		as := make([]any, len(msgs))
		for i, m := range msgs {
			as[i] = m
		}
		return SessionRecord(withMessages(r, as)).Validate()
	case []Message:
		for i, m := range msgs {
			if m.Role == "" {
				return Errorf(EINVALID, "messages[%d].role must be a non-empty string", i)
			}
			if err := checkEpoch(fmt.Sprintf("messages[%d].timestamp", i), m.Timestamp, true); err != nil {
				return err
			}
			for k, v := range map[string]*string{"reasoning_details": m.ReasoningDetails, "codex_reasoning_items": m.CodexReasoningItems} {
				if v != nil {
					if err := checkJSONText(fmt.Sprintf("messages[%d].%s", i, k), *v); err != nil {
						return err
					}
				}
			}
		}
	default:
		return Errorf(EINVALID, "messages must be a list, not %s", JSONKind(r["messages"]))
	}
	return nil
}

// withMessages returns a shallow copy of r with msgs as its messages.
func withMessages(r SessionRecord, msgs []any) map[string]any {
	c := maps.Clone(map[string]any(r))
	c["messages"] = msgs
	return c
}

// MaxEpoch is the last timestamp a store takes, in epoch seconds: the end
// of the year 9999, the last one a date can be written in four digits.
// Later times (1e308 was one) and earlier than 1970 are refused on import.
const MaxEpoch = 253402300799

// messageJSONFields are the message columns that hold JSON text.
var messageJSONFields = []string{"tool_calls", "reasoning_details", "codex_reasoning_items", "codex_message_items"}

// checkEpoch refuses v, the value of field, unless it is epoch seconds in
// [0, MaxEpoch] (or absent, when not required).
func checkEpoch(field string, v any, required bool) error {
	if v == nil && !required {
		return nil
	}
	if !isJSONNumber(v) {
		return Errorf(EINVALID, "%s must be a number (epoch seconds), not %s", field, JSONKind(v))
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	case int:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return Errorf(EINVALID, "%s must be a number (epoch seconds): %v", field, err)
		}
	}
	if math.IsNaN(f) || f < 0 || f > MaxEpoch {
		return Errorf(EINVALID, "%s must be epoch seconds from 0 (1970) to %d (the year 9999), not %v", field, int64(MaxEpoch), f)
	}
	return nil
}

// checkJSONText refuses v, the value of field, when it is text that is not
// JSON (an empty text stands for none). Decoded values (lists, objects) are
// JSON already.
func checkJSONText(field string, v any) error {
	t, ok := v.(string)
	if !ok || t == "" || json.Valid([]byte(t)) {
		return nil
	}
	return Errorf(EINVALID, "%s must be JSON: %s is not", field, clipQuote(t, 40))
}

// clipQuote quotes at most n code points of s for an error message.
func clipQuote(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return strconv.Quote(string(r[:n])) + "..."
	}
	return strconv.Quote(s)
}

// isJSONNumber reports whether v is a number as a JSON decoder (or a Go
// caller) gives it.
func isJSONNumber(v any) bool {
	switch v.(type) {
	case float64, int64, int, json.Number:
		return true
	}
	return false
}

// ImportService loads sessions written by ExportSession or ExportAll, or by
// Hermes' own JSONL export, into the store: the inverse of section 6.2 of
// spec/history-store.md. Every method is safe for concurrent use.
type ImportService interface {
	// ImportSession inserts one record (see SessionRecord) in one
	// transaction and reports what it did. A session id already in the
	// store is skipped: Imported false and no error, nothing changed, so
	// importing the same file twice is harmless. A record that fails
	// SessionRecord.Validate, or whose values have the wrong JSON type for
	// their column, is invalid naming the field. Values the store has no
	// place for (a column or table of a newer Hermes its schema lacks) are
	// not stored and are named in the result's Dropped; so are hidden rows
	// (active 0) where the store cannot mark them. The live state
	// (LiveStateColumns) is reset unless opts keeps it. Message ids are
	// kept when free, up to the first message that is not, which gets a
	// new id and so does every one after it (a new id is above every id
	// there is: a kept id after it would reorder the session). message_count and
	// tool_call_count are recomputed from the inserted messages, except
	// when the record keeps hidden rows: then they are taken as given,
	// being what Hermes' last write left, which no count of rows can
	// tell. A parent not yet in the store is linked when it is imported
	// later through the same store, since exports list children before
	// their parents. A title another session holds is a conflict.
	ImportSession(ctx context.Context, rec map[string]any, opts ImportOptions) (ImportResult, error)
	// ImportSessions imports several records as ImportSession does, each
	// all-or-nothing, sharing commits where the backend can (bulk imports).
	// It stops at the first record that fails: the records before it stay
	// imported, results holds one entry for each of them, and the error
	// names the failing one.
	ImportSessions(ctx context.Context, recs []map[string]any, opts ImportOptions) (results []ImportResult, err error)
}

// ColumnKind is what an imported value must be to fit a column.
type ColumnKind int

const (
	// KindText takes a string.
	KindText ColumnKind = iota
	// KindJSON takes a string (kept as it is) or a list or object (stored
	// as JSON text when truthy, see StoredJSON).
	KindJSON
	// KindInteger takes a whole number (or a bool, as 0/1).
	KindInteger
	// KindReal takes a finite number.
	KindReal
	// KindAny takes any scalar: a column without a declared type.
	KindAny
	// KindContent takes a message's content as Hermes' _encode_content
	// stores it: a string as it is; a list or object (a multimodal
	// message's parts) as StructuredPrefix and its JSON (PythonJSON); a
	// number as Python writes it.
	KindContent
)

// ImportValue converts one JSON-decoded value of a SessionRecord for a
// column of kind k: numbers as int64 or float64, JSON lists and objects as
// their text, nil for JSON null. A value of the wrong type is invalid,
// naming field ("messages[2].token_count"). Every backend's import calls
// it, so one record is accepted or refused alike everywhere.
func ImportValue(field string, k ColumnKind, v any) (any, error) {
	bad := func(want string) error {
		return Errorf(EINVALID, "%s must be %s, not %s", field, want, JSONKind(v))
	}
	if v == nil {
		return nil, nil
	}
	if k == KindContent {
		return importContent(field, v)
	}
	if raw, ok := v.(json.RawMessage); ok {
		if k != KindJSON && k != KindAny {
			return nil, bad("a string")
		}
		b, err := pythonJSONValue(field, raw)
		if err != nil {
			return nil, err
		}
		if t, ok := StoredJSON(b); ok {
			return t, nil
		}
		return nil, nil
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		} else {
			return nil, bad("a number")
		}
	}
	switch k {
	case KindInteger:
		switch x := v.(type) {
		case float64:
			if x != math.Trunc(x) || math.IsInf(x, 0) || math.Abs(x) > 1<<53 {
				return nil, bad("an integer")
			}
			return int64(x), nil
		case int64:
			return x, nil
		case int:
			return int64(x), nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
		return nil, bad("an integer")
	case KindReal:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, bad("a finite number")
			}
			return x, nil
		case int64:
			return float64(x), nil
		case int:
			return float64(x), nil
		}
		return nil, bad("a number")
	}
	switch x := v.(type) {
	case string:
		switch {
		case field == "title":
			// As SetSessionTitle stores it: control and invisible
			// characters gone, white space collapsed; "" is no title.
			t, err := SanitizeTitle(x)
			if err != nil {
				return nil, Wrap(EINVALID, err, "title")
			}
			if t == "" {
				return nil, nil
			}
			return t, nil
		case k == KindJSON && x == "":
			return nil, nil
		case k == KindJSON && !json.Valid([]byte(x)):
			return nil, Errorf(EINVALID, "%s must be JSON: %s is not", field, clipQuote(x, 40))
		}
		return x, nil
	case map[string]any, []any:
		if k != KindJSON {
			return nil, bad("a string")
		}
		b, err := MarshalJSONField(field, x)
		if err != nil {
			return nil, err
		}
		if t, ok := StoredJSON(b); ok {
			return t, nil
		}
		return nil, nil
	}
	if k == KindAny {
		switch v.(type) {
		case float64, int64, int, bool:
			return v, nil
		}
	}
	return nil, bad("a string")
}

// importContent is ImportValue of a message's content (KindContent).
func importContent(field string, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return x, nil
	case json.Number:
		return pyNumber(string(x)), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return PythonFloat(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case json.RawMessage, []any, map[string]any:
		b, err := pythonJSONValue(field, x)
		if err != nil {
			return nil, err
		}
		return StructuredPrefix + string(b), nil
	}
	return nil, Errorf(EINVALID, "%s must be a string, a list of parts or an object, not %s", field, JSONKind(v))
}
