package sessiondb

import "sort"

// UserAccess is everything the access rules read about one user: the user
// row (nil when the registry does not know the id), their role grants and
// their memberships. UserService.UserAccess reads it; the decisions below
// are pure functions of it.
type UserAccess struct {
	UserID      string       `json:"user_id"`
	User        *User        `json:"user,omitempty"`
	Roles       []RoleGrant  `json:"roles,omitempty"`
	Memberships []Membership `json:"memberships,omitempty"`
}

// Known reports whether the registry has a row for the user.
func (u UserAccess) Known() bool { return u.User != nil }

// IsOwner reports a global owner grant. A scoped owner row (only raw SQL
// can make one) counts for nothing, as in NanoClaw.
func (u UserAccess) IsOwner() bool { return u.has(RoleOwner, "", true) }

// IsGlobalAdmin reports a global admin grant.
func (u UserAccess) IsGlobalAdmin() bool { return u.has(RoleAdmin, "", true) }

// IsAdminOf reports an admin grant scoped to agentGroupID.
func (u UserAccess) IsAdminOf(agentGroupID string) bool {
	return agentGroupID != "" && u.has(RoleAdmin, agentGroupID, false)
}

// IsMemberRow reports a membership row for agentGroupID (not the implicit
// membership of admins; see IsMember).
func (u UserAccess) IsMemberRow(agentGroupID string) bool {
	for _, m := range u.Memberships {
		if m.AgentGroupID == agentGroupID {
			return true
		}
	}
	return false
}

// IsMember reports whether the user counts as a member of agentGroupID: a
// membership row, or admin privilege over it (owners and admins are
// members without a row).
func (u UserAccess) IsMember(agentGroupID string) bool {
	return u.Known() && (u.IsMemberRow(agentGroupID) || HasAdminPrivilege(u, agentGroupID))
}

func (u UserAccess) has(role Role, agentGroupID string, global bool) bool {
	for _, g := range u.Roles {
		if g.Role == role && g.Global() == global && g.AgentGroupID == agentGroupID {
			return true
		}
	}
	return false
}

// AccessReason says why CanAccessAgentGroup allowed or denied.
type AccessReason string

// The reasons of spec A5, in the order CanAccessAgentGroup checks them.
const (
	AccessUnknownUser  AccessReason = "unknown_user"   // denied: no users row
	AccessOwner        AccessReason = "owner"          // allowed
	AccessGlobalAdmin  AccessReason = "global_admin"   // allowed
	AccessAdminOfGroup AccessReason = "admin_of_group" // allowed
	AccessMember       AccessReason = "member"         // allowed
	AccessNotMember    AccessReason = "not_member"     // denied
)

// AccessDecision is the outcome of an access check.
type AccessDecision struct {
	Allowed bool         `json:"allowed"`
	Reason  AccessReason `json:"reason"`
}

// CanAccessAgentGroup decides whether the user may talk to the agent
// group, checking in order (spec A5): unknown user → deny unknown_user;
// owner; global admin; admin of the group; member row; else deny
// not_member.
func CanAccessAgentGroup(u UserAccess, agentGroupID string) AccessDecision {
	switch {
	case !u.Known():
		return AccessDecision{false, AccessUnknownUser}
	case u.IsOwner():
		return AccessDecision{true, AccessOwner}
	case u.IsGlobalAdmin():
		return AccessDecision{true, AccessGlobalAdmin}
	case u.IsAdminOf(agentGroupID):
		return AccessDecision{true, AccessAdminOfGroup}
	case u.IsMemberRow(agentGroupID):
		return AccessDecision{true, AccessMember}
	}
	return AccessDecision{false, AccessNotMember}
}

// HasAdminPrivilege reports owner ∨ global admin ∨ admin of the group: who
// may approve for it. An unknown user has none.
func HasAdminPrivilege(u UserAccess, agentGroupID string) bool {
	return u.Known() && (u.IsOwner() || u.IsGlobalAdmin() || u.IsAdminOf(agentGroupID))
}

// DropReason is why a message reached no agent (spec A9); it is the reason
// column of the dropped-message audit.
type DropReason string

const (
	DropNoAgentWired                DropReason = "no_agent_wired"
	DropNoAgentEngaged              DropReason = "no_agent_engaged"
	DropUnknownSenderStrict         DropReason = "unknown_sender_strict"
	DropUnknownSenderRequestApprove DropReason = "unknown_sender_request_approval"
)

// GateDecision is the outcome of the access gate or the sender-scope gate
// for one wiring.
type GateDecision struct {
	Allowed bool `json:"allowed"`
	// Reason is the access reason ("public" when the policy let everyone
	// in), or for the scope gate "unknown_user_scope" or
	// "sender_scope_<access reason>" when it refused.
	Reason string `json:"reason"`
	// Drop is the audit reason when the access gate refused; empty when
	// allowed and for the scope gate, which records no drop.
	Drop DropReason `json:"drop,omitempty"`
	// RequestApproval says the chat asks an approver about this sender
	// (policy request_approval and the sender has a user id, spec A7.3).
	RequestApproval bool `json:"request_approval,omitempty"`
}

// AccessGate decides whether a sender gets through the chat's unknown
// sender policy to the agent group (spec A5): public lets everyone in;
// otherwise the sender needs CanAccessAgentGroup, and a refusal drops with
// unknown_sender_<policy> (a word other than the three policies is read as
// strict), asking for approval under request_approval when the sender has
// a user id. u.UserID empty means the sender could not be identified.
func AccessGate(policy UnknownSenderPolicy, u UserAccess, agentGroupID string) GateDecision {
	if policy == PolicyPublic {
		return GateDecision{Allowed: true, Reason: "public"}
	}
	d := CanAccessAgentGroup(u, agentGroupID)
	if d.Allowed {
		return GateDecision{Allowed: true, Reason: string(d.Reason)}
	}
	g := GateDecision{Reason: string(d.Reason), Drop: DropUnknownSenderStrict}
	if policy == PolicyRequestApproval {
		g.Drop = DropUnknownSenderRequestApprove
		g.RequestApproval = u.UserID != ""
	}
	return g
}

// SenderScopeGate applies a wiring's sender scope (spec A5): all lets the
// gate's verdict stand; known needs an identified user
// (unknown_user_scope) who passes CanAccessAgentGroup
// (sender_scope_<reason>). It records no drop of its own.
func SenderScopeGate(scope SenderScope, u UserAccess, agentGroupID string) GateDecision {
	if scope != ScopeKnown {
		return GateDecision{Allowed: true, Reason: string(ScopeAll)}
	}
	if u.UserID == "" {
		return GateDecision{Reason: "unknown_user_scope"}
	}
	d := CanAccessAgentGroup(u, agentGroupID)
	if !d.Allowed {
		return GateDecision{Reason: "sender_scope_" + string(d.Reason)}
	}
	return GateDecision{Allowed: true, Reason: string(d.Reason)}
}

// Approvers returns who may approve requests for agentGroupID, in the
// order approval cards go out (spec A7.2): admins of the group, then
// global admins, then owners, each by granted_at (parsed time; equal times
// keep the order given), without repeats. An empty agentGroupID skips the
// first tier. grants may hold every grant of the registry.
func Approvers(grants []RoleGrant, agentGroupID string) []string {
	tier := func(keep func(RoleGrant) bool) []RoleGrant {
		var out []RoleGrant
		for _, g := range grants {
			if keep(g) {
				out = append(out, g)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].GrantedAt.Before(out[j].GrantedAt) })
		return out
	}
	var ordered []RoleGrant
	if agentGroupID != "" {
		ordered = tier(func(g RoleGrant) bool { return g.Role == RoleAdmin && g.AgentGroupID == agentGroupID })
	}
	ordered = append(ordered, tier(func(g RoleGrant) bool { return g.Role == RoleAdmin && g.Global() })...)
	ordered = append(ordered, tier(func(g RoleGrant) bool { return g.Role == RoleOwner && g.Global() })...)
	seen := map[string]bool{}
	var out []string
	for _, g := range ordered {
		if !seen[g.UserID] {
			seen[g.UserID] = true
			out = append(out, g.UserID)
		}
	}
	return out
}

// ApprovalDeliveryOrder is the order in which to try approvers' DMs (spec
// A7.2): first those whose user id prefix (the text before the first ':')
// equals the channel type the request came from, then the others, each
// group in approver order. The router sends the card to the first whose DM
// resolves (EnsureUserDM).
func ApprovalDeliveryOrder(approvers []string, originChannelType string) []string {
	var same, rest []string
	for _, a := range approvers {
		if originChannelType != "" && userIDPrefix(a) == originChannelType {
			same = append(same, a)
		} else {
			rest = append(rest, a)
		}
	}
	return append(same, rest...)
}

func userIDPrefix(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == ':' {
			return id[:i]
		}
	}
	return ""
}
