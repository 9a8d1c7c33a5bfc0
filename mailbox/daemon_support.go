package mailbox

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

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
		rows, err := tx.Query("SELECT message_out_id, attempts, last_error, last_attempt_at, next_attempt_at FROM delivery_attempts")
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var st DeliveryState
			var le, la, na sql.NullString
			if err := rows.Scan(&id, &st.Attempts, &le, &la, &na); err != nil {
				rows.Close()
				return err
			}
			st.Status, st.LastError, st.LastAttemptAt, st.NextAttemptAt = DeliveryRetrying, le.String, la.String, na.String
			out[id] = st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query("SELECT message_out_id, platform_message_id, status, delivered_at FROM delivered")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var pid, status, at sql.NullString
			if err := rows.Scan(&id, &pid, &status, &at); err != nil {
				return err
			}
			st := out[id]
			st.Status, st.PlatformMessageID, st.DeliveredAt = status.String, pid.String, at.String
			st.NextAttemptAt = ""
			out[id] = st
		}
		return rows.Err()
	})
	return out, err
}

// SessionStatus summarizes one session for `sessiondb mailbox status`.
type SessionStatus struct {
	Ref SessionRef `json:"session"`
	// Inbound rows by state: Due is pending and due with trigger=1;
	// Scheduled is pending with a future process_after; Processing has a
	// processing ack. A pending row the agent acked completed or failed
	// counts as such before the host mirrors the ack.
	Pending    int `json:"pending"`
	Due        int `json:"due"`
	Scheduled  int `json:"scheduled"`
	Processing int `json:"processing"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Paused     int `json:"paused"`
	// Outbound rows by delivery state.
	OutUndelivered int `json:"out_undelivered"`
	OutRetrying    int `json:"out_retrying"`
	OutDelivered   int `json:"out_delivered"`
	OutFailed      int `json:"out_failed"`
	// Heartbeat is the .heartbeat mtime (zero: absent).
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	// Stuck is DecideStuck's verdict now, were the container running.
	Stuck string `json:"stuck"`
	// HotJournal reports an outbound.db-journal left behind (a writer
	// killed mid-transaction, or one writing right now).
	HotJournal bool `json:"hot_journal,omitempty"`
	// LastError is the newest delivery error, or the error that stopped
	// the status from being read.
	LastError string `json:"last_error,omitempty"`
}

// Status reads one session's summary. It writes nothing but opens
// inbound.db read-write like every host operation (which also rolls back a
// journal a killed host left).
func (h *Host) Status(ctx context.Context, ref SessionRef) (SessionStatus, error) {
	st := SessionStatus{Ref: ref, Stuck: StuckOK.String()}
	rows, err := h.InboundRows(ctx, ref, 0)
	if err != nil {
		return st, err
	}
	acks, err := h.readAcks(ctx, ref, AckProcessing, AckCompleted, AckFailed)
	if err != nil {
		return st, err
	}
	acked := map[string]string{}
	for _, a := range acks {
		acked[a.MessageID] = a.Status
	}
	now := h.now()
	for _, r := range rows {
		switch r.Status {
		case StatusPending:
			pa, perr := ParseTime(r.ProcessAfter)
			future := r.ProcessAfter != "" && perr == nil && pa.After(now)
			// An ack the host has not mirrored yet already tells the
			// row's fate.
			switch acked[r.ID] {
			case AckCompleted:
				st.Completed++
				continue
			case AckFailed:
				st.Failed++
				continue
			}
			st.Pending++
			switch {
			case acked[r.ID] == AckProcessing:
				st.Processing++
			case future:
				st.Scheduled++
			case r.Trigger:
				st.Due++
			}
		case StatusCompleted:
			st.Completed++
		case StatusFailed:
			st.Failed++
		case StatusPaused:
			st.Paused++
		}
	}
	outs, err := h.OutboundRows(ctx, ref, 0)
	if err != nil {
		return st, err
	}
	ds, err := h.DeliveryStates(ctx, ref)
	if err != nil {
		return st, err
	}
	var lastAt string
	for _, o := range outs {
		d, ok := ds[o.ID]
		switch {
		case !ok:
			st.OutUndelivered++
		case d.Status == DeliveredOK:
			st.OutDelivered++
		case d.Status == DeliveredFailed:
			st.OutFailed++
		default:
			st.OutRetrying++
		}
		if ok && d.LastError != "" && d.LastAttemptAt >= lastAt {
			lastAt, st.LastError = d.LastAttemptAt, d.LastError
		}
	}
	if st.Heartbeat, err = h.Heartbeat(ref); err != nil {
		return st, err
	}
	if v, err := h.CheckStuck(ctx, ref); err == nil {
		st.Stuck = v.String()
	}
	if p, err := h.layout.OutboundPath(ref); err == nil {
		if fi, err := os.Stat(p + "-journal"); err == nil && fi.Size() > 0 {
			st.HotJournal = true
		}
	}
	return st, nil
}

// RequeueResult counts what Requeue changed.
type RequeueResult struct {
	Inbound  int `json:"inbound"`   // failed messages_in rows made pending again
	Outbound int `json:"outbound"`  // failed deliveries made undelivered again
	AcksGone int `json:"acks_gone"` // the agent's failed acks deleted so it polls the rows again
}

// Requeue puts failed rows back in line: failed messages_in rows (ids, or
// all when ids is empty) become pending with tries 0 and no process_after,
// and their 'failed' acks are deleted from outbound.db so the agent polls
// them again; failed deliveries (outbound ids among ids, or all) lose their
// delivered and delivery_attempts rows, so the next drain sends them
// again. It opens outbound.db read-write: call it only when no container
// runs for the session.
func (h *Host) Requeue(ctx context.Context, ref SessionRef, ids []string) (RequeueResult, error) {
	var res RequeueResult
	if err := ref.Validate(); err != nil {
		return res, err
	}
	for _, id := range ids {
		if err := checkText("message id", id); err != nil || id == "" {
			return res, sessiondb.Errorf(sessiondb.EINVALID, "requeue: message id %q is empty or has control characters", errtext.Clip(id, 64))
		}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var requeued []string
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		requeued, res.Inbound, res.Outbound = nil, 0, 0
		failedIn, err := idSet(tx, "SELECT id FROM messages_in WHERE status = 'failed'")
		if err != nil {
			return err
		}
		for id := range failedIn {
			if len(want) > 0 && !want[id] {
				continue
			}
			if _, err := tx.Exec("UPDATE messages_in SET status = 'pending', tries = 0, process_after = NULL WHERE id = ? AND status = 'failed'", id); err != nil {
				return err
			}
			requeued = append(requeued, id)
			res.Inbound++
		}
		failedOut, err := idSet(tx, "SELECT message_out_id FROM delivered WHERE status = 'failed'")
		if err != nil {
			return err
		}
		for id := range failedOut {
			if len(want) > 0 && !want[id] {
				continue
			}
			if _, err := tx.Exec("DELETE FROM delivered WHERE message_out_id = ? AND status = 'failed'", id); err != nil {
				return err
			}
			if _, err := tx.Exec("DELETE FROM delivery_attempts WHERE message_out_id = ?", id); err != nil {
				return err
			}
			res.Outbound++
		}
		return nil
	})
	if err != nil || len(requeued) == 0 {
		return res, err
	}
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return res, err
	}
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return res, err
	}
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		res.AcksGone = 0
		for _, id := range requeued {
			r, err := tx.Exec("DELETE FROM processing_ack WHERE message_id = ? AND status = 'failed'", id)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			res.AcksGone += int(n)
		}
		return nil
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	return res, classify(err, "session %s: requeue: delete failed acks", ref)
}

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
		rows, err := q.Query("SELECT "+sel+" FROM messages_in WHERE id = ?", id)
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			found = true
			r, err = scanInbound(rows, cols["on_wake"])
			return err
		}
		return rows.Err()
	})
	if err == nil && !found {
		err = sessiondb.Errorf(sessiondb.ENOTFOUND, "no inbound message %q", errtext.Clip(id, 64))
	}
	return r, err
}

// Acks returns the agent's acks (any status), for tools.
func (a *Agent) Acks(ctx context.Context) ([]Claim, error) {
	var out []Claim
	rows, err := a.outQ(ctx).Query("SELECT message_id, status, status_changed FROM processing_ack ORDER BY status_changed, message_id")
	if err != nil {
		return nil, classify(err, "agent: read acks")
	}
	defer rows.Close()
	for rows.Next() {
		var c Claim
		if err := rows.Scan(&c.MessageID, &c.Status, &c.StatusChanged); err != nil {
			return nil, classify(err, "agent: read acks")
		}
		out = append(out, c)
	}
	return out, classify(rows.Err(), "agent: read acks")
}

// Acks reads the agent's acks of every status (read-only), for tools that
// show what the agent has finished but the host has not yet mirrored.
func (h *Host) Acks(ctx context.Context, ref SessionRef) ([]Claim, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	return h.readAcks(ctx, ref, AckProcessing, AckCompleted, AckFailed)
}
