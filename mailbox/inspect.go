package mailbox

import (
	"context"
	"time"
)

// InboundView is an inbound row with its state as a person reads it (see
// InboundState).
type InboundView struct {
	InboundRow
	State string `json:"state"`
}

// OutboundView is an outbound row with its delivery (status undelivered
// when it was never attempted).
type OutboundView struct {
	OutboundRow
	Delivery DeliveryState `json:"delivery"`
}

// InboundState names an inbound row's state: a pending row the agent has
// acked shows the ack (processing, or completed/failed before the host
// mirrors it); else scheduled when process_after is ahead of now; else
// the row's status.
func InboundState(r InboundRow, acked map[string]string, now time.Time) string {
	if r.Status != StatusPending {
		return r.Status
	}
	if a := acked[r.ID]; a != "" {
		return a
	}
	if r.ProcessAfter != "" {
		if t, err := ParseTime(r.ProcessAfter); err == nil && t.After(now) {
			return "scheduled"
		}
	}
	return StatusPending
}

// Inspect reads one session's rows, newest first (limit ≤ 0: all), with
// their states: what `mailbox ls` and the server's mailbox page show.
func (h *Host) Inspect(ctx context.Context, ref SessionRef, limit int) ([]InboundView, []OutboundView, error) {
	in, err := h.InboundRows(ctx, ref, limit)
	if err != nil {
		return nil, nil, err
	}
	acks, err := h.Acks(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	acked := map[string]string{}
	for _, a := range acks {
		acked[a.MessageID] = a.Status
	}
	out, err := h.OutboundRows(ctx, ref, limit)
	if err != nil {
		return nil, nil, err
	}
	ds, err := h.DeliveryStates(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	now := h.now()
	ins := make([]InboundView, len(in))
	for i, r := range in {
		ins[i] = InboundView{r, InboundState(r, acked, now)}
	}
	outs := make([]OutboundView, len(out))
	for i, r := range out {
		d, ok := ds[r.ID]
		if !ok {
			d.Status = DeliveryUndelivered
		}
		outs[i] = OutboundView{r, d}
	}
	return ins, outs, nil
}
