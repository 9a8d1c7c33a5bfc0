package mailbox

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InboundByID reads one messages_in row by id (read-only, fresh
// connection); not_found when absent.
func (a *Agent) InboundByID(ctx context.Context, id string) (InboundRow, error) {
	var rows []InboundRow
	err := a.withInbound(ctx, func(q queryer) error {
		// Poll's select list: an older file's missing columns get their
		// defaults (the agent cannot migrate a read-only file).
		sel, _, err := a.inboundSelect(q)
		if err != nil {
			return err
		}
		rows, err = collectInbound(q, "SELECT "+sel+" FROM messages_in WHERE id = ?", id)
		return err
	})
	switch {
	case err != nil:
		return InboundRow{}, err
	case len(rows) == 0:
		return InboundRow{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "no inbound message %q", errtext.Clip(id, 64))
	}
	return rows[0], nil
}

// SeqTarget is the message a seq names, as LookupSeq finds it.
type SeqTarget struct {
	Seq int64 `json:"seq"`
	// Outbound is true for a messages_out row (the agent's own), false for
	// a messages_in row.
	Outbound bool `json:"outbound"`
	// ID is the row's id.
	ID string `json:"id"`
	// MessageID names the message for edits and reactions: the inbound id,
	// or for an outbound row the platform's id once delivered, else its own.
	MessageID string  `json:"message_id"`
	Routing   Routing `json:"routing"`
}

// LookupSeq finds the message numbered seq: even seqs in messages_in,
// odd in messages_out, and a seq absent from its parity's table in the
// other (NanoClaw's getMessageIdBySeq and getRoutingBySeq in one read of
// each file). Unknown → not_found.
func (a *Agent) LookupSeq(ctx context.Context, seq int64) (SeqTarget, error) {
	if seq <= 0 {
		return SeqTarget{}, sessiondb.Errorf(sessiondb.EINVALID, "seq %d: want a positive message number", seq)
	}
	lookIn := func() (SeqTarget, bool, error) {
		t := SeqTarget{Seq: seq}
		found := false
		err := a.withInbound(ctx, func(q queryer) error {
			return each(q, routingBySeq("messages_in"), []any{seq}, func(row sqlitedb.Row) error {
				var err error
				t.ID, t.Routing, err = scanIDRouting(row)
				found = err == nil
				return err
			})
		})
		t.MessageID = t.ID
		return t, found, err
	}
	lookOut := func() (SeqTarget, bool, error) {
		t := SeqTarget{Seq: seq, Outbound: true}
		found := false
		err := each(a.outQ(ctx), routingBySeq("messages_out"), []any{seq}, func(row sqlitedb.Row) error {
			var err error
			t.ID, t.Routing, err = scanIDRouting(row)
			found = err == nil
			return err
		})
		if err != nil || !found {
			return t, false, sqlitedb.Wrap(err, "agent: read outbound")
		}
		t.MessageID = t.ID
		// A delivered row is named by the platform's id.
		_ = a.withInbound(ctx, func(q queryer) error {
			return each(q, "SELECT platform_message_id FROM delivered WHERE message_out_id = ? AND platform_message_id IS NOT NULL", []any{t.ID}, func(row sqlitedb.Row) error {
				var p string
				if row.Scan(&p) == nil && p != "" {
					t.MessageID = p
				}
				return nil
			})
		})
		return t, true, nil
	}
	order := []func() (SeqTarget, bool, error){lookIn, lookOut}
	if seq%2 == 1 {
		order[0], order[1] = order[1], order[0]
	}
	for _, look := range order {
		t, found, err := look()
		if err != nil {
			return SeqTarget{}, err
		}
		if found {
			return t, nil
		}
	}
	return SeqTarget{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "no message with seq %d", seq)
}

// MessageIDBySeq names the message with the given seq for edits and
// reactions: even → the inbound id; odd → the delivered platform message id
// if any, else the outbound id (LookupSeq). Unknown → not_found.
func (a *Agent) MessageIDBySeq(ctx context.Context, seq int64) (string, error) {
	t, err := a.LookupSeq(ctx, seq)
	return t.MessageID, err
}

// RoutingBySeq returns the routing of the message with the given seq.
func (a *Agent) RoutingBySeq(ctx context.Context, seq int64) (Routing, error) {
	t, err := a.LookupSeq(ctx, seq)
	return t.Routing, err
}

// routingBySeq selects the id and routing of table's row with a given seq.
func routingBySeq(table string) string {
	return "SELECT id, channel_type, platform_id, thread_id FROM " + table + " WHERE seq = ?"
}

func scanIDRouting(row sqlitedb.Row) (string, Routing, error) {
	var id string
	var ct, pid, tid sql.NullString
	err := row.Scan(&id, &ct, &pid, &tid)
	return id, Routing{ct.String, pid.String, tid.String}, err
}
