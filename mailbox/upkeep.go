package mailbox

import (
	"context"
	"database/sql"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SessionCheck is what CheckSession found in one session.
type SessionCheck struct {
	// Due counts the due rows with trigger=1 (see CountDue), after the
	// agent's acks were synced.
	Due int
	// Claims are the agent's processing acks.
	Claims []Claim
	// Container is outbound.db's container_state row, read only when
	// CheckSession was asked for it.
	Container ContainerState
	// NextDeliverAfter is the earliest future deliver_after of an outbound
	// row; zero when there is none.
	NextDeliverAfter time.Time
}

// CheckSession syncs the agent's completed and failed acks into
// messages_in (SyncAcks) and reads what a host deciding on the session
// needs: the due count, the processing claims, the container state (when
// withContainer: it means something only while a container runs) and the
// next deliver_after. It opens outbound.db read-only once, with the inbound
// transaction inside that read.
func (h *Host) CheckSession(ctx context.Context, ref SessionRef, withContainer bool) (SessionCheck, error) {
	var c SessionCheck
	var deliverAfter sql.NullString
	err := h.withOutboundRO(ctx, ref, func(out queryer) error {
		var err error
		if withContainer {
			if c.Container, err = readContainerState(out); err != nil {
				return err
			}
		}
		if c.Claims, err = readClaims(out, AckProcessing); err != nil {
			return err
		}
		if err := scanOne(out, &deliverAfter, nextDeliverAfterQuery, FormatTime(h.now())); err != nil {
			return err
		}
		return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
			if _, err := syncAcksTx(tx, out); err != nil {
				return err
			}
			c.Due, err = countDueTx(tx, h.now())
			return err
		})
	})
	if err != nil {
		return SessionCheck{}, err
	}
	c.NextDeliverAfter = earliest([]sql.NullString{deliverAfter})
	return c, nil
}

// Upkeep runs a session's timed upkeep in one inbound transaction:
// recurrences advance (AdvanceRecurrences) and expired system rows fail
// (ExpireSystemRows). It returns when the inbound side next needs a look
// without any file change: the earliest future process_after of a pending
// row, delivery retry or system-row expiry; zero when there is none.
func (h *Host) Upkeep(ctx context.Context, ref SessionRef) (time.Time, error) {
	var times []sql.NullString
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		if _, err := h.advanceTx(ctx, tx, ref); err != nil {
			return err
		}
		if _, err := h.expireTx(tx); err != nil {
			return err
		}
		var err error
		times, err = h.nextDueTx(tx)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return earliest(times), nil
}

// nextDeliverAfterQuery reads the earliest deliver_after of outbound.db
// that lies after its one argument (now).
const nextDeliverAfterQuery = "SELECT min(datetime(deliver_after)) FROM messages_out WHERE deliver_after IS NOT NULL AND datetime(deliver_after) > datetime(?)"

// nextDueTx returns the inbound side's timed events: the earliest future
// process_after of a pending row, delivery retry, and system-row expiry.
func (h *Host) nextDueTx(tx *sqlitedb.Tx) ([]sql.NullString, error) {
	now := FormatTime(h.now())
	var times []sql.NullString
	for _, q := range []string{
		"SELECT min(datetime(process_after)) FROM messages_in WHERE status = 'pending' AND process_after IS NOT NULL AND datetime(process_after) > datetime(?1)",
		"SELECT min(datetime(next_attempt_at)) FROM delivery_attempts WHERE next_attempt_at IS NOT NULL AND datetime(next_attempt_at) > datetime(?1)",
		"SELECT min(datetime(timestamp, '+" + itoa(int64(h.opts.SystemRowTTL/time.Second)+1) + " seconds')) FROM messages_in WHERE kind = 'system' AND status = 'pending' AND ?1 IS NOT NULL",
	} {
		var t sql.NullString
		if err := tx.QueryRow(q, now).Scan(&t); err != nil {
			return nil, err
		}
		times = append(times, t)
	}
	return times, nil
}

// earliest returns the earliest of the stored times that parse; zero when
// none does.
func earliest(times []sql.NullString) time.Time {
	var next time.Time
	for _, t := range times {
		if !t.Valid {
			continue
		}
		v, err := ParseTime(t.String)
		if err != nil {
			continue
		}
		if next.IsZero() || v.Before(next) {
			next = v
		}
	}
	return next
}

// CountDue counts due rows with trigger=1: pending, and process_after unset
// or not after now.
func (h *Host) CountDue(ctx context.Context, ref SessionRef) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		n, err = countDueTx(tx, h.now())
		return err
	})
	return n, err
}

func countDueTx(tx *sqlitedb.Tx, now time.Time) (int, error) {
	var n int
	err := tx.QueryRow(`SELECT count(*) FROM messages_in WHERE status = 'pending' AND trigger = 1
 AND (process_after IS NULL OR datetime(process_after) <= datetime(?))`, FormatTime(now)).Scan(&n)
	return n, err
}

// ExpireSystemRows fails pending kind='system' rows older than
// SystemRowTTL (orphaned question responses would otherwise wake containers
// forever); returns the rows touched.
func (h *Host) ExpireSystemRows(ctx context.Context, ref SessionRef) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	var n int
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		n, err = h.expireTx(tx)
		return err
	})
	return n, err
}

func (h *Host) expireTx(tx *sqlitedb.Tx) (int, error) {
	cutoff := FormatTime(h.now().Add(-h.opts.SystemRowTTL))
	r, err := tx.Exec(`UPDATE messages_in SET status = 'failed'
 WHERE kind = 'system' AND status = 'pending' AND datetime(timestamp) <= datetime(?)`, cutoff)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// NextDeliveryDue returns when the session's next outbound row falls due
// without any file change: the earliest delivery retry of an undelivered
// row, or the earliest future deliver_after. Zero: none.
func (h *Host) NextDeliveryDue(ctx context.Context, ref SessionRef) (time.Time, error) {
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
		var t sql.NullString
		err := scanOne(q, &t, nextDeliverAfterQuery, now)
		times = append(times, t)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return earliest(times), nil
}
