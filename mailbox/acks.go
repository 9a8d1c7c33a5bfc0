package mailbox

import (
	"context"
	"strings"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// readAcks returns the agent's acks with the given statuses.
func (h *Host) readAcks(ctx context.Context, ref SessionRef, statuses ...string) ([]Claim, error) {
	var out []Claim
	err := h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		out, err = readClaims(q, statuses...)
		return err
	})
	return out, err
}

// readClaims returns the processing_ack rows with the given statuses.
func readClaims(q queryer, statuses ...string) ([]Claim, error) {
	ph := strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")
	args := make([]any, len(statuses))
	for i, s := range statuses {
		args[i] = s
	}
	return collectClaims(q, "SELECT message_id, status, status_changed FROM processing_ack WHERE status IN ("+ph+")", args...)
}

// collectClaims runs a processing_ack query selecting message_id, status
// and status_changed, and returns its rows.
func collectClaims(q queryer, query string, args ...any) ([]Claim, error) {
	return collect(q, query, args, func(r sqlitedb.Row) (Claim, error) {
		var c Claim
		err := r.Scan(&c.MessageID, &c.Status, &c.StatusChanged)
		return c, err
	})
}

// SyncAcks mirrors the agent's completed and failed acks into messages_in
// (pending rows only), in one inbound transaction. A failed ack makes the
// row failed, not completed: kept distinct for tools and recurrences. Only
// the acks of pending rows are read, so the cost does not grow with the
// session's history.
func (h *Host) SyncAcks(ctx context.Context, ref SessionRef) (AckSync, error) {
	if err := ref.Validate(); err != nil {
		return AckSync{}, err
	}
	var res AckSync
	err := h.withOutboundRO(ctx, ref, func(out queryer) error {
		var err error
		res, err = h.syncAcks(ctx, ref, out)
		return err
	})
	return res, err
}

// syncAcks is SyncAcks with outbound.db already open as out.
func (h *Host) syncAcks(ctx context.Context, ref SessionRef, out queryer) (AckSync, error) {
	var res AckSync
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		res, err = syncAcksTx(tx, out)
		return err
	})
	return res, err
}

// syncAcksTx applies the acks found through out to the pending rows of the
// open inbound transaction.
func syncAcksTx(tx *sqlitedb.Tx, out queryer) (AckSync, error) {
	var res AckSync
	pending, err := collect(tx, "SELECT id FROM messages_in WHERE status = 'pending'", nil, func(r sqlitedb.Row) (any, error) {
		return sqlitedb.Value[string](r)
	})
	if err != nil {
		return res, err
	}
	err = inChunks(pending, func(part []any, ph string) error {
		acks, err := collect(out, "SELECT message_id, status FROM processing_ack WHERE status IN ('completed', 'failed') AND message_id IN ("+ph+")", part, func(r sqlitedb.Row) (Claim, error) {
			var c Claim
			err := r.Scan(&c.MessageID, &c.Status)
			return c, err
		})
		if err != nil {
			return err
		}
		for _, a := range acks {
			status := StatusCompleted
			if a.Status == AckFailed {
				status = StatusFailed
			}
			r, err := tx.Exec("UPDATE messages_in SET status = ? WHERE id = ? AND status = 'pending'", status, a.MessageID)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n > 0 {
				if status == StatusFailed {
					res.Failed++
				} else {
					res.Completed++
				}
			}
		}
		return nil
	})
	return res, err
}

// acksToSync reports whether a completed or failed ack waits to be mirrored
// into a pending inbound row (what syncAcksTx would write). q reads
// outbound.db with inbound.db attached as inboundAlias.
func acksToSync(q queryer) (bool, error) {
	var one int
	err := scanOne(q, &one, `SELECT 1 FROM processing_ack a JOIN `+inboundAlias+`.messages_in m ON m.id = a.message_id
 WHERE m.status = 'pending' AND a.status IN ('completed', 'failed') LIMIT 1`)
	return one == 1, err
}

// Claims reads the processing acks (read-only).
func (h *Host) Claims(ctx context.Context, ref SessionRef) ([]Claim, error) {
	return h.readAcks(ctx, ref, AckProcessing)
}

// Acks reads the agent's acks of every status (read-only), for tools that
// show what the agent has finished but the host has not yet mirrored.
func (h *Host) Acks(ctx context.Context, ref SessionRef) ([]Claim, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	return h.readAcks(ctx, ref, AckProcessing, AckCompleted, AckFailed)
}
