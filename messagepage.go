package sessiondb

import (
	"context"
	"slices"
)

// IDRange bounds a run of one session's messages by id: above After when
// HasAfter, below Before when HasBefore (both exclusive). A bound that is
// not set leaves that side open; 0 is a bound like any other.
type IDRange struct {
	After, Before       int64
	HasAfter, HasBefore bool
}

// MessageReader is what ReadMessagePage reads through: one session's
// visible messages by id. A backend implements it over its own queries;
// its errors carry codes and name the page read.
type MessageReader interface {
	// MessagesIn returns at most limit of the session's messages whose id
	// lies in r: the oldest of them in ascending id order, or with newest
	// the newest of them in descending id order.
	MessagesIn(ctx context.Context, sessionID string, r IDRange, newest bool, limit int) ([]Message, error)
	// AnyMessage reports whether the session has a message whose id
	// compares to id as op says: "<", "<=", ">" or ">=".
	AnyMessage(ctx context.Context, sessionID, op string, id int64) (bool, error)
}

// DefaultPageLimit is the page size of GetMessagesPage when Limit is 0.
const DefaultPageLimit = 50

// groupScan is how many rows one step of group widening reads.
const groupScan = 32

// ReadMessagePage is GetMessagesPage (IMP-12) over r, so every backend
// cuts pages alike: with BeforeID the newest Limit messages older than it;
// with AfterID (or FromStart) the oldest Limit newer than it; with both
// the oldest Limit between them; with neither the newest Limit. A page
// never splits a tool-call group (an assistant row and the tool rows that
// follow it): it grows at its far edge to keep the group whole, forward
// over the tool rows after its last row, backward to the row that made the
// calls of a leading tool row. HasBefore and HasAfter say whether the
// session has messages beyond the page; an empty page after a cursor
// counts the cursor's own row (the edge is inclusive). A negative limit or
// cursor is invalid.
func ReadMessagePage(ctx context.Context, r MessageReader, sessionID string, p Page) (*MessagePage, error) {
	if err := p.Validate(); err != nil {
		return nil, Wrap("", err, "get messages page of %s", sessionID)
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	forward := (p.AfterID > 0 || p.FromStart) && p.BeforeID == 0
	var msgs []Message
	var err error
	switch {
	case forward:
		msgs, err = r.MessagesIn(ctx, sessionID, IDRange{After: p.AfterID, HasAfter: true}, false, limit)
	case p.AfterID > 0:
		msgs, err = r.MessagesIn(ctx, sessionID, IDRange{After: p.AfterID, Before: p.BeforeID, HasAfter: true, HasBefore: true}, false, limit)
		forward = true
	case p.BeforeID > 0:
		msgs, err = r.MessagesIn(ctx, sessionID, IDRange{Before: p.BeforeID, HasBefore: true}, true, limit)
		slices.Reverse(msgs)
	default:
		msgs, err = r.MessagesIn(ctx, sessionID, IDRange{}, true, limit)
		slices.Reverse(msgs)
	}
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		if forward {
			last := msgs[len(msgs)-1]
			if last.Role == "tool" || (last.Role == "assistant" && len(last.ToolCalls) > 0) {
				more, err := followingTools(ctx, r, sessionID, last.ID)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, more...)
			}
		} else if msgs[0].Role == "tool" {
			more, err := precedingGroup(ctx, r, sessionID, msgs[0].ID)
			if err != nil {
				return nil, err
			}
			msgs = append(more, msgs...)
		}
	}
	page := &MessagePage{Messages: msgs}
	if page.Messages == nil {
		page.Messages = []Message{}
	}
	lo, hi := p.AfterID, p.BeforeID
	if len(msgs) > 0 {
		lo, hi = msgs[0].ID, msgs[len(msgs)-1].ID
	} else if hi == 0 && lo == 0 {
		return page, nil
	}
	// An empty page after a cursor still has the cursor's row before it
	// (and one before a cursor the row after it): the edge is inclusive.
	before, after := "<", ">"
	if len(msgs) == 0 {
		before, after = "<=", ">="
	}
	if lo > 0 {
		if page.HasBefore, err = r.AnyMessage(ctx, sessionID, before, lo); err != nil {
			return nil, err
		}
	}
	if hi > 0 {
		if page.HasAfter, err = r.AnyMessage(ctx, sessionID, after, hi); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// followingTools returns the run of tool rows right after id.
func followingTools(ctx context.Context, r MessageReader, sessionID string, id int64) ([]Message, error) {
	var out []Message
	for {
		next, err := r.MessagesIn(ctx, sessionID, IDRange{After: id, HasAfter: true}, false, groupScan)
		if err != nil {
			return nil, err
		}
		for _, m := range next {
			if m.Role != "tool" {
				return out, nil
			}
			out = append(out, m)
			id = m.ID
		}
		if len(next) < groupScan {
			return out, nil
		}
	}
}

// precedingGroup returns the tool rows before id and the row that started
// them (normally the assistant row with the calls), oldest first.
func precedingGroup(ctx context.Context, r MessageReader, sessionID string, id int64) ([]Message, error) {
	var out []Message
	for {
		prev, err := r.MessagesIn(ctx, sessionID, IDRange{Before: id, HasBefore: true}, true, groupScan)
		if err != nil {
			return nil, err
		}
		for _, m := range prev {
			out = append(out, m)
			id = m.ID
			if m.Role != "tool" {
				slices.Reverse(out)
				return out, nil
			}
		}
		if len(prev) < groupScan {
			slices.Reverse(out)
			return out, nil
		}
	}
}
