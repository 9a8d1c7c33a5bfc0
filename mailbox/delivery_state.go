package mailbox

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// DeliveryState is what inbound.db records about one outbound row's
// delivery: Status is "undelivered", "retrying", DeliveredOK or
// DeliveredFailed.
type DeliveryState struct {
	Status            string `json:"status"`
	PlatformMessageID string `json:"platform_message_id,omitempty"`
	DeliveredAt       string `json:"delivered_at,omitempty"`
	Attempts          int    `json:"attempts,omitempty"`
	LastError         string `json:"last_error,omitempty"`
	LastAttemptAt     string `json:"last_attempt_at,omitempty"`
	NextAttemptAt     string `json:"next_attempt_at,omitempty"`
}

// Delivery states besides DeliveredOK and DeliveredFailed.
const (
	DeliveryUndelivered = "undelivered"
	DeliveryRetrying    = "retrying"
)

// DeliveryStates returns the delivery record of every outbound row id that
// has one (delivered, failed, or attempted); rows absent from the map are
// undelivered and never attempted.
func (h *Host) DeliveryStates(ctx context.Context, ref SessionRef) (map[string]DeliveryState, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	out := map[string]DeliveryState{}
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		clear(out)
		err := each(tx, "SELECT message_out_id, attempts, last_error, last_attempt_at, next_attempt_at FROM delivery_attempts", nil, func(row sqlitedb.Row) error {
			var id string
			var st DeliveryState
			var le, la, na sql.NullString
			if err := row.Scan(&id, &st.Attempts, &le, &la, &na); err != nil {
				return err
			}
			st.Status, st.LastError, st.LastAttemptAt, st.NextAttemptAt = DeliveryRetrying, le.String, la.String, na.String
			out[id] = st
			return nil
		})
		if err != nil {
			return err
		}
		return each(tx, "SELECT message_out_id, platform_message_id, status, delivered_at FROM delivered", nil, func(row sqlitedb.Row) error {
			var id string
			var pid, status, at sql.NullString
			if err := row.Scan(&id, &pid, &status, &at); err != nil {
				return err
			}
			st := out[id]
			st.Status, st.PlatformMessageID, st.DeliveredAt = status.String, pid.String, at.String
			st.NextAttemptAt = ""
			out[id] = st
			return nil
		})
	})
	return out, err
}
