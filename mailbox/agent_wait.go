package mailbox

import (
	"context"
	"errors"
	"time"

	"github.com/sessiondb/sessiondb"
)

// AwaitQuestionResponse waits (timeout ≤ 0: 300 s) for a pending, unacked
// kind='system' row whose content holds "questionId":"<id>", acks it
// completed and returns it. It is woken by inbound changes and polls at
// PollInterval. No response in time → not_found (wrapping
// context.DeadlineExceeded).
func (a *Agent) AwaitQuestionResponse(ctx context.Context, questionID string, timeout time.Duration) (InboundRow, error) {
	if questionID == "" {
		return InboundRow{}, sessiondb.Errorf(sessiondb.EINVALID, "question id is empty")
	}
	if timeout <= 0 {
		timeout = DefaultQuestionTimeout
	}
	needle := `"questionId":` + string(marshalCompact(questionID))
	return a.await(ctx, timeout, "response to question "+questionID,
		"kind = 'system' AND instr(content, ?) > 0", needle)
}

// AwaitCLIResponse waits (timeout ≤ 0: 30 s) for the pending, unacked row
// cli-resp-<requestID>, acks it completed and returns it.
func (a *Agent) AwaitCLIResponse(ctx context.Context, requestID string, timeout time.Duration) (InboundRow, error) {
	if requestID == "" {
		return InboundRow{}, sessiondb.Errorf(sessiondb.EINVALID, "request id is empty")
	}
	if timeout <= 0 {
		timeout = DefaultCLIResponseTimeout
	}
	return a.await(ctx, timeout, "CLI response "+requestID, "id = ?", "cli-resp-"+requestID)
}

func (a *Agent) await(ctx context.Context, timeout time.Duration, what, where string, arg any) (InboundRow, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		seen := a.inboundSeen()
		var cands []InboundRow
		err := a.withInbound(ctx, func(q queryer) error {
			sel, _, err := a.inboundSelect(q)
			if err != nil {
				return err
			}
			cands, err = collectInbound(q, "SELECT "+sel+" FROM messages_in WHERE status = 'pending' AND "+where+" ORDER BY seq", arg)
			return err
		})
		if err != nil && errCode(err) != sessiondb.EBUSY {
			return InboundRow{}, err
		}
		if len(cands) > 0 {
			acked, err := a.ackedAmong(ctx, cands)
			if err != nil {
				return InboundRow{}, err
			}
			for _, r := range cands {
				if !acked[r.ID] {
					if err := a.MarkCompleted(context.WithoutCancel(ctx), r.ID); err != nil {
						return InboundRow{}, err
					}
					return r, nil
				}
			}
		}
		if err := a.waitInbound(ctx, seen); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return InboundRow{}, sessiondb.Wrap(sessiondb.ENOTFOUND, err, "no %s within %s", what, timeout)
			}
			return InboundRow{}, err
		}
	}
}

// WaitInbound blocks until inbound.db changes, PollInterval passes (rows
// also become due by time alone), or ctx ends (then ctx's error). A change
// the agent's latest poll read, or one an earlier WaitInbound returned for,
// does not wake it: a poll that met the host's commit and read past it has
// seen what the commit's wake would have made it read again.
func (a *Agent) WaitInbound(ctx context.Context) error {
	a.mu.Lock()
	seen := max(a.pollSaw, a.waitSaw)
	a.mu.Unlock()
	return a.waitInbound(ctx, seen)
}

// waitInbound waits for an inbound change counted after seen (see
// Watcher.Changes), PollInterval, or the end of ctx.
func (a *Agent) waitInbound(ctx context.Context, seen uint64) error {
	w, err := a.inboundWatcher()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(a.opts.PollInterval)
	defer t.Stop()
	for {
		if n := w.Changes(); n > seen {
			a.mu.Lock()
			a.waitSaw = max(a.waitSaw, n)
			a.mu.Unlock()
			return nil
		}
		select {
		case <-w.C():
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// inboundSeen is the count of inbound changes so far: a read that begins
// after it sees every change it counts.
func (a *Agent) inboundSeen() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.watcher == nil {
		return 0
	}
	return a.watcher.Changes()
}

// polled records, from inside a poll's read transaction on inbound.db, that
// the poll sees every change counted so far: no commit can end while the
// read holds the file, so the changes counted were all committed before it.
func (a *Agent) polled() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.watcher != nil {
		a.pollSaw = max(a.pollSaw, a.watcher.Changes())
	}
}

func (a *Agent) inboundWatcher() (*Watcher, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "agent is closed")
	}
	if a.watcher == nil {
		w, err := NewWatcher(a.dir, []string{InboundFile, InboundFile + "-journal"},
			WatchOptions{Interval: a.opts.PollInterval, NoNotify: a.opts.NoNotify, CommitsOnly: true})
		if err != nil {
			return nil, err
		}
		a.watcher = w
	}
	return a.watcher, nil
}
