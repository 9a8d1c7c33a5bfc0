package sessiondb

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

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
}

// SessionID names the prepared session.
func (p *PreparedImport) SessionID() string { return p.ID }

// ImportColumns is how a backend stores a record's values: Session and
// Message convert the value v of column col (field names it in errors) to
// what the backend stores, and report false for a column the backend's
// table lacks.
type ImportColumns struct {
	Session func(field, col string, v any) (any, bool, error)
	Message func(field, col string, v any) (any, bool, error)
}

// PrepareImport validates rec (SessionRecord.Validate) and converts it
// with c, without touching a store: columns in name order (rows of one
// shape share a cached statement, and the first bad field reported is
// always the same), message_count and tool_call_count computed from the
// messages rather than taken, parent_session_id kept apart, and a message's
// session_id left out. Errors are invalid and name the session and the
// field.
func PrepareImport(rec map[string]any, c ImportColumns) (*PreparedImport, error) {
	id, _ := rec["id"].(string)
	if err := SessionRecord(rec).Validate(); err != nil {
		if id == "" {
			return nil, Wrap("", err, "import")
		}
		return nil, Wrap("", err, "import session %s", id)
	}
	p := &PreparedImport{ID: id}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if k == "messages" || k == "message_count" || k == "tool_call_count" {
			continue
		}
		val, ok, err := c.Session(k, k, rec[k])
		if err != nil {
			return nil, Wrap("", err, "import session %s", id)
		}
		switch {
		case !ok:
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
	p.Messages = make([]ImportRow, 0, len(msgs))
	var toolCalls int64
	for i, m := range msgs {
		row, err := importMessage(i, m, c.Message)
		if err != nil {
			return nil, Wrap("", err, "import session %s", id)
		}
		toolCalls += row.ToolCalls
		p.Messages = append(p.Messages, row)
	}
	p.Session.Cols = append(p.Session.Cols, "message_count", "tool_call_count")
	p.Session.Vals = append(p.Session.Vals, int64(len(p.Messages)), toolCalls)
	return p, nil
}

// messageObjects returns the record's messages as objects of decoded JSON,
// in either form Validate accepts (a []Message straight from
// ExportSession takes a JSON round trip).
func (r SessionRecord) messageObjects() ([]map[string]any, error) {
	var raw []any
	switch m := r["messages"].(type) {
	case []any:
		raw = m
	case []Message:
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, err
		}
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i], _ = x.(map[string]any)
	}
	return out, nil
}

// importMessage converts message i of a record with convert; its original
// id goes to the row's ID.
func importMessage(i int, m map[string]any, convert func(field, col string, v any) (any, bool, error)) (ImportRow, error) {
	var row ImportRow
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "session_id" {
			continue
		}
		val, ok, err := convert(fmt.Sprintf("messages[%d].%s", i, k), k, m[k])
		if err != nil {
			return row, err
		}
		switch {
		case !ok:
		case k == "id":
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
