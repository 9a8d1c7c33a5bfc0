package sessiondb

import (
	"context"
	"strings"
)

// DMOpener is what the chat adapters offer EnsureUserDM; the router
// supplies it.
type DMOpener interface {
	// HasChannel reports whether an adapter for channelType is running.
	HasChannel(channelType string) bool
	// OpenDM returns the platform id of the direct-message chat with
	// handle on channelType: the platform's answer for channels that need
	// one (Discord, Slack, Teams, …), the handle itself for channels where
	// they are the same (Telegram, WhatsApp, iMessage, email, Matrix). An
	// error means the user cannot be reached there now.
	OpenDM(ctx context.Context, channelType, handle string) (string, error)
}

// DMRegistry is the part of the registry EnsureUserDM uses.
type DMRegistry interface {
	GetUser(ctx context.Context, id string) (User, error)
	GetUserDM(ctx context.Context, userID, channelType string) (UserDM, error)
	GetMessagingGroup(ctx context.Context, id string) (MessagingGroup, error)
	SaveUserDM(ctx context.Context, n NewUserDM) (MessagingGroup, error)
}

// EnsureUserDM returns the chat in which to reach the user directly (spec
// A6), or nil with no error when the user cannot be reached (unknown user,
// no adapter for their channel, OpenDM failed). The channel is the user
// id's prefix when an adapter runs for it; else the user's kind, with the
// whole id as the handle (Teams ids look like "29:…"). A cached DM whose
// chat still exists is returned without a write; otherwise OpenDM gives
// the chat's platform id, outside any transaction, and SaveUserDM finds or
// creates the chat and updates the cache. Storage errors are returned.
func EnsureUserDM(ctx context.Context, reg DMRegistry, dms DMOpener, userID string) (*MessagingGroup, error) {
	u, err := reg.GetUser(ctx, userID)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return nil, nil
	case err != nil:
		return nil, err
	}
	channel, handle, ok := strings.Cut(u.ID, ":")
	if !ok || channel == "" || handle == "" {
		return nil, nil
	}
	if !dms.HasChannel(channel) {
		if u.Kind == "" || u.Kind == channel || !dms.HasChannel(u.Kind) {
			return nil, nil
		}
		channel, handle = u.Kind, u.ID
	}
	cached, err := reg.GetUserDM(ctx, u.ID, channel)
	switch {
	case err == nil:
		mg, err := reg.GetMessagingGroup(ctx, cached.MessagingGroupID)
		if err == nil {
			return &mg, nil
		}
		if ErrorCode(err) != ENOTFOUND {
			return nil, err
		}
		// The cached chat was deleted: resolve again.
	case ErrorCode(err) != ENOTFOUND:
		return nil, err
	}
	platformID, err := dms.OpenDM(ctx, channel, handle)
	if err != nil || platformID == "" {
		return nil, nil
	}
	mg, err := reg.SaveUserDM(ctx, NewUserDM{UserID: u.ID, ChannelType: channel, PlatformID: platformID, Name: u.DisplayName})
	if err != nil {
		return nil, err
	}
	return &mg, nil
}
