package sessiondb

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// MaxImportedMessageID is the highest message id an import keeps: 2^53,
// past which a JSON number is no longer exact.
const MaxImportedMessageID = 1 << 53

// ImportRow is one row an import inserts: its columns and values in step.
type ImportRow struct {
	Cols []string
	Vals []any
	// ID is a message's original id, nil when it has none; the backend
	// keeps it when it is free.
	ID any
	// ToolCalls counts the calls of a message's tool_calls.
	ToolCalls int64
}

// PreparedImport is one record PrepareImport has validated and converted
// for a backend, ready to insert (a PreparedSession).
type PreparedImport struct {
	ID string
	// Parent is the parent the record names, linked only once it exists.
	Parent   string
	Session  ImportRow
	Messages []ImportRow
	// Usage are the session's session_model_usage rows (UsageKey), each
	// without its session_id.
	Usage []ImportRow
	// Dropped names what the store has no place for (ImportResult).
	Dropped []DroppedField
}

// SessionID names the prepared session.
func (p *PreparedImport) SessionID() string { return p.ID }

// DroppedFields is p.Dropped.
func (p *PreparedImport) DroppedFields() []DroppedField { return p.Dropped }

// TitleTaken is the conflict of inserting p's row where err, the store's
// unique violation, says its title is another session's: the title is
// named, which the store's words do not.
func (p *PreparedImport) TitleTaken(err error) error {
	for i, c := range p.Session.Cols {
		if t, ok := p.Session.Vals[i].(string); ok && c == "title" {
			return Wrap(ECONFLICT, err, "import session %s: its title %q is another session's", p.ID, t)
		}
	}
	return Wrap(ECONFLICT, err, "import session %s (its title may be taken)", p.ID)
}

// ImportColumns is how a backend stores a record's values: Session,
// Message and Usage convert the value v of column col (field names it in
// errors) to what the backend stores, and report false for a column the
// backend's table lacks. Usage is nil when the store has no
// session_model_usage table.
type ImportColumns struct {
	Session func(field, col string, v any) (any, bool, error)
	Message func(field, col string, v any) (any, bool, error)
	Usage   func(field, col string, v any) (any, bool, error)
}

// PrepareImport validates rec (SessionRecord.Validate) and converts it
// with c, without touching a store: columns in name order (rows of one
// shape share a cached statement, and the first bad field reported is
// always the same), parent_session_id kept apart, a message's session_id
// left out, and message_count and tool_call_count as ImportSession says.
// The live state (LiveStateColumns) is left out unless opts keeps it. A
// value whose column the store lacks is counted in Dropped when it is
// neither null nor the column's default; a hidden message (active 0) where
// the store has no active column is left out whole and counted under
// messages.active. A message's message_id stands for platform_message_id
// when that is not given (Hermes' import takes either). Errors are
// invalid and name the session and the field.
func PrepareImport(rec map[string]any, c ImportColumns, opts ImportOptions) (*PreparedImport, error) {
	id, _ := rec["id"].(string)
	if err := SessionRecord(rec).Validate(); err != nil {
		if id == "" {
			return nil, Wrap("", err, "import")
		}
		return nil, Wrap("", err, "import session %s", id)
	}
	fail := func(err error) (*PreparedImport, error) { return nil, Wrap("", err, "import session %s", id) }
	p := &PreparedImport{ID: id}
	dropped := droppedSet{}
	reset := map[string]bool{}
	if !opts.KeepLiveState {
		for _, k := range LiveStateColumns {
			reset[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		switch {
		case k == "messages" || k == "message_count" || k == "tool_call_count" || k == UsageKey:
			continue
		case computedKeys[k] || reset[k]:
			continue
		}
		val, ok, err := c.Session(k, k, rec[k])
		if err != nil {
			return fail(err)
		}
		switch {
		case !ok:
			if isLost(k, rec[k]) {
				dropped.add("sessions."+k, 1)
			}
		case k == "parent_session_id":
			p.Parent, _ = val.(string)
		default:
			p.Session.Cols = append(p.Session.Cols, k)
			p.Session.Vals = append(p.Session.Vals, val)
		}
	}
	msgs, err := SessionRecord(rec).messageObjects()
	if err != nil {
		return nil, Errorf(EINVALID, "import session %s: messages: %v", id, err)
	}
	_, canMark, _ := c.Message("messages.active", "active", int64(1))
	p.Messages = make([]ImportRow, 0, len(msgs))
	var toolCalls int64
	keptHidden := false
	for i, m := range msgs {
		hidden, err := isHidden(i, m)
		if err != nil {
			return fail(err)
		}
		if hidden && !canMark {
			dropped.add("messages.active", 1)
			continue
		}
		keptHidden = keptHidden || hidden
		row, err := importMessage(i, m, c.Message, canMark, dropped)
		if err != nil {
			return fail(err)
		}
		toolCalls += row.ToolCalls
		p.Messages = append(p.Messages, row)
	}
	count, calls := int64(len(p.Messages)), toolCalls
	if keptHidden {
		// The counters are what Hermes' last write left (a compaction
		// counts the new rows, a rewind changes nothing): kept.
		count = givenCount(rec["message_count"], count)
		calls = givenCount(rec["tool_call_count"], calls)
	}
	p.Session.Cols = append(p.Session.Cols, "message_count", "tool_call_count")
	p.Session.Vals = append(p.Session.Vals, count, calls)
	if p.Usage, err = importUsage(rec[UsageKey], c.Usage, dropped); err != nil {
		return fail(err)
	}
	p.Dropped = dropped.list()
	return p, nil
}

// isHidden reports whether message i is hidden (its active is 0).
func isHidden(i int, m map[string]any) (bool, error) {
	a, err := ImportValue(fmt.Sprintf("messages[%d].active", i), KindInteger, m["active"])
	if err != nil {
		return false, err
	}
	return a == int64(0), nil
}

// givenCount is v when it is a count (a whole number, not negative),
// else computed.
func givenCount(v any, computed int64) int64 {
	n, err := ImportValue("count", KindInteger, v)
	if i, ok := n.(int64); err == nil && ok && i >= 0 {
		return i
	}
	return computed
}

// usageDefaults are the values Hermes writes for a usage row's route and
// counters when it has none.
var usageDefaults = map[string]any{
	"billing_provider": "", "billing_base_url": "", "billing_mode": "",
	"api_call_count": int64(0), "input_tokens": int64(0), "output_tokens": int64(0), "cache_read_tokens": int64(0),
	"cache_write_tokens": int64(0), "reasoning_tokens": int64(0), "estimated_cost_usd": 0.0, "actual_cost_usd": 0.0,
}

// importUsage converts a record's usage rows with convert (nil: the store
// has no table for them, and they are counted dropped).
func importUsage(v any, convert func(field, col string, v any) (any, bool, error), dropped droppedSet) ([]ImportRow, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		if ms, isMaps := v.([]map[string]any); isMaps {
			for _, m := range ms {
				list = append(list, m)
			}
		} else {
			return nil, Errorf(EINVALID, "%s must be a list of objects, not %s", UsageKey, JSONKind(v))
		}
	}
	if convert == nil {
		dropped.add(UsageKey, len(list))
		return nil, nil
	}
	rows := make([]ImportRow, 0, len(list))
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, Errorf(EINVALID, "%s[%d] must be an object, not %s", UsageKey, i, JSONKind(raw))
		}
		if model, ok := m["model"].(string); !ok || model == "" {
			return nil, Errorf(EINVALID, "%s[%d].model must be a non-empty string", UsageKey, i)
		}
		var row ImportRow
		m = maps.Clone(m)
		for _, k := range []string{"billing_provider", "billing_base_url", "billing_mode"} {
			if _, ok := m[k]; !ok {
				m[k] = nil // a route has all three, '' where Hermes has none
			}
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "session_id" {
				continue
			}
			v := m[k]
			d, hasDefault := usageDefaults[k]
			if hasDefault && v == nil {
				// NOT NULL in the current shape: Hermes writes the
				// default where a route or a counter is missing.
				v = d
			}
			val, ok, err := convert(fmt.Sprintf("%s[%d].%s", UsageKey, i, k), k, v)
			if err != nil {
				return nil, err
			}
			if !ok {
				if v != nil && !(hasDefault && sameValue(v, d)) {
					dropped.add(UsageKey+"."+k, 1)
				}
				continue
			}
			row.Cols = append(row.Cols, k)
			row.Vals = append(row.Vals, val)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// messageObjects returns the record's messages as objects, in any form
// Validate accepts (a []Message takes a JSON round trip, its lists and
// objects kept as JSON text as DecodeRecord keeps them).
func (r SessionRecord) messageObjects() ([]map[string]any, error) {
	switch m := r["messages"].(type) {
	case []map[string]any:
		return m, nil
	case []any:
		out := make([]map[string]any, len(m))
		for i, x := range m {
			out[i], _ = x.(map[string]any)
		}
		return out, nil
	case []Message:
		out := make([]map[string]any, len(m))
		for i := range m {
			b, err := json.Marshal(&m[i])
			if err != nil {
				return nil, err
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(b, &obj); err != nil {
				return nil, err
			}
			if out[i], err = decodeMembers(obj, rawJSONKeys); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, nil
}

// importMessage converts message i of a record with convert; its original
// id goes to the row's ID. With canMark a message that does not say
// whether it is active is stored active (1), as Hermes writes every row.
func importMessage(i int, m map[string]any, convert func(field, col string, v any) (any, bool, error), canMark bool, dropped droppedSet) (ImportRow, error) {
	var row ImportRow
	if pid, _ := m["platform_message_id"].(string); pid == "" && m["message_id"] != nil {
		m = maps.Clone(m)
		m["platform_message_id"] = m["message_id"]
	}
	if canMark && m["active"] == nil {
		m = maps.Clone(m)
		m["active"] = int64(1)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "session_id" || k == "message_id" {
			continue
		}
		val, ok, err := convert(fmt.Sprintf("messages[%d].%s", i, k), k, m[k])
		if err != nil {
			return row, err
		}
		switch {
		case !ok:
			if isLost(k, m[k]) {
				dropped.add("messages."+k, 1)
			}
		case k == "id":
			// Transcript pages (GetMessagesPage) read from id 1 up, so an
			// id below 1 would be stored and never shown; an id near
			// the type's maximum leaves the next append none to take. 2^53
			// is the bound JSON numbers keep exactly (ImportValue).
			if id, isInt := val.(int64); isInt && (id < 1 || id > MaxImportedMessageID) {
				return row, Errorf(EINVALID, "messages[%d].id %d: give a message id from 1 to %d, or none for a new one", i, id, int64(MaxImportedMessageID))
			}
			row.ID = val
		default:
			if k == "tool_calls" {
				t, isText := val.(string)
				row.ToolCalls = StoredToolCallCount(t, isText)
			}
			row.Cols = append(row.Cols, k)
			row.Vals = append(row.Vals, val)
		}
	}
	return row, nil
}

// sameValue reports whether v, a decoded value, is def (text, or a
// number of any form).
func sameValue(v, def any) bool {
	if t, ok := def.(string); ok {
		return v == t
	}
	f, err := ImportValue("value", KindReal, v)
	d, _ := ImportValue("value", KindReal, def)
	return err == nil && f == d
}
