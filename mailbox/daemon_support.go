package mailbox

import (
	"context"
	"database/sql"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// nextDeliveryDue returns when the session's next outbound row falls due
// without any file change: the earliest delivery retry of an undelivered
// row, or the earliest future deliver_after. Zero: none.
func (h *Host) nextDeliveryDue(ctx context.Context, ref SessionRef) (time.Time, error) {
	now := FormatTime(h.now())
	var times []sql.NullString
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var t sql.NullString
		err := tx.QueryRow(`SELECT min(datetime(next_attempt_at)) FROM delivery_attempts a
 WHERE next_attempt_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM delivered d WHERE d.message_out_id = a.message_out_id)`).Scan(&t)
		times = append(times[:0], t)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	err = h.withOutboundRO(ctx, ref, func(q queryer) error {
		rows, err := q.Query("SELECT min(datetime(deliver_after)) FROM messages_out WHERE deliver_after IS NOT NULL AND datetime(deliver_after) > datetime(?)", now)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t sql.NullString
			if err := rows.Scan(&t); err != nil {
				return err
			}
			times = append(times, t)
		}
		return rows.Err()
	})
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, t := range times {
		if !t.Valid {
			continue
		}
		if v, err := ParseTime(t.String); err == nil && (next.IsZero() || v.Before(next)) {
			next = v
		}
	}
	return next, nil
}
