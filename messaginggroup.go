package sessiondb

import (
	"context"
	"time"
)

// UnknownSenderPolicy is what a chat does with a sender the access rules
// refuse (spec A5).
type UnknownSenderPolicy string

const (
	// PolicyStrict drops the message and records unknown_sender_strict.
	PolicyStrict UnknownSenderPolicy = "strict"
	// PolicyRequestApproval drops the message, records
	// unknown_sender_request_approval and asks an approver about the sender.
	PolicyRequestApproval UnknownSenderPolicy = "request_approval"
	// PolicyPublic lets everyone through the access gate.
	PolicyPublic UnknownSenderPolicy = "public"
)

// Validate refuses a word other than the three policies.
func (p UnknownSenderPolicy) Validate() error {
	return checkWord("unknown_sender_policy", p, PolicyStrict, PolicyRequestApproval, PolicyPublic)
}

// MessagingGroup is one chat on one platform: a row of messaging_groups,
// unique by (ChannelType, PlatformID). DeniedAt is set when an admin
// rejected the chat; an unwired denied chat drops messages silently.
type MessagingGroup struct {
	ID                  string              `json:"id"`
	ChannelType         string              `json:"channel_type"`
	PlatformID          string              `json:"platform_id"`
	Name                string              `json:"name,omitempty"`
	IsGroup             bool                `json:"is_group"`
	UnknownSenderPolicy UnknownSenderPolicy `json:"unknown_sender_policy"`
	CreatedAt           time.Time           `json:"created_at"`
	DeniedAt            time.Time           `json:"denied_at,omitzero"`
}

// Denied reports whether an admin rejected the chat.
func (m MessagingGroup) Denied() bool { return !m.DeniedAt.IsZero() }

// NewMessagingGroup is the input of CreateMessagingGroup and
// EnsureMessagingGroup. An empty ID gets a generated "mg-<ms>-<rand6>"; an
// empty UnknownSenderPolicy is strict (the column's default).
type NewMessagingGroup struct {
	ID                  string
	ChannelType         string
	PlatformID          string
	Name                string
	IsGroup             bool
	UnknownSenderPolicy UnknownSenderPolicy
}

// Validate checks n: ChannelType a lowercase word, PlatformID set, the
// policy one of the three (or empty), ID a safe name when given. The error
// is invalid and names the field.
func (n NewMessagingGroup) Validate() error {
	return firstError(
		checkID("id", n.ID, false),
		checkChannelType("channel_type", n.ChannelType),
		checkText("platform_id", n.PlatformID, true, MaxPlatformID),
		checkText("name", n.Name, false, MaxNameText),
		unlessEmpty(n.UnknownSenderPolicy, n.UnknownSenderPolicy.Validate),
	)
}

// MessagingGroupUpdate changes the fields that are not nil.
type MessagingGroupUpdate struct {
	Name                *string // "" clears it
	IsGroup             *bool
	UnknownSenderPolicy *UnknownSenderPolicy
	// Denied true sets denied_at to now (kept if already set); false
	// clears it.
	Denied *bool
}

// Validate checks the fields that are set.
func (u MessagingGroupUpdate) Validate() error {
	if u.Name != nil {
		if err := checkText("name", *u.Name, false, MaxNameText); err != nil {
			return err
		}
	}
	if u.UnknownSenderPolicy != nil {
		return u.UnknownSenderPolicy.Validate()
	}
	return nil
}

// MessagingGroupFilter selects messaging groups; the zero value lists all.
type MessagingGroupFilter struct {
	ChannelType string
}

// MessagingGroupService keeps the chats.
type MessagingGroupService interface {
	// CreateMessagingGroup inserts a chat with created_at = now. A taken id
	// or (channel_type, platform_id) is a conflict.
	CreateMessagingGroup(ctx context.Context, n NewMessagingGroup) (MessagingGroup, error)
	// EnsureMessagingGroup returns the chat (channel_type, platform_id) of
	// n, creating it from n when absent, in one transaction; created says
	// which. An existing chat is returned as it is (n's other fields are
	// not applied).
	EnsureMessagingGroup(ctx context.Context, n NewMessagingGroup) (MessagingGroup, bool, error)
	// GetMessagingGroup returns the chat or not_found.
	GetMessagingGroup(ctx context.Context, id string) (MessagingGroup, error)
	// FindMessagingGroup returns the chat (channelType, platformID) or
	// not_found.
	FindMessagingGroup(ctx context.Context, channelType, platformID string) (MessagingGroup, error)
	// ListMessagingGroups returns the chats f selects, ordered by name
	// (unnamed last), then channel type, platform id.
	ListMessagingGroups(ctx context.Context, f MessagingGroupFilter) ([]MessagingGroup, error)
	// UpdateMessagingGroup applies u and returns the new row; unknown id is
	// not_found.
	UpdateMessagingGroup(ctx context.Context, id string, u MessagingGroupUpdate) (MessagingGroup, error)
	// DeleteMessagingGroup deletes the chat with its wirings, the
	// destinations that name it, the DM cache rows pointing at it and its
	// pending sender and channel approvals. A chat that sessions still
	// belong to is a conflict. Unknown id: not_found.
	DeleteMessagingGroup(ctx context.Context, id string) error
}
