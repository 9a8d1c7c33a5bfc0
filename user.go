package sessiondb

import (
	"context"
	"strings"
	"time"
)

// User is a person (or bot) on some platform: a row of users. Ids are
// namespaced "<channel>:<handle>" (tg:123, discord:456, phone:+1555…,
// email:a@x.com); Kind is the channel type the user was first seen on.
type User struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	DisplayName string    `json:"display_name,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// NewUser is the input of EnsureUser. An empty Kind is the id's prefix.
type NewUser struct {
	ID          string
	Kind        string
	DisplayName string
}

// Validate checks n: ID namespaced (CheckUserID), Kind a channel type when
// given, DisplayName plain text. The error is invalid and names the field.
func (n NewUser) Validate() error {
	return firstError(
		CheckUserID("id", n.ID),
		unlessEmpty(n.Kind, func() error { return checkChannelType("kind", n.Kind) }),
		checkText("display_name", n.DisplayName, false, MaxNameText),
	)
}

// CheckUserID refuses a user id that is not "<prefix>:<handle>" with both
// parts non-empty, or that is not plain text. The error is invalid and
// names field.
func CheckUserID(field, id string) error {
	if err := checkText(field, id, true, MaxPlatformID); err != nil {
		return err
	}
	prefix, handle, ok := strings.Cut(id, ":")
	if !ok || prefix == "" || handle == "" {
		return Errorf(EINVALID, "%s %q is not namespaced as <channel>:<handle>", field, clip(id))
	}
	return nil
}

// CheckNamedUserID is CheckUserID for an id a person names to create a
// user, grant a role or add a member: one that could never equal a
// sender's id is refused too, naming the id that would. The router forms
// a sender's id as "<channel type>:<handle>" from the event's channel
// type, which is lower case, and NanoClaw compares ids exactly without
// folding case; so a channel part that is a channel type only once white
// space is trimmed and capitals lowered (TELEGRAM:1, " telegram:1") would
// never match anyone. A channel part that is no channel type at all is an
// adapter's own id, used as it is (Teams' 29:…, Matrix's @ann:example.org),
// and left alone. The error is invalid and names field.
func CheckNamedUserID(field, id string) error {
	if err := CheckUserID(field, id); err != nil {
		return err
	}
	prefix, handle, _ := strings.Cut(id, ":")
	channel := strings.ToLower(strings.TrimSpace(prefix))
	if channel != prefix && checkChannelType(field, channel) == nil {
		return Errorf(EINVALID, "%s %q never matches a sender: a sender's id is <channel type>:<handle> with the channel type in lower case, as %q",
			field, clip(id), clip(channel+":"+handle))
	}
	return nil
}

// SenderUserID namespaces a raw platform sender or clicker id (spec A5): an
// id that already contains ':' is used as it is, else it is prefixed with
// "<channelType>:". An empty raw id gives "" (unidentified).
func SenderUserID(channelType, raw string) string {
	if raw == "" {
		return ""
	}
	if strings.Contains(raw, ":") {
		return raw
	}
	return channelType + ":" + raw
}

// Role is a user's standing in the registry.
type Role string

const (
	// RoleOwner is always global; there may be several owners.
	RoleOwner Role = "owner"
	// RoleAdmin is global (no agent group) or scoped to one agent group.
	RoleAdmin Role = "admin"
)

// Validate refuses a word other than owner and admin.
func (r Role) Validate() error { return checkWord("role", r, RoleOwner, RoleAdmin) }

// RoleGrant is one row of user_roles. An empty AgentGroupID is a global
// grant.
type RoleGrant struct {
	UserID       string    `json:"user_id"`
	Role         Role      `json:"role"`
	AgentGroupID string    `json:"agent_group_id,omitempty"`
	GrantedBy    string    `json:"granted_by,omitempty"`
	GrantedAt    time.Time `json:"granted_at"`
}

// Global reports whether the grant holds for every agent group.
func (g RoleGrant) Global() bool { return g.AgentGroupID == "" }

// NewRoleGrant is the input of GrantRole; an empty AgentGroupID grants
// globally.
type NewRoleGrant struct {
	UserID       string `json:"user_id"`
	Role         Role   `json:"role"`
	AgentGroupID string `json:"agent_group_id,omitempty"`
	GrantedBy    string `json:"granted_by,omitempty"`
}

// Validate checks g: a valid user id and role, and no agent group for an
// owner (owner is always global, spec A5). The error is invalid and names
// the field.
func (g NewRoleGrant) Validate() error {
	var scopedOwner error
	if g.Role == RoleOwner && g.AgentGroupID != "" {
		scopedOwner = Errorf(EINVALID, "agent_group_id: the owner role is always global and cannot be scoped to agent group %q", clip(g.AgentGroupID))
	}
	return firstError(
		CheckUserID("user_id", g.UserID),
		g.Role.Validate(),
		scopedOwner,
		checkID("agent_group_id", g.AgentGroupID, false),
		unlessEmpty(g.GrantedBy, func() error { return CheckUserID("granted_by", g.GrantedBy) }),
	)
}

// RoleFilter selects role grants; empty fields do not filter, except that
// GlobalOnly keeps only grants without an agent group.
type RoleFilter struct {
	UserID       string
	Role         Role
	AgentGroupID string
	GlobalOnly   bool
}

// Membership is one row of agent_group_members: the user is known to the
// agent group. A scoped admin is a member without a row.
type Membership struct {
	UserID       string    `json:"user_id"`
	AgentGroupID string    `json:"agent_group_id"`
	AddedBy      string    `json:"added_by,omitempty"`
	AddedAt      time.Time `json:"added_at"`
}

// UserDM caches which chat is a user's direct-message chat on one channel:
// a row of user_dms.
type UserDM struct {
	UserID           string    `json:"user_id"`
	ChannelType      string    `json:"channel_type"`
	MessagingGroupID string    `json:"messaging_group_id"`
	ResolvedAt       time.Time `json:"resolved_at"`
}

// NewUserDM is the input of SaveUserDM: the DM chat found for a user on a
// channel. Name names the chat when it has to be created.
type NewUserDM struct {
	UserID      string
	ChannelType string
	PlatformID  string
	Name        string
}

// Validate checks n's fields; the error is invalid and names the field.
func (n NewUserDM) Validate() error {
	return firstError(
		CheckUserID("user_id", n.UserID),
		checkChannelType("channel_type", n.ChannelType),
		checkText("platform_id", n.PlatformID, true, MaxPlatformID),
		checkText("name", n.Name, false, MaxNameText),
	)
}

// UserService keeps users, their roles and memberships, and the DM cache.
type UserService interface {
	// EnsureUser inserts the user (created_at = now) unless it exists;
	// created says which. An existing user keeps its fields, except that a
	// missing display name is filled from n. The router calls it for
	// every identifiable sender of a wired chat, even one whose message is
	// only kept as context (spec A4).
	EnsureUser(ctx context.Context, n NewUser) (User, bool, error)
	// GetUser returns the user or not_found.
	GetUser(ctx context.Context, id string) (User, error)
	// ListUsers returns every user ordered by id.
	ListUsers(ctx context.Context) ([]User, error)

	// GrantRole records the grant (granted_at = now) unless the same
	// (user, role, agent group) is already granted: idempotent, also for
	// global grants, which SQLite's primary key alone would let repeat.
	// granted says whether a row was added. Validate's refusals are
	// invalid (an owner scoped to a group among them); an unknown user,
	// granter or agent group is not_found.
	GrantRole(ctx context.Context, g NewRoleGrant) (granted bool, err error)
	// RevokeRole removes the grant (user, role, agent group; "" = global)
	// and reports whether there was one.
	RevokeRole(ctx context.Context, userID string, role Role, agentGroupID string) (bool, error)
	// ListRoles returns the grants f selects ordered by granted_at
	// (parsed, so SQL-form and ISO timestamps interleave correctly), then
	// user id.
	ListRoles(ctx context.Context, f RoleFilter) ([]RoleGrant, error)

	// AddMember makes the user a member of the agent group (added_at =
	// now) unless it is one; added says whether a row was added. Unknown
	// user, adder or group: not_found.
	AddMember(ctx context.Context, userID, agentGroupID, addedBy string) (added bool, err error)
	// RemoveMember removes the membership row and reports whether there
	// was one (an admin stays implicitly a member).
	RemoveMember(ctx context.Context, userID, agentGroupID string) (bool, error)
	// ListMembers returns the membership rows of the agent group ordered by
	// added_at, then user id.
	ListMembers(ctx context.Context, agentGroupID string) ([]Membership, error)
	// UserAccess returns everything the access rules read about one user:
	// the user row (nil when unknown, which is not an error), every role
	// grant and every membership, read in one snapshot.
	UserAccess(ctx context.Context, userID string) (UserAccess, error)

	// GetUserDM returns the cached DM chat of the user on the channel, or
	// not_found.
	GetUserDM(ctx context.Context, userID, channelType string) (UserDM, error)
	// SaveUserDM finds or creates the chat (channel, platform id) (mg id
	// generated, name n.Name, not a group, policy strict) and points the
	// user's DM cache for the channel at it (resolved_at = now), in one
	// transaction. Unknown user: not_found.
	SaveUserDM(ctx context.Context, n NewUserDM) (MessagingGroup, error)
}
