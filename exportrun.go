package sessiondb

import (
	"context"
	"encoding/json"
	"math"
	"strings"
)

// ExportEach is the loop of ExportAll over ids, listed beforehand (so no
// read stays open while the caller writes each session out): each id is
// exported in turn with export and handed to yield. A session deleted since
// the listing (export reports not_found) is passed over; the end of ctx
// stops the loop with busy; any other error of export, and any error of
// yield, stops it and is returned as it is.
func ExportEach(ctx context.Context, ids []string, export func(context.Context, string) (map[string]any, error), yield func(map[string]any) error) error {
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return Wrap(CarriedCode(err), err, "export sessions")
		}
		rec, err := export(ctx, id)
		if ErrorCode(err) == ENOTFOUND {
			continue // deleted since the listing
		}
		if err != nil {
			return err
		}
		if err := yield(rec); err != nil {
			return err
		}
	}
	return nil
}

// ExportPageBytes is about how many bytes of messages ExportPages reads
// at once: a page holds as many messages as the pages before it say fit
// (at least one, however large, and at most exportPageMax).
const ExportPageBytes = 4 << 20

// exportPageFirst and exportPageMax bound a page of ExportPages: the
// first, before any size is known, and every one.
const (
	exportPageFirst = 32
	exportPageMax   = 1000
)

// RowReader is what ExportPages reads through: a session's stored message
// rows, every one (hidden ones included), each with every column the
// store keeps (ExportValue).
type RowReader interface {
	// MessageRows returns at most limit of the session's rows whose id is
	// at or above from, in ascending id order.
	MessageRows(ctx context.Context, sessionID string, from int64, limit int) ([]map[string]any, error)
}

// ExportPages reads session id's message rows through r in id order, a
// page at a time, and hands each page to page: the backends'
// ExportSessionPages. Each page is a read of its own (no read stays open
// while the caller writes a page out), sized from the rows read so far to
// hold about ExportPageBytes. An error of r or of page stops and is
// returned.
func ExportPages(ctx context.Context, r RowReader, id string, page func([]map[string]any) error) error {
	// From the lowest id there is: another writer may have stored ids of 0
	// and below (SQLite takes any integer), and a move must carry them.
	from := int64(math.MinInt64)
	limit := exportPageFirst
	for {
		rows, err := r.MessageRows(ctx, id, from, limit)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		if err := page(rows); err != nil {
			return err
		}
		last := rowID(rows[len(rows)-1])
		if len(rows) < limit || last == math.MaxInt64 {
			return nil
		}
		from = last + 1
		size := 0
		for _, m := range rows {
			size += rowBytes(m)
		}
		limit = min(max(ExportPageBytes/max(size/len(rows), 1), 1), exportPageMax)
	}
}

// rowID is a row's id as a backend reads it.
func rowID(m map[string]any) int64 {
	switch x := m["id"].(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// rowBytes is about how much of memory, and of an export, m takes: its
// texts and a little for the rest.
func rowBytes(m map[string]any) int {
	n := 256
	for _, v := range m {
		switch x := v.(type) {
		case string:
			n += len(x)
		case json.RawMessage:
			n += len(x)
		}
	}
	return n
}

// ExportValue is the value an export gives for the stored value v of
// message column col, as Hermes' get_messages gives it: content a newer
// Hermes stored as its parts (StructuredPrefix and a JSON list or object)
// as those parts; tool_calls decoded (NULL or "" as null, text that is not
// JSON as an empty list); every other value as stored.
func ExportValue(col string, v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch col {
	case "content":
		if body, ok := strings.CutPrefix(s, StructuredPrefix); ok {
			b := []byte(strings.TrimSpace(body))
			if len(b) > 0 && (b[0] == '[' || b[0] == '{') && json.Valid(b) {
				return json.RawMessage(b)
			}
		}
	case "tool_calls":
		switch {
		case s == "":
			return nil
		case !json.Valid([]byte(s)):
			return json.RawMessage("[]")
		}
		return json.RawMessage(s)
	}
	return s
}

// LiveRows returns the rows of an export that are live (active, or with
// no mark): what Hermes' own export writes, and what its import may take.
func LiveRows(rows []map[string]any) []map[string]any {
	out := rows[:0:0]
	for _, m := range rows {
		if a, err := ImportValue("active", KindInteger, m["active"]); err == nil && a == int64(0) {
			continue
		}
		out = append(out, m)
	}
	return out
}
