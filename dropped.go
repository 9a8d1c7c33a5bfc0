package sessiondb

import (
	"context"
	"time"
)

// DroppedMessage is one event that reached no agent: the input of
// RecordDroppedMessage (spec A9). Empty fields are NULL.
type DroppedMessage struct {
	ChannelType      string
	PlatformID       string
	UserID           string
	SenderName       string
	Reason           DropReason
	MessagingGroupID string
	AgentGroupID     string
}

// Validate checks the chat key and the reason; the error is invalid and
// names the field.
func (d DroppedMessage) Validate() error {
	return firstError(
		checkChannelType("channel_type", d.ChannelType),
		checkText("platform_id", d.PlatformID, true, MaxPlatformID),
		checkText("user_id", d.UserID, false, MaxPlatformID),
		checkText("sender_name", d.SenderName, false, MaxPlatformID),
		checkWord("reason", d.Reason, DropNoAgentWired, DropNoAgentEngaged, DropUnknownSenderStrict, DropUnknownSenderRequestApprove),
	)
}

// DroppedSender is the audit row of one chat: a row of
// unregistered_senders, keyed by (ChannelType, PlatformID).
type DroppedSender struct {
	ChannelType      string     `json:"channel_type"`
	PlatformID       string     `json:"platform_id"`
	UserID           string     `json:"user_id,omitempty"`
	SenderName       string     `json:"sender_name,omitempty"`
	Reason           DropReason `json:"reason"`
	MessagingGroupID string     `json:"messaging_group_id,omitempty"`
	AgentGroupID     string     `json:"agent_group_id,omitempty"`
	MessageCount     int64      `json:"message_count"`
	FirstSeen        time.Time  `json:"first_seen"`
	LastSeen         time.Time  `json:"last_seen"`
}

// DroppedService keeps the dropped-message audit.
type DroppedService interface {
	// RecordDroppedMessage upserts the chat's row (spec A9): a new chat
	// gets message_count 1 and first_seen = last_seen = now; a known one
	// gets message_count + 1, last_seen = now, the new reason, and the
	// new user id and sender name only where they are set. The messaging
	// and agent group ids describe the latest drop, as the reason does, so
	// they are replaced (NULL included). One event is one call.
	RecordDroppedMessage(ctx context.Context, d DroppedMessage) error
	// ListDropped returns up to limit rows (0 means 50), most recently
	// seen first.
	ListDropped(ctx context.Context, limit int) ([]DroppedSender, error)
	// PruneDropped deletes the rows last seen before cutoff and returns
	// how many.
	PruneDropped(ctx context.Context, cutoff time.Time) (int, error)
}
