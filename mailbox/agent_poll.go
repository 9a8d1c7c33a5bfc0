package mailbox

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/filesig"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// PollOptions configure Agent.Poll. Limit ≤ 0 means DefaultPollLimit.
type PollOptions struct {
	FirstPoll bool
	Limit     int
}

// Poll returns the next batch, oldest first: the newest opts.Limit due rows
// that are neither acked (any status) nor kind='system' — excluded before
// the limit, so unacked system rows cannot starve traffic — with on_wake
// rows only on FirstPoll. When none of the newest rows has trigger=1 but an
// older processable one has, the window ends at the newest such row. A
// window without a trigger=1 row returns nil: nothing to do yet.
func (a *Agent) Poll(ctx context.Context, opts PollOptions) ([]InboundRow, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultPollLimit
	}
	rest, err := a.unacked(ctx, opts.FirstPoll, false)
	if err != nil || len(rest) == 0 {
		return nil, err
	}
	// rest is newest first.
	end := -1
	for i, r := range rest {
		if r.Trigger {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, nil
	}
	start := 0
	if end >= limit {
		start = end
	}
	return oldestFirst(rest[start:min(start+limit, len(rest))]), nil
}

// PendingOptions configure Agent.Pending. Limit ≤ 0 means every row.
type PendingOptions struct {
	FirstPoll bool
	Limit     int
}

// Pending returns the due rows the agent has not acked (any status),
// whatever their trigger and kind, oldest first: what NanoClaw's
// getPendingMessages gives its poll loop before the loop decides whether
// to wake (a trigger=1 row) and which rows to process (not kind='system').
// on_wake rows are included only on FirstPoll. With a Limit, NanoClaw's
// order: the newest Limit due rows are taken first and the acked among
// them left out after, so fewer than Limit may come back while older
// unacked rows wait (Poll, ours, leaves acked rows out before its limit).
// Reading claims nothing.
func (a *Agent) Pending(ctx context.Context, opts PendingOptions) ([]InboundRow, error) {
	due, acked, err := a.due(ctx, opts.FirstPoll, true)
	if err != nil || len(due) == 0 {
		return nil, err
	}
	if opts.Limit > 0 && len(due) > opts.Limit {
		due = due[:opts.Limit]
	}
	return oldestFirst(withoutAcked(due, acked)), nil
}

// unacked returns the due rows without an ack, newest first, with or
// without kind='system' rows, on_wake rows only on a first poll.
func (a *Agent) unacked(ctx context.Context, firstPoll, withSystem bool) ([]InboundRow, error) {
	due, acked, err := a.due(ctx, firstPoll, withSystem)
	return withoutAcked(due, acked), err
}

// due returns the due rows, newest first, with or without kind='system'
// rows, on_wake rows only on a first poll, and which of them are acked.
func (a *Agent) due(ctx context.Context, firstPoll, withSystem bool) ([]InboundRow, map[string]bool, error) {
	var cands []InboundRow
	var inMax int64
	inSig := filesig.Of(a.inboundPath)
	err := readSnapshotRO(ctx, a.inboundPath, pragmasAgentIn, func(q queryer) error {
		var err error
		if inMax, err = maxSeq(q, "messages_in"); err != nil {
			return err
		}
		sel, hasOnWake, err := a.inboundSelect(q)
		if err != nil {
			return err
		}
		where := ""
		if hasOnWake && !firstPoll {
			where += " AND on_wake = 0"
		}
		if !withSystem {
			where += " AND kind != 'system'"
		}
		cands, err = collectInbound(q, "SELECT "+sel+` FROM messages_in
 WHERE status = 'pending' AND (process_after IS NULL OR datetime(process_after) <= datetime(?))`+where+
			` ORDER BY seq DESC, timestamp DESC`, FormatTime(a.now()))
		if err == nil {
			a.polled()
		}
		return err
	}, "agent: read inbound")
	if err := a.countMalformed(err); err != nil {
		return nil, nil, err
	}
	a.sawInboundMax(inSig, inMax)
	if len(cands) == 0 {
		return nil, nil, nil
	}
	acked, err := a.ackedAmong(ctx, cands)
	if err != nil {
		return nil, nil, err
	}
	return cands, acked, nil
}

// withoutAcked returns rows without those in acked, in place.
func withoutAcked(rows []InboundRow, acked map[string]bool) []InboundRow {
	rest := rows[:0]
	for _, r := range rows {
		if !acked[r.ID] {
			rest = append(rest, r)
		}
	}
	return rest
}

// oldestFirst returns rows (newest first) in the opposite order.
func oldestFirst(rows []InboundRow) []InboundRow {
	out := make([]InboundRow, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = r
	}
	return out
}

// countMalformed tracks consecutive polls that found inbound.db malformed
// and turns the tenth into ErrInboundMalformed. Busy and hot-journal errors
// (the host is committing) are transient and do not count.
func (a *Agent) countMalformed(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil || !sqlitedb.IsCorrupt(err) {
		a.malformedN = 0
		return err
	}
	a.malformedN++
	if a.malformedN >= MaxMalformedPolls {
		return sessiondb.Wrap(sessiondb.EINTERNAL, errors.Join(ErrInboundMalformed, err), "%d consecutive polls", a.malformedN)
	}
	return err
}

// inboundSelect returns the messages_in select list for this file, with
// defaults standing in for columns an older file lacks (the agent cannot
// migrate a read-only file), probing table_info once.
func (a *Agent) inboundSelect(q queryer) (string, bool, error) {
	a.mu.Lock()
	sel, onWake := a.inSelect, a.hasOnWake
	a.mu.Unlock()
	if sel != "" {
		return sel, onWake, nil
	}
	cols, err := columns(q, "messages_in")
	if err != nil {
		return "", false, err
	}
	defaults := map[string]string{"series_id": "id", "trigger": "1", "source_session_id": "NULL", "on_wake": "0"}
	var parts []string
	for _, c := range strings.Split(inboundCols, ",") {
		c = strings.TrimSpace(c)
		if d, ok := defaults[c]; ok && !cols[c] {
			parts = append(parts, d+" AS "+c)
		} else {
			parts = append(parts, c)
		}
	}
	sel, onWake = strings.Join(parts, ", "), cols["on_wake"]
	a.mu.Lock()
	a.inSelect, a.hasOnWake = sel, onWake
	a.mu.Unlock()
	return sel, onWake, nil
}

// ackedAmong returns which of rows have a processing_ack row.
func (a *Agent) ackedAmong(ctx context.Context, rows []InboundRow) (map[string]bool, error) {
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	acked := map[string]bool{}
	err := inChunks(ids, func(part []any, ph string) error {
		set, err := idSet(a.outQ(ctx), "SELECT message_id FROM processing_ack WHERE message_id IN ("+ph+")", part...)
		maps.Copy(acked, set)
		return err
	})
	if err != nil {
		return nil, sqlitedb.Wrap(err, "agent: read acks")
	}
	return acked, nil
}
