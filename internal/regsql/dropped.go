package regsql

import (
	"context"
	"time"

	"github.com/sessiondb/sessiondb"
)

// The dropped-message audit (spec A9).

// RecordDroppedMessage implements sessiondb.DroppedService.
func (c *Registry) RecordDroppedMessage(ctx context.Context, d sessiondb.DroppedMessage) error {
	if err := d.Validate(); err != nil {
		return err
	}
	return c.write(ctx, "record dropped message", func(tx Tx) error {
		now := c.stamp()
		_, err := tx.Exec(`INSERT INTO unregistered_senders
  (channel_type, platform_id, user_id, sender_name, reason, messaging_group_id, agent_group_id, message_count, first_seen, last_seen)
VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
ON CONFLICT(channel_type, platform_id) DO UPDATE SET
  user_id = COALESCE(excluded.user_id, unregistered_senders.user_id),
  sender_name = COALESCE(excluded.sender_name, unregistered_senders.sender_name),
  reason = excluded.reason,
  messaging_group_id = excluded.messaging_group_id,
  agent_group_id = excluded.agent_group_id,
  message_count = unregistered_senders.message_count + 1,
  last_seen = excluded.last_seen`,
			d.ChannelType, d.PlatformID, nullText(d.UserID), nullText(d.SenderName), string(d.Reason),
			nullText(d.MessagingGroupID), nullText(d.AgentGroupID), now, now)
		return err
	})
}

// ListDropped implements sessiondb.DroppedService.
func (c *Registry) ListDropped(ctx context.Context, limit int) ([]sessiondb.DroppedSender, error) {
	if err := sessiondb.CheckWindow(limit, 0); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = 50
	}
	out, err := AppendRows(ctx, c.rq, `SELECT channel_type, platform_id, user_id, sender_name, reason, messaging_group_id, agent_group_id,
  message_count, first_seen, last_seen FROM unregistered_senders ORDER BY last_seen DESC, channel_type, platform_id LIMIT ?`,
		[]any{limit}, []sessiondb.DroppedSender{}, func(r Scanner) (sessiondb.DroppedSender, error) {
			var d sessiondb.DroppedSender
			var reason string
			err := r.Scan(&d.ChannelType, &d.PlatformID, intoText(&d.UserID), intoText(&d.SenderName), &reason, intoText(&d.MessagingGroupID), intoText(&d.AgentGroupID),
				&d.MessageCount, IntoTime(&d.FirstSeen), IntoTime(&d.LastSeen))
			d.Reason = sessiondb.DropReason(reason)
			return d, err
		})
	return out, c.wrap(err, "list dropped messages")
}

// PruneDropped implements sessiondb.DroppedService. last_seen is always
// written in TimestampFormat (by NanoClaw too), so text order is time
// order and the index serves the comparison.
func (c *Registry) PruneDropped(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := c.changeRows(ctx, "prune dropped messages", "DELETE FROM unregistered_senders WHERE last_seen < ?", sessiondb.FormatTimestamp(cutoff))
	return int(n), err
}
