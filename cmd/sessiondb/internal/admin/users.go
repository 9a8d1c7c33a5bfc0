package admin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (a *group) usersCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "users",
		Short: "Users: list, create, show",
		Long: `Users are people (or bots) on a platform, named <channel>:<handle>
(telegram:42, discord:456, email:a@x.com). The router records every sender of a
wired chat; roles and memberships decide who may talk to which agent.

A sender's id is the chat's channel type, in lower case, a colon and the
platform's handle (or the platform's own id when it holds a colon), and ids
are compared exactly: a user named with the channel type in capitals or
with spaces (TELEGRAM:1) would never match anyone, so create, grant and
members add refuse it, naming the id that would match (telegram:1).`,
	}, a.usersListCmd(), a.usersCreateCmd(), a.usersShowCmd())
}

var userColumns = cli.Columns[sessiondb.User]{
	Header: []string{"ID", "KIND", "NAME", "CREATED"},
	Cells: func(u sessiondb.User) []string {
		return []string{u.ID, u.Kind, cli.OrDash(u.DisplayName), when(u.CreatedAt)}
	},
}

func (a *group) usersListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List users by id",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.User, error) {
				return reg.ListUsers(ctx)
			}, userColumns)
		},
	}
}

func (a *group) usersCreateCmd() *cobra.Command {
	var n sessiondb.NewUser
	c := &cobra.Command{
		Use:     "create ID [--name N] [--kind CHANNEL]",
		Short:   "Add a user (kept as it is when it exists; the registry file is created when missing)",
		Example: "  sessiondb admin users create telegram:42 --name Ann",
		Args:    cli.ExactArgs(1, "one user id, <channel>:<handle>"),
		RunE: func(c *cobra.Command, args []string) error {
			n.ID = args[0]
			if err := sessiondb.CheckNamedUserID("user", n.ID); err != nil {
				return err
			}
			if err := n.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.CreateStore, func(ctx context.Context, reg sessiondb.Registry) error {
				u, created, err := reg.EnsureUser(ctx, n)
				if err != nil {
					return err
				}
				verb := "created"
				if !created {
					verb = "kept existing"
				}
				return a.done(map[string]any{"user": u, "created": created}, "%s user %s", verb, u.ID)
			})
		},
	}
	c.Flags().StringVar(&n.DisplayName, "name", "", "display name")
	c.Flags().StringVar(&n.Kind, "kind", "", "the channel type the user is on (default the id's prefix)")
	return c
}

func (a *group) usersShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a user with their roles and memberships",
		Args:  cli.ExactArgs(1, "one user id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				acc, err := reg.UserAccess(ctx, args[0])
				if err != nil {
					return err
				}
				if !acc.Known() {
					return sessiondb.NotFound("user", args[0])
				}
				if a.JSON {
					return a.PrintJSON(acc)
				}
				u := acc.User
				_ = cli.WriteFields(a.Out, [][2]string{{"id", u.ID}, {"kind", u.Kind}, {"name", u.DisplayName}, {"created", when(u.CreatedAt)}})
				fmt.Fprintf(a.Out, "\nroles (%d):\n", len(acc.Roles))
				_ = roleColumns.Write(a.Out, acc.Roles)
				fmt.Fprintf(a.Out, "\nmember of (%d):\n", len(acc.Memberships))
				_ = memberColumns.Write(a.Out, acc.Memberships)
				return nil
			})
		},
	}
}

func (a *group) rolesCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "roles",
		Short: "Roles: list, grant, revoke (owner is global; admin global or of one agent group)",
		Long: `Owners and admins approve unknown senders, unknown chats and agents'
requests, and may talk to every agent (admins: to the agents they administer).
Owner is always global: granting it for one agent group is refused. Granting
twice is a no-op.`,
	}, a.rolesListCmd(), a.rolesGrantCmd(), a.rolesRevokeCmd())
}

func (a *group) rolesListCmd() *cobra.Command {
	var f sessiondb.RoleFilter
	c := &cobra.Command{
		Use:   "list [--user ID] [--role R] [--group ID | --global]",
		Short: "List role grants by the time they were granted",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if f.Role != "" {
				if err := checkWord("role", f.Role.Validate()); err != nil {
					return err
				}
			}
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.RoleGrant, error) {
				return reg.ListRoles(ctx, f)
			}, roleColumns)
		},
	}
	c.Flags().StringVar(&f.UserID, "user", "", "only this user's grants")
	c.Flags().StringVar((*string)(&f.Role), "role", "", "only grants of this role: owner|admin")
	c.Flags().StringVar(&f.AgentGroupID, "group", "", "only grants scoped to this agent group")
	c.Flags().BoolVar(&f.GlobalOnly, "global", false, "only global grants")
	return c
}

var roleColumns = cli.Columns[sessiondb.RoleGrant]{
	Header: []string{"USER", "ROLE", "SCOPE", "GRANTED BY", "GRANTED"},
	Cells: func(g sessiondb.RoleGrant) []string {
		scope := "global"
		if !g.Global() {
			scope = g.AgentGroupID
		}
		return []string{g.UserID, string(g.Role), scope, cli.OrDash(g.GrantedBy), when(g.GrantedAt)}
	},
}

func (a *group) rolesGrantCmd() *cobra.Command {
	var g sessiondb.NewRoleGrant
	c := &cobra.Command{
		Use:     "grant USER ROLE [--group ID] [--by USER]",
		Short:   "Grant owner or admin (global, or admin of one agent group); the user is created when unknown",
		Example: "  sessiondb admin roles grant telegram:42 owner\n  sessiondb admin roles grant telegram:7 admin --group ag-helper",
		Args:    cli.ExactArgs(2, "a user id and a role (owner or admin)"),
		RunE: func(c *cobra.Command, args []string) error {
			g.UserID, g.Role = args[0], sessiondb.Role(args[1])
			if err := sessiondb.CheckNamedUserID("user", g.UserID); err != nil {
				return err
			}
			if err := g.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if _, _, err := reg.EnsureUser(ctx, sessiondb.NewUser{ID: g.UserID}); err != nil {
					return err
				}
				granted, err := reg.GrantRole(ctx, g)
				if err != nil {
					return err
				}
				scope := "globally"
				if g.AgentGroupID != "" {
					scope = "for agent group " + g.AgentGroupID
				}
				verb := "granted"
				if !granted {
					verb = "already had"
				}
				return a.done(map[string]any{"grant": g, "granted": granted}, "%s: %s %s %s", g.UserID, verb, g.Role, scope)
			})
		},
	}
	c.Flags().StringVar(&g.AgentGroupID, "group", "", "scope an admin grant to this agent group")
	c.Flags().StringVar(&g.GrantedBy, "by", "", "the user granting it, for the record")
	return c
}

func (a *group) rolesRevokeCmd() *cobra.Command {
	var (
		ag  string
		yes bool
	)
	c := &cobra.Command{
		Use:   "revoke USER ROLE [--group ID] [--yes]",
		Short: "Revoke a role grant (global unless --group)",
		Args:  cli.ExactArgs(2, "a user id and a role (owner or admin)"),
		RunE: func(c *cobra.Command, args []string) error {
			role := sessiondb.Role(args[1])
			if err := role.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if err := a.Confirm(yes, nil, fmt.Sprintf("Revoke %s from %s?", role, args[0])); err != nil {
					return err
				}
				ok, err := reg.RevokeRole(ctx, args[0], role, ag)
				if err != nil {
					return err
				}
				if !ok {
					return sessiondb.Errorf(sessiondb.ENOTFOUND, "%s has no such %s grant", args[0], role)
				}
				return a.done(map[string]any{"revoked": true, "user_id": args[0], "role": role, "agent_group_id": ag}, "revoked %s from %s", role, args[0])
			})
		},
	}
	c.Flags().StringVar(&ag, "group", "", "the agent group of a scoped admin grant")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) membersCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "members",
		Short: "Members of an agent group: list, add, remove",
		Long: `A member may talk to the agent group in chats that are not public (and
through wirings whose sender scope is known). Admins and owners count as
members without a row.`,
	}, a.membersListCmd(), a.membersAddCmd(), a.membersRemoveCmd())
}

func (a *group) membersListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list AGENT_GROUP",
		Short: "List an agent group's members",
		Args:  cli.ExactArgs(1, "one agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, ofGroup(args[0], sessiondb.Registry.ListMembers), memberColumns)
		},
	}
}

var memberColumns = cli.Columns[sessiondb.Membership]{
	Header: []string{"USER", "AGENT GROUP", "ADDED BY", "ADDED"},
	Cells: func(m sessiondb.Membership) []string {
		return []string{m.UserID, m.AgentGroupID, cli.OrDash(m.AddedBy), when(m.AddedAt)}
	},
}

func (a *group) membersAddCmd() *cobra.Command {
	var by string
	c := &cobra.Command{
		Use:     "add AGENT_GROUP USER [--by USER]",
		Short:   "Make a user a member of an agent group (the user is created when unknown)",
		Example: "  sessiondb admin members add ag-helper telegram:42",
		Args:    cli.ExactArgs(2, "an agent group id and a user id"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := sessiondb.CheckNamedUserID("user", args[1]); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if _, err := reg.GetAgentGroup(ctx, args[0]); err != nil {
					return err
				}
				if _, _, err := reg.EnsureUser(ctx, sessiondb.NewUser{ID: args[1]}); err != nil {
					return err
				}
				added, err := reg.AddMember(ctx, args[1], args[0], by)
				if err != nil {
					return err
				}
				verb := "added"
				if !added {
					verb = "already a member:"
				}
				return a.done(map[string]any{"user_id": args[1], "agent_group_id": args[0], "added": added}, "%s %s to %s", verb, args[1], args[0])
			})
		},
	}
	c.Flags().StringVar(&by, "by", "", "the user adding them, for the record")
	return c
}

func (a *group) membersRemoveCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "remove AGENT_GROUP USER [--yes]",
		Short: "Remove a user's membership (an admin stays implicitly a member)",
		Args:  cli.ExactArgs(2, "an agent group id and a user id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if err := a.Confirm(yes, nil, fmt.Sprintf("Remove %s from agent group %s?", args[1], args[0])); err != nil {
					return err
				}
				ok, err := reg.RemoveMember(ctx, args[1], args[0])
				if err != nil {
					return err
				}
				if !ok {
					return sessiondb.Errorf(sessiondb.ENOTFOUND, "%s is not a member of %s", args[1], args[0])
				}
				return a.done(map[string]any{"removed": true, "user_id": args[1], "agent_group_id": args[0]}, "removed %s from %s", args[1], args[0])
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}
