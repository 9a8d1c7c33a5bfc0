package sessiondb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
)

// WriteExport writes rec, a record of ExportSession, to w as one JSON
// line: the bytes json.Marshal writes with HTML escaping off, and a
// newline. Its values are written one at a time, the messages one by one:
// never one buffer the size of the whole session.
func WriteExport(w *bufio.Writer, rec map[string]any) error {
	l := newExportLine(w)
	msgs, ok := rec["messages"].([]map[string]any)
	if _, has := rec["messages"]; !has || !ok || msgs == nil {
		return l.whole(rec)
	}
	if err := l.head(rec); err != nil {
		return err
	}
	for _, m := range msgs {
		if err := l.message(m); err != nil {
			return err
		}
	}
	return l.tail(rec)
}

// WriteSessionExport writes session id to w as WriteExport writes its
// ExportSession record, read with ExportSessionPages: it holds one page of
// messages (about ExportPageBytes) at a time, never the session. Nothing
// is written before the session's row is read: a missing session is
// not_found with w untouched. An error after that leaves a part of the
// line written.
func WriteSessionExport(ctx context.Context, st MessageService, id string, w *bufio.Writer) error {
	l := newExportLine(w)
	var row map[string]any
	err := st.ExportSessionPages(ctx, id, func(r map[string]any) error {
		row = r
		return l.head(row)
	}, func(page []map[string]any) error {
		for _, m := range page {
			if err := l.message(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return l.tail(row)
}

// exportLine writes one record of an export as JSON, a value at a time:
// head (the keys before "messages", and the list's opening), each
// message, then tail; or the whole record at once.
type exportLine struct {
	w     *bufio.Writer
	buf   bytes.Buffer
	enc   *json.Encoder
	first bool // no message written yet
}

func newExportLine(w *bufio.Writer) *exportLine {
	l := &exportLine{w: w, first: true}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l
}

// put writes v as the encoder does, less its closing newline.
func (l *exportLine) put(v any) error {
	l.buf.Reset()
	if err := l.enc.Encode(v); err != nil {
		return err
	}
	_, err := l.w.Write(bytes.TrimSuffix(l.buf.Bytes(), []byte("\n")))
	return err
}

// keys writes the members of rec whose keys keep says, in key order,
// each after a comma unless it is the record's first.
func (l *exportLine) keys(rec map[string]any, comma bool, keep func(string) bool) (bool, error) {
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if !keep(k) {
			continue
		}
		if comma {
			l.w.WriteByte(',')
		}
		comma = true
		if err := l.put(k); err != nil {
			return comma, err
		}
		l.w.WriteByte(':')
		if err := l.put(rec[k]); err != nil {
			return comma, err
		}
	}
	return comma, nil
}

// whole writes rec at once, the messages (if any) as any value.
func (l *exportLine) whole(rec map[string]any) error {
	l.w.WriteByte('{')
	if _, err := l.keys(rec, false, func(string) bool { return true }); err != nil {
		return err
	}
	l.w.WriteByte('}')
	return l.w.WriteByte('\n')
}

// head writes the record's opening, its keys before "messages", and the
// opening of the messages' list.
func (l *exportLine) head(rec map[string]any) error {
	l.w.WriteByte('{')
	comma, err := l.keys(rec, false, func(k string) bool { return k < "messages" })
	if err != nil {
		return err
	}
	if comma {
		l.w.WriteByte(',')
	}
	_, err = l.w.WriteString(`"messages":[`)
	return err
}

// message writes one message of the list.
func (l *exportLine) message(m map[string]any) error {
	if !l.first {
		l.w.WriteByte(',')
	}
	l.first = false
	return l.put(m)
}

// tail closes the list, writes the keys after "messages" and ends the
// line.
func (l *exportLine) tail(rec map[string]any) error {
	l.w.WriteByte(']')
	if _, err := l.keys(rec, true, func(k string) bool { return k > "messages" }); err != nil {
		return err
	}
	l.w.WriteByte('}')
	return l.w.WriteByte('\n')
}
