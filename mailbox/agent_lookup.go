package mailbox

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// InboundByID reads one messages_in row by id (read-only, fresh
// connection); not_found when absent.
func (a *Agent) InboundByID(ctx context.Context, id string) (InboundRow, error) {
	var r InboundRow
	found := false
	err := a.withInbound(ctx, func(q queryer) error {
		cols, err := columns(q, "messages_in")
		if err != nil {
			return err
		}
		sel := inboundCols
		if !cols["on_wake"] {
			sel = strings.TrimSuffix(sel, ", on_wake")
		}
		return each(q, "SELECT "+sel+" FROM messages_in WHERE id = ?", []any{id}, func(row sqlitedb.Row) error {
			found = true
			var err error
			r, err = scanInbound(row, cols["on_wake"])
			return err
		})
	})
	if err == nil && !found {
		err = sessiondb.Errorf(sessiondb.ENOTFOUND, "no inbound message %q", errtext.Clip(id, 64))
	}
	return r, err
}

// MessageIDBySeq names the message with the given seq for edits and
// reactions: even → the inbound id; odd → the delivered platform message id
// if any, else the outbound id. A seq absent from its parity's table is
// looked up in the other. Unknown → not_found.
func (a *Agent) MessageIDBySeq(ctx context.Context, seq int64) (string, error) {
	id, _, err := a.bySeq(ctx, seq)
	return id, err
}

// RoutingBySeq returns the routing of the message with the given seq.
func (a *Agent) RoutingBySeq(ctx context.Context, seq int64) (Routing, error) {
	_, r, err := a.bySeq(ctx, seq)
	return r, err
}

func (a *Agent) bySeq(ctx context.Context, seq int64) (string, Routing, error) {
	if seq <= 0 {
		return "", Routing{}, sessiondb.Errorf(sessiondb.EINVALID, "seq %d: want a positive message number", seq)
	}
	lookIn := func() (string, Routing, bool, error) {
		var id string
		var r Routing
		found := false
		err := a.withInbound(ctx, func(q queryer) error {
			return each(q, routingBySeq("messages_in"), []any{seq}, func(row sqlitedb.Row) error {
				var err error
				id, r, err = scanIDRouting(row)
				found = err == nil
				return err
			})
		})
		return id, r, found, err
	}
	lookOut := func() (string, Routing, bool, error) {
		var id string
		var r Routing
		found := false
		err := each(a.outQ(ctx), routingBySeq("messages_out"), []any{seq}, func(row sqlitedb.Row) error {
			var err error
			id, r, err = scanIDRouting(row)
			found = err == nil
			return err
		})
		if err != nil || !found {
			return "", Routing{}, false, sqlitedb.Wrap(err, "agent: read outbound")
		}
		// A delivered row is named by the platform's id.
		_ = a.withInbound(ctx, func(q queryer) error {
			return each(q, "SELECT platform_message_id FROM delivered WHERE message_out_id = ? AND platform_message_id IS NOT NULL", []any{id}, func(row sqlitedb.Row) error {
				var p string
				if row.Scan(&p) == nil && p != "" {
					id = p
				}
				return nil
			})
		})
		return id, r, true, nil
	}
	order := []func() (string, Routing, bool, error){lookIn, lookOut}
	if seq%2 == 1 {
		order[0], order[1] = order[1], order[0]
	}
	for _, look := range order {
		id, r, found, err := look()
		if err != nil {
			return "", Routing{}, err
		}
		if found {
			return id, r, nil
		}
	}
	return "", Routing{}, sessiondb.Errorf(sessiondb.ENOTFOUND, "no message with seq %d", seq)
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
