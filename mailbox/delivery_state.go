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
	var out map[string]DeliveryState
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		out, err = readDeliveryStates(tx)
		return err
	})
	return out, err
}

// DeliveryStates is what the host has recorded about the delivery of the
// agent's rows (Host.DeliveryStates), read from inbound.db read-only. A
// file without the host's delivery_attempts table (NanoClaw's host) gives
// the delivered rows alone.
func (a *Agent) DeliveryStates(ctx context.Context) (map[string]DeliveryState, error) {
	var out map[string]DeliveryState
	err := a.withInbound(ctx, func(q queryer) error {
		var err error
		out, err = readDeliveryStates(q)
		return err
	})
	return out, err
}

// readDeliveryStates reads delivery_attempts (when present) and delivered.
func readDeliveryStates(q queryer) (map[string]DeliveryState, error) {
	out := map[string]DeliveryState{}
	cols, err := columns(q, "delivery_attempts")
	if err != nil {
		return nil, err
	}
	if len(cols) > 0 {
		err := each(q, "SELECT message_out_id, attempts, last_error, last_attempt_at, next_attempt_at FROM delivery_attempts", nil, func(row sqlitedb.Row) error {
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
			return nil, err
		}
	}
	err = each(q, "SELECT message_out_id, platform_message_id, status, delivered_at FROM delivered", nil, func(row sqlitedb.Row) error {
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
	if err != nil {
		return nil, err
	}
	return out, nil
}
