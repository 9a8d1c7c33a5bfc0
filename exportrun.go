package sessiondb

import "context"

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

// ExportPages reads session id's messages through r in id order, a page
// at a time, and hands each page to page: the backends'
// ExportSessionPages. Each page is a read of its own (no read stays open
// while the caller writes a page out), sized from the messages read so
// far to hold about ExportPageBytes. An error of r or of page stops and
// is returned.
func ExportPages(ctx context.Context, r MessageReader, id string, page func([]Message) error) error {
	var ids IDRange
	limit := exportPageFirst
	for {
		msgs, err := r.MessagesIn(ctx, id, ids, false, limit)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return nil
		}
		if err := page(msgs); err != nil {
			return err
		}
		if len(msgs) < limit {
			return nil
		}
		ids = IDRange{After: msgs[len(msgs)-1].ID, HasAfter: true}
		size := 0
		for i := range msgs {
			size += messageBytes(&msgs[i])
		}
		limit = min(max(ExportPageBytes/max(size/len(msgs), 1), 1), exportPageMax)
	}
}

// messageBytes is about how much of memory, and of an export, m takes: its
// texts and a little for the rest.
func messageBytes(m *Message) int {
	n := 256 + len(m.SessionID) + len(m.Role) + len(m.ToolCalls)
	for _, p := range []*string{m.Content, m.ToolCallID, m.ToolName, m.FinishReason, m.Reasoning, m.ReasoningDetails, m.CodexReasoningItems} {
		if p != nil {
			n += len(*p)
		}
	}
	return n
}
