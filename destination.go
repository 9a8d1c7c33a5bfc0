package sessiondb

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// TargetType is what a destination points at.
type TargetType string

const (
	TargetChannel TargetType = "channel" // a messaging group
	TargetAgent   TargetType = "agent"   // an agent group
)

// Validate refuses a word other than channel and agent.
func (t TargetType) Validate() error { return checkWord("target_type", t, TargetChannel, TargetAgent) }

// Destination is one row of agent_destinations: the agent group may send
// to the target under LocalName. The row's existence is the permission
// (spec A8); names are per source agent group.
type Destination struct {
	AgentGroupID string     `json:"agent_group_id"`
	LocalName    string     `json:"local_name"`
	TargetType   TargetType `json:"target_type"`
	TargetID     string     `json:"target_id"`
	CreatedAt    time.Time  `json:"created_at"`
}

// NewDestination is the input of AddDestination.
type NewDestination struct {
	AgentGroupID string
	LocalName    string
	TargetType   TargetType
	TargetID     string
}

// Validate checks n: ids safe names, the local name plain text without
// spaces at its ends, the target type a known word. The error is invalid
// and names the field.
func (n NewDestination) Validate() error {
	var padded error
	if strings.TrimSpace(n.LocalName) != n.LocalName {
		padded = Errorf(EINVALID, "local_name %q begins or ends with white space", clip(n.LocalName))
	}
	return firstError(
		checkID("agent_group_id", n.AgentGroupID, true),
		checkText("local_name", n.LocalName, true, MaxNameText),
		padded,
		n.TargetType.Validate(),
		checkID("target_id", n.TargetID, true),
	)
}

// NormalizeDestinationName turns a chat name into a local name (spec A8):
// lowercase, every run of characters outside [a-z0-9] becomes '-', '-'
// trimmed from both ends; nothing left gives "unnamed".
func NormalizeDestinationName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "unnamed"
	}
	return b.String()
}

// DestinationBaseName is the local name a wiring's channel destination
// starts from: the chat's normalized name, or "<channel type>-<first 8
// characters of the chat id>" normalized when it has none.
func DestinationBaseName(chat MessagingGroup) string {
	if chat.Name != "" {
		return NormalizeDestinationName(chat.Name)
	}
	id := chat.ID
	if len(id) > 8 {
		id = id[:8]
	}
	return NormalizeDestinationName(chat.ChannelType + "-" + id)
}

// UniqueLocalName returns base, or base-2, base-3, … the first that taken
// does not hold.
func UniqueLocalName(base string, taken func(string) bool) string {
	name := base
	for n := 2; taken(name); n++ {
		name = base + "-" + strconv.Itoa(n)
	}
	return name
}

// DestinationService keeps the destinations ACL.
type DestinationService interface {
	// AddDestination inserts the row (created_at = now). A taken (agent
	// group, local name) is a conflict; an unknown agent group or target
	// is not_found. The caller re-projects the group's destinations into
	// its active sessions.
	AddDestination(ctx context.Context, n NewDestination) (Destination, error)
	// RemoveDestination deletes (agent group, local name); unknown:
	// not_found.
	RemoveDestination(ctx context.Context, agentGroupID, localName string) error
	// ListDestinations returns the group's rows ordered by local name.
	ListDestinations(ctx context.Context, agentGroupID string) ([]Destination, error)
	// ResolveDestinations returns the group's rows with their targets
	// looked up, in one snapshot, ordered by local name: what a session's
	// destinations projection and the delivery check read. Rows whose
	// target is gone are returned with a nil target.
	ResolveDestinations(ctx context.Context, agentGroupID string) ([]ResolvedDestination, error)
}

// ResolvedDestination is a destination with its target row: Chat for a
// channel target, Agent for an agent target; both nil when the target no
// longer exists (dangling).
type ResolvedDestination struct {
	Destination
	Chat  *MessagingGroup `json:"chat,omitempty"`
	Agent *AgentGroup     `json:"agent,omitempty"`
}

// Dangling reports a destination whose target is gone: skipped in
// projections, refused at delivery.
func (d ResolvedDestination) Dangling() bool { return d.Chat == nil && d.Agent == nil }

// DeliveryReason says why CheckDelivery allowed or refused a send.
type DeliveryReason string

const (
	DeliverOwnChat     DeliveryReason = "own_chat"       // allowed: the session's own chat
	DeliverOwnGroup    DeliveryReason = "own_group"      // allowed: the sender's own agent group
	DeliverDestination DeliveryReason = "destination"    // allowed: a destination row
	DeliverNoRouting   DeliveryReason = "no_routing"     // refused: no channel type or platform id
	DeliverNoDest      DeliveryReason = "no_destination" // refused: no row for the target
	DeliverDangling    DeliveryReason = "dangling"       // refused: the row's target is gone
)

// DeliveryRequest is one outbound send to check (spec A8).
type DeliveryRequest struct {
	// AgentGroupID is the sending session's agent group.
	AgentGroupID string
	// SessionChat is the sending session's own chat; nil when it has none.
	SessionChat *MessagingGroup
	// ChannelType and PlatformID are the send's routing; channel type
	// "agent" sends to the agent group PlatformID.
	ChannelType, PlatformID string
	// Destinations are the sending group's rows with their targets.
	Destinations []ResolvedDestination
}

// DeliveryDecision is CheckDelivery's verdict; Name is the destination
// that allowed the send, when one did.
type DeliveryDecision struct {
	Allowed bool           `json:"allowed"`
	Reason  DeliveryReason `json:"reason"`
	Name    string         `json:"name,omitempty"`
}

// ChannelAgentType is the channel type of agent-to-agent sends.
const ChannelAgentType = "agent"

// CheckDelivery decides whether a session may send where r says (spec
// A8): its own chat always; another agent group needs an ('agent', id)
// destination unless it is the sender's own group; another chat needs a
// ('channel', chat id) destination whose chat still exists. An agent
// destination whose group is gone refuses (dangling), and so does a send
// without routing.
func CheckDelivery(r DeliveryRequest) DeliveryDecision {
	if r.ChannelType == "" || r.PlatformID == "" {
		return DeliveryDecision{Reason: DeliverNoRouting}
	}
	if r.ChannelType == ChannelAgentType {
		if r.PlatformID == r.AgentGroupID {
			return DeliveryDecision{Allowed: true, Reason: DeliverOwnGroup}
		}
		for _, d := range r.Destinations {
			if d.TargetType == TargetAgent && d.TargetID == r.PlatformID {
				if d.Agent == nil {
					return DeliveryDecision{Reason: DeliverDangling, Name: d.LocalName}
				}
				return DeliveryDecision{Allowed: true, Reason: DeliverDestination, Name: d.LocalName}
			}
		}
		return DeliveryDecision{Reason: DeliverNoDest}
	}
	if c := r.SessionChat; c != nil && c.ChannelType == r.ChannelType && c.PlatformID == r.PlatformID {
		return DeliveryDecision{Allowed: true, Reason: DeliverOwnChat}
	}
	for _, d := range r.Destinations {
		if d.TargetType == TargetChannel && d.Chat != nil && d.Chat.ChannelType == r.ChannelType && d.Chat.PlatformID == r.PlatformID {
			return DeliveryDecision{Allowed: true, Reason: DeliverDestination, Name: d.LocalName}
		}
	}
	return DeliveryDecision{Reason: DeliverNoDest}
}
