package mailbox

import (
	"context"
	"os"
	"time"
)

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
