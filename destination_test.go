package sessiondb

import (
	"testing"
)

func TestNormalizeDestinationName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Family Chat", "family-chat"},
		{"  --Ops__Room!! ", "ops-room"},
		{"ÜBER café 42", "ber-caf-42"},
		{"!!!", "unnamed"},
		{"", "unnamed"},
		{"a--b", "a-b"},
		{"already-fine", "already-fine"},
	} {
		if got := NormalizeDestinationName(c.in); got != c.want {
			t.Errorf("NormalizeDestinationName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDestinationBaseNameAndSuffix(t *testing.T) {
	if got := DestinationBaseName(MessagingGroup{ID: "mg-1747562400000-abc123", ChannelType: "telegram", Name: "Dev Team"}); got != "dev-team" {
		t.Errorf("named chat: %q", got)
	}
	if got := DestinationBaseName(MessagingGroup{ID: "mg-1747562400000-abc123", ChannelType: "telegram"}); got != "telegram-mg-17475" {
		t.Errorf("unnamed chat: %q, want telegram-mg-17475 (first 8 characters of the id)", got)
	}
	taken := map[string]bool{"dev-team": true, "dev-team-2": true, "dev-team-4": true}
	if got := UniqueLocalName("dev-team", func(n string) bool { return taken[n] }); got != "dev-team-3" {
		t.Errorf("UniqueLocalName = %q, want dev-team-3", got)
	}
	if got := UniqueLocalName("free", func(string) bool { return false }); got != "free" {
		t.Errorf("UniqueLocalName of a free name = %q", got)
	}
}

// TestCheckDelivery holds spec A8's delivery-time rules.
func TestCheckDelivery(t *testing.T) {
	own := &MessagingGroup{ID: "mg-own", ChannelType: "telegram", PlatformID: "100"}
	other := &MessagingGroup{ID: "mg-other", ChannelType: "telegram", PlatformID: "200"}
	dests := []ResolvedDestination{
		{Destination: Destination{LocalName: "other", TargetType: TargetChannel, TargetID: "mg-other"}, Chat: other},
		{Destination: Destination{LocalName: "gone-chat", TargetType: TargetChannel, TargetID: "mg-gone"}},
		{Destination: Destination{LocalName: "helper", TargetType: TargetAgent, TargetID: "ag-helper"}, Agent: &AgentGroup{ID: "ag-helper"}},
		{Destination: Destination{LocalName: "ghost", TargetType: TargetAgent, TargetID: "ag-ghost"}},
	}
	cases := []struct {
		name     string
		chat     *MessagingGroup
		ch, pid  string
		allowed  bool
		reason   DeliveryReason
		destName string
	}{
		{"own chat needs no row", own, "telegram", "100", true, DeliverOwnChat, ""},
		{"another chat with a row", own, "telegram", "200", true, DeliverDestination, "other"},
		{"same platform id on another channel is another chat", own, "discord", "100", false, DeliverNoDest, ""},
		{"a chat without a row", own, "telegram", "300", false, DeliverNoDest, ""},
		{"a session without a chat has no own chat", nil, "telegram", "100", false, DeliverNoDest, ""},
		{"own agent group", own, "agent", "ag-self", true, DeliverOwnGroup, ""},
		{"another agent with a row", own, "agent", "ag-helper", true, DeliverDestination, "helper"},
		{"an agent whose group is gone", own, "agent", "ag-ghost", false, DeliverDangling, "ghost"},
		{"an agent without a row", own, "agent", "ag-stranger", false, DeliverNoDest, ""},
		{"no routing", own, "", "", false, DeliverNoRouting, ""},
		{"no platform id", own, "telegram", "", false, DeliverNoRouting, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := CheckDelivery(DeliveryRequest{AgentGroupID: "ag-self", SessionChat: c.chat, ChannelType: c.ch, PlatformID: c.pid, Destinations: dests})
			if d.Allowed != c.allowed || d.Reason != c.reason || d.Name != c.destName {
				t.Errorf("CheckDelivery = %+v, want allowed=%v reason=%s name=%q", d, c.allowed, c.reason, c.destName)
			}
		})
	}
}
