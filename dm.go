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

// NeedsOpenedDM reports whether a user's DM chat on channelType is not
// their handle and must be opened by the platform (Discord, Slack, Teams,
// Webex, Google Chat: NanoClaw's resolution-required channels, whose
// adapters implement openDM). On the others (Telegram, WhatsApp, iMessage,
// email, Matrix, ...) the handle is the DM chat.
func NeedsOpenedDM(channelType string) bool {
	switch channelType {
	case "discord", "slack", "teams", "webex", "gchat":
		return true
	}
	return false
}

// UserDMResult is what ResolveUserDM found: the chat in which to reach the user,
// or why they cannot be reached (Chat nil, Unreachable the reason).
type UserDMResult struct {
	Chat        *MessagingGroup
	Unreachable string
}

// EnsureUserDM returns the chat in which to reach the user directly (spec
// A6), or nil with no error when the user cannot be reached
// (ResolveUserDM says why).
func EnsureUserDM(ctx context.Context, reg DMRegistry, dms DMOpener, userID string) (*MessagingGroup, error) {
	r, err := ResolveUserDM(ctx, reg, dms, userID)
	return r.Chat, err
}

// ResolveUserDM finds the chat in which to reach the user directly (spec
// A6). Unreachable (unknown user, an id that is not namespaced, no adapter
// for their channel, OpenDM failed or answered nothing) is not an error:
// the result says why. The channel is the user id's prefix when an adapter
// runs for it; else the user's kind, with the whole id as the handle (Teams
// ids look like "29:…"). A cached DM whose chat still exists is returned
// without a write, unless the channel needs its DM opened and the cached
// chat is the handle itself: a guess (an earlier version cached one), which
// is resolved again. Otherwise OpenDM gives the chat's platform id, outside
// any transaction, and SaveUserDM finds or creates the chat and updates the
// cache; a DM that could not be opened caches nothing. Storage errors are
// returned.
func ResolveUserDM(ctx context.Context, reg DMRegistry, dms DMOpener, userID string) (UserDMResult, error) {
	u, err := reg.GetUser(ctx, userID)
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return UserDMResult{Unreachable: "no such user"}, nil
	case err != nil:
		return UserDMResult{}, err
	}
	channel, handle, ok := strings.Cut(u.ID, ":")
	if !ok || channel == "" || handle == "" {
		return UserDMResult{Unreachable: "the user id is not <channel>:<handle>"}, nil
	}
	if !dms.HasChannel(channel) {
		if u.Kind == "" || u.Kind == channel || !dms.HasChannel(u.Kind) {
			return UserDMResult{Unreachable: "no adapter runs for channel " + clip(channel)}, nil
		}
		channel, handle = u.Kind, u.ID
	}
	cached, err := reg.GetUserDM(ctx, u.ID, channel)
	switch {
	case err == nil:
		mg, err := reg.GetMessagingGroup(ctx, cached.MessagingGroupID)
		switch {
		case err == nil && !(NeedsOpenedDM(channel) && mg.PlatformID == handle):
			return UserDMResult{Chat: &mg}, nil
		case err != nil && ErrorCode(err) != ENOTFOUND:
			return UserDMResult{}, err
		}
		// The cached chat was deleted, or is a guess: resolve again.
	case ErrorCode(err) != ENOTFOUND:
		return UserDMResult{}, err
	}
	platformID, err := dms.OpenDM(ctx, channel, handle)
	switch {
	case err != nil:
		return UserDMResult{Unreachable: "opening the " + channel + " DM failed: " + err.Error()}, nil
	case platformID == "":
		return UserDMResult{Unreachable: "opening the " + channel + " DM gave no chat"}, nil
	}
	mg, err := reg.SaveUserDM(ctx, NewUserDM{UserID: u.ID, ChannelType: channel, PlatformID: platformID, Name: u.DisplayName})
	switch {
	case ErrorCode(err) == EINVALID:
		return UserDMResult{Unreachable: "the " + channel + " DM chat opened is not usable: " + err.Error()}, nil
	case err != nil:
		return UserDMResult{}, err
	}
	return UserDMResult{Chat: &mg}, nil
}
