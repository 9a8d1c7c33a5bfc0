package mailbox

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// HeartbeatInterval is how often KeepAlive touches .heartbeat while a batch
// runs, so rate-limit waits and slow resumes are not mistaken for a stuck
// container.
const HeartbeatInterval = 10 * time.Second

// IsClear reports whether row is a chat command to clear the session: a
// chat row whose text starts with "/clear".
func IsClear(row InboundRow) bool {
	if row.Kind != KindChat {
		return false
	}
	c, err := DecodeContent(row.Content)
	return err == nil && strings.HasPrefix(strings.TrimSpace(c.Text), "/clear")
}

// ClearSession handles a /clear row: it deletes provider's continuation,
// replies {"text":"Session cleared."} on the row's routing, and acks the
// row completed — no model call.
func (a *Agent) ClearSession(ctx context.Context, row InboundRow, provider string) error {
	if err := a.ClearContinuation(ctx, provider); err != nil {
		return err
	}
	if _, err := a.Send(ctx, OutboundMessage{Content: json.RawMessage(`{"text":"Session cleared."}`), Routing: row.Routing, InReplyTo: row.ID}); err != nil {
		return err
	}
	return a.MarkCompleted(ctx, row.ID)
}

// KeepAlive touches .heartbeat now and then every interval (≤ 0:
// HeartbeatInterval) until the returned stop is called or ctx ends. Run it
// around a batch; the agent should not beat while idle (the host's ceiling
// doubles as the idle timeout).
func (a *Agent) KeepAlive(ctx context.Context, interval time.Duration) (stop func()) {
	if interval <= 0 {
		interval = HeartbeatInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := a.TouchHeartbeat(); err != nil {
				a.log.Debug("mailbox agent: heartbeat", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}
