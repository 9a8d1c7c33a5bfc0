package http

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

// registryAccess is the registry page's part that `sessiondb admin`
// manages besides groups and chats: users, role grants, each agent group's
// members and destinations. Each list holds at most registryPage rows; its
// More counts the rows left out.
type registryAccess struct {
	Users            []sessiondb.User
	Roles            []registryRole
	Members          []registryMember
	Destinations     []registryDestination
	MoreUsers        int
	MoreRoles        int
	MoreMembers      int
	MoreDestinations int
}

// named is a user or agent group id with the name a person reads ("" when
// it has none).
type named struct{ ID, Name string }

// registryRole is a role grant with its user and, for a scoped grant, its
// agent group named.
type registryRole struct {
	sessiondb.RoleGrant
	User, Group named
}

// registryMember is a membership with its user and agent group named.
type registryMember struct {
	sessiondb.Membership
	User, Group named
}

// registryDestination is a destination with its agent group named and its
// target named for people ("" when the target is gone).
type registryDestination struct {
	sessiondb.ResolvedDestination
	Group  named
	Target string
}

// bounded keeps the first registryPage of rows and counts the rest.
func bounded[T any](rows []T) ([]T, int) {
	if len(rows) <= registryPage {
		return rows, 0
	}
	return rows[:registryPage], len(rows) - registryPage
}

// loadRegistryAccess reads the users, role grants, and the members and
// destinations of groups, bounding each list for the page.
func loadRegistryAccess(ctx context.Context, reg sessiondb.Registry, groups []sessiondb.AgentGroup) (registryAccess, error) {
	var a registryAccess
	users, err := reg.ListUsers(ctx)
	if err != nil {
		return a, err
	}
	names := make(map[string]string, len(users))
	for _, u := range users {
		names[u.ID] = u.DisplayName
	}
	groupNames := make(map[string]string, len(groups))
	for _, g := range groups {
		groupNames[g.ID] = g.Name
	}
	a.Users, a.MoreUsers = bounded(users)

	grants, err := reg.ListRoles(ctx, sessiondb.RoleFilter{})
	if err != nil {
		return a, err
	}
	grants, a.MoreRoles = bounded(grants)
	for _, g := range grants {
		a.Roles = append(a.Roles, registryRole{RoleGrant: g, User: named{g.UserID, names[g.UserID]}, Group: named{g.AgentGroupID, groupNames[g.AgentGroupID]}})
	}

	for _, g := range groups {
		ms, err := reg.ListMembers(ctx, g.ID)
		if err != nil {
			return a, err
		}
		for _, m := range ms {
			if len(a.Members) == registryPage {
				a.MoreMembers++
				continue
			}
			a.Members = append(a.Members, registryMember{Membership: m, User: named{m.UserID, names[m.UserID]}, Group: named{g.ID, g.Name}})
		}
		ds, err := reg.ResolveDestinations(ctx, g.ID)
		if err != nil {
			return a, err
		}
		for _, d := range ds {
			if len(a.Destinations) == registryPage {
				a.MoreDestinations++
				continue
			}
			a.Destinations = append(a.Destinations, registryDestination{ResolvedDestination: d, Group: named{g.ID, g.Name}, Target: destinationTarget(d)})
		}
	}
	return a, nil
}

// destinationTarget names a destination's target for people: the chat's
// name, or the agent group's; "" when the target is gone.
func destinationTarget(d sessiondb.ResolvedDestination) string {
	switch {
	case d.Chat != nil:
		return chatName(*d.Chat)
	case d.Agent != nil:
		return d.Agent.Name
	}
	return ""
}

// UserCount is the number of users, shown and left out, for the page's tab.
func (a registryAccess) UserCount() int { return len(a.Users) + a.MoreUsers }

// RoleCount is the number of role grants, shown and left out.
func (a registryAccess) RoleCount() int { return len(a.Roles) + a.MoreRoles }

// MemberCount is the number of memberships, shown and left out.
func (a registryAccess) MemberCount() int { return len(a.Members) + a.MoreMembers }

// DestinationCount is the number of destinations, shown and left out.
func (a registryAccess) DestinationCount() int { return len(a.Destinations) + a.MoreDestinations }
