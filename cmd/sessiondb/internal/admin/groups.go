package admin

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (a *group) groupsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "groups",
		Short: "Agent groups: list, create, show, update, delete",
		Long: `An agent group is one agent: its folder, its sessions, the chats it answers
(wirings) and where it may send (destinations).`,
	}, a.groupsListCmd(), a.groupsCreateCmd(), a.groupsShowCmd(), a.groupsUpdateCmd(), a.groupsDeleteCmd())
}

var groupColumns = cli.Columns[sessiondb.AgentGroup]{
	Header: []string{"ID", "NAME", "FOLDER", "PROVIDER", "CREATED"},
	Cells: func(g sessiondb.AgentGroup) []string {
		return []string{g.ID, g.Name, g.Folder, cli.OrDash(g.AgentProvider), when(g.CreatedAt)}
	},
}

func (a *group) groupsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the agent groups by name",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.AgentGroup, error) {
				return reg.ListAgentGroups(ctx)
			}, groupColumns)
		},
	}
}

func (a *group) groupsCreateCmd() *cobra.Command {
	var n sessiondb.NewAgentGroup
	c := &cobra.Command{
		Use:   "create NAME [--id ID] [--folder F] [--provider P]",
		Short: "Create an agent group (the registry file is created when missing)",
		Long: `create adds an agent group. Its id names its sessions' folder under --data
(<data>/<id>/<session>) and its folder names its own directory, so both must be
safe names (no '/', no control characters, not . or ..). The id defaults to
ag-<ms>-<random>, the folder to the id.`,
		Example: `  sessiondb admin groups create "Helper" --id ag-helper`,
		Args:    cli.ExactArgs(1, "the group's name"),
		RunE: func(c *cobra.Command, args []string) error {
			n.Name = args[0]
			if n.ID == "" {
				n.ID = sessiondb.NewID("ag", a.Now())
			}
			if n.Folder == "" {
				n.Folder = n.ID
			}
			if err := n.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.CreateStore, func(ctx context.Context, reg sessiondb.Registry) error {
				g, err := reg.CreateAgentGroup(ctx, n)
				if err != nil {
					return err
				}
				return a.done(g, "created agent group %s (%s)", g.ID, g.Name)
			})
		},
	}
	c.Flags().StringVar(&n.ID, "id", "", "the group's id (default ag-<ms>-<random>)")
	c.Flags().StringVar(&n.Folder, "folder", "", "the group's folder name (default its id)")
	c.Flags().StringVar(&n.AgentProvider, "provider", "", "the agent provider (claude, codex, ...)")
	return c
}

func (a *group) groupsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show an agent group with its wirings, destinations and admins",
		Args:  cli.ExactArgs(1, "one agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				g, err := reg.GetAgentGroup(ctx, args[0])
				if err != nil {
					return err
				}
				ws, err := reg.ListWirings(ctx, sessiondb.WiringFilter{AgentGroupID: g.ID})
				if err != nil {
					return err
				}
				ds, err := reg.ListDestinations(ctx, g.ID)
				if err != nil {
					return err
				}
				grants, err := reg.ListRoles(ctx, sessiondb.RoleFilter{})
				if err != nil {
					return err
				}
				approvers := sessiondb.Approvers(grants, g.ID)
				if a.JSON {
					return a.PrintJSON(map[string]any{"group": g, "wirings": sessiondb.NonNil(ws), "destinations": sessiondb.NonNil(ds), "approvers": sessiondb.NonNil(approvers)})
				}
				_ = cli.WriteFields(a.Out, [][2]string{{"id", g.ID}, {"name", g.Name}, {"folder", g.Folder}, {"provider", g.AgentProvider}, {"created", when(g.CreatedAt)}})
				fmt.Fprintf(a.Out, "\nwirings (%d):\n", len(ws))
				_ = wiringColumns.Write(a.Out, ws)
				fmt.Fprintf(a.Out, "\ndestinations (%d):\n", len(ds))
				_ = destinationColumns.Write(a.Out, ds)
				fmt.Fprintf(a.Out, "\napprovers, in the order cards go out (%d):\n", len(approvers))
				for _, u := range approvers {
					fmt.Fprintln(a.Out, "  "+cli.PrintableLine(u))
				}
				return nil
			})
		},
	}
}

func (a *group) groupsUpdateCmd() *cobra.Command {
	var name, provider string
	c := &cobra.Command{
		Use:   "update ID [--name N] [--provider P]",
		Short: "Rename an agent group or change its provider",
		Args:  cli.ExactArgs(1, "one agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			var u sessiondb.AgentGroupUpdate
			if c.Flags().Changed("name") {
				u.Name = &name
			}
			if c.Flags().Changed("provider") {
				u.AgentProvider = &provider
			}
			if u.Name == nil && u.AgentProvider == nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "nothing to change: give --name or --provider")
			}
			if err := u.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				g, err := reg.UpdateAgentGroup(ctx, args[0], u)
				if err != nil {
					return err
				}
				return a.updated(ctx, reg, agentTarget, g.ID, g, u.Name != nil)
			})
		},
	}
	c.Flags().StringVar(&name, "name", "", "new name")
	c.Flags().StringVar(&provider, "provider", "", "new agent provider (\"\" clears it)")
	return c
}

func (a *group) groupsDeleteCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "delete ID [--yes]",
		Short: "Delete an agent group that has no sessions, with its wirings, destinations, roles and members",
		Long: `delete removes an agent group and everything that only configures it: its
wirings, its destinations and those naming it, role grants scoped to it, its
members, its container config and its pending approvals. A group that still
has sessions is refused (conflict): sessions hold conversations. Asks first on
a terminal.`,
		Args: cli.ExactArgs(1, "one agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				g, err := reg.GetAgentGroup(ctx, args[0])
				if err != nil {
					return err
				}
				ws, err := reg.ListWirings(ctx, sessiondb.WiringFilter{AgentGroupID: g.ID})
				if err != nil {
					return err
				}
				show := func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "agent group %s %q with %d wiring(s)\n", g.ID, g.Name, len(ws))
					return err
				}
				return a.deleteConfirmed(ctx, reg, agentTarget, g.ID, reg.DeleteAgentGroup, yes, show, fmt.Sprintf("Delete agent group %s and its configuration?", g.ID))
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) channelsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "channels",
		Short: "Chats (messaging groups): list, create, show, update, delete",
		Long: `A chat is one conversation on one platform, named by its channel type and
the platform's id for it (unique together). Its unknown-sender policy decides
what happens to people the registry does not know: strict drops them, public
lets everyone in, request_approval drops the message and asks an admin.`,
	}, a.channelsListCmd(), a.channelsCreateCmd(), a.channelsShowCmd(), a.channelsUpdateCmd(), a.channelsDeleteCmd())
}

var chatColumns = cli.Columns[sessiondb.MessagingGroup]{
	Header: []string{"ID", "CHANNEL", "PLATFORM ID", "NAME", "GROUP CHAT", "POLICY", "DENIED"},
	Cells: func(m sessiondb.MessagingGroup) []string {
		return []string{m.ID, m.ChannelType, m.PlatformID, cli.OrDash(m.Name), yesNo(m.IsGroup), string(m.UnknownSenderPolicy), when(m.DeniedAt)}
	},
}

func (a *group) channelsListCmd() *cobra.Command {
	var channelType string
	c := &cobra.Command{
		Use:   "list [--channel-type T]",
		Short: "List the chats",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.MessagingGroup, error) {
				return reg.ListMessagingGroups(ctx, sessiondb.MessagingGroupFilter{ChannelType: channelType})
			}, chatColumns)
		},
	}
	c.Flags().StringVar(&channelType, "channel-type", "", "only chats of this channel type")
	return c
}

func (a *group) channelsCreateCmd() *cobra.Command {
	var n sessiondb.NewMessagingGroup
	c := &cobra.Command{
		Use:   "create CHANNEL_TYPE PLATFORM_ID [--name N] [--group-chat] [--policy P]",
		Short: "Register a chat (the registry file is created when missing)",
		Long: `create registers a chat by its channel type and the platform's id for it.
A platform id that starts with '-' (Telegram's group chats) goes after --, so
it is not read as a flag.`,
		Example: `  sessiondb admin channels create telegram --name "Team room" --group-chat --policy public -- -100123
  sessiondb admin channels create telegram 42 --name "Ann (DM)"`,
		Args: cli.ExactArgs(2, "the channel type and the platform's id of the chat"),
		RunE: func(c *cobra.Command, args []string) error {
			n.ChannelType, n.PlatformID = args[0], args[1]
			if err := n.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.CreateStore, func(ctx context.Context, reg sessiondb.Registry) error {
				m, err := reg.CreateMessagingGroup(ctx, n)
				if err != nil {
					return err
				}
				return a.done(m, "created chat %s (%s %s)", m.ID, m.ChannelType, m.PlatformID)
			})
		},
	}
	c.Flags().StringVar(&n.ID, "id", "", "the chat's id (default mg-<ms>-<random>)")
	c.Flags().StringVar(&n.Name, "name", "", "the chat's name (destinations are named after it)")
	c.Flags().BoolVar(&n.IsGroup, "group-chat", false, "a group chat (more than two people), not a DM")
	c.Flags().StringVar((*string)(&n.UnknownSenderPolicy), "policy", "", "unknown-sender policy: "+words(sessiondb.PolicyStrict, sessiondb.PolicyRequestApproval, sessiondb.PolicyPublic)+" (default strict)")
	return c
}

func (a *group) channelsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a chat with its wirings",
		Args:  cli.ExactArgs(1, "one chat id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
				m, err := reg.GetMessagingGroup(ctx, args[0])
				if err != nil {
					return err
				}
				ws, err := reg.ListWirings(ctx, sessiondb.WiringFilter{MessagingGroupID: m.ID})
				if err != nil {
					return err
				}
				if a.JSON {
					return a.PrintJSON(map[string]any{"chat": m, "wirings": sessiondb.NonNil(ws)})
				}
				_ = cli.WriteFields(a.Out, [][2]string{{"id", m.ID}, {"channel", m.ChannelType}, {"platform id", m.PlatformID}, {"name", m.Name},
					{"group chat", yesNo(m.IsGroup)}, {"policy", string(m.UnknownSenderPolicy)}, {"created", when(m.CreatedAt)}, {"denied", whenSet(m.DeniedAt)}})
				fmt.Fprintf(a.Out, "\nwirings, in the order they are evaluated (%d):\n", len(ws))
				_ = wiringColumns.Write(a.Out, ws)
				return nil
			})
		},
	}
}

func (a *group) channelsUpdateCmd() *cobra.Command {
	var (
		name, policy       string
		isGroup, denied    bool
		u                  sessiondb.MessagingGroupUpdate
		changedName, anyOf bool
	)
	c := &cobra.Command{
		Use:   "update ID [--name N] [--policy P] [--group-chat=true|false] [--denied=true|false]",
		Short: "Change a chat's name, policy, kind or denial",
		Args:  cli.ExactArgs(1, "one chat id"),
		RunE: func(c *cobra.Command, args []string) error {
			fl := c.Flags()
			if fl.Changed("name") {
				u.Name, changedName, anyOf = &name, true, true
			}
			if fl.Changed("policy") {
				p := sessiondb.UnknownSenderPolicy(policy)
				u.UnknownSenderPolicy, anyOf = &p, true
			}
			if fl.Changed("group-chat") {
				u.IsGroup, anyOf = &isGroup, true
			}
			if fl.Changed("denied") {
				u.Denied, anyOf = &denied, true
			}
			if !anyOf {
				return sessiondb.Errorf(sessiondb.EINVALID, "nothing to change: give --name, --policy, --group-chat or --denied")
			}
			if err := u.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				m, err := reg.UpdateMessagingGroup(ctx, args[0], u)
				if err != nil {
					return err
				}
				return a.updated(ctx, reg, chatTarget, m.ID, m, changedName)
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&name, "name", "", "new name (\"\" clears it)")
	fl.StringVar(&policy, "policy", "", "unknown-sender policy: "+words(sessiondb.PolicyStrict, sessiondb.PolicyRequestApproval, sessiondb.PolicyPublic))
	fl.BoolVar(&isGroup, "group-chat", false, "a group chat (true) or a DM (false)")
	fl.BoolVar(&denied, "denied", false, "deny the chat (true: an unwired denied chat drops silently) or lift the denial (false)")
	return c
}

func (a *group) channelsDeleteCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "delete ID [--yes]",
		Short: "Delete a chat that has no sessions, with its wirings and the destinations naming it",
		Args:  cli.ExactArgs(1, "one chat id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				m, err := reg.GetMessagingGroup(ctx, args[0])
				if err != nil {
					return err
				}
				show := func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "chat %s (%s %s) %q\n", m.ID, m.ChannelType, m.PlatformID, m.Name)
					return err
				}
				return a.deleteConfirmed(ctx, reg, chatTarget, m.ID, reg.DeleteMessagingGroup, yes, show, fmt.Sprintf("Delete chat %s, its wirings and the destinations naming it?", m.ID))
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

// target is a chat or an agent group as the commands that rename or
// delete one see it: other groups' destinations name it, so either change
// re-projects them.
type target struct {
	tt   sessiondb.TargetType
	kind string // in messages: "agent group", "chat"
	key  string // the updated row's JSON key
}

var (
	agentTarget = target{sessiondb.TargetAgent, "agent group", "group"}
	chatTarget  = target{sessiondb.TargetChannel, "chat", "chat"}
)

// updated prints the target row v (id t) after an update; when renamed it
// first re-projects the groups whose destinations show its name.
func (a *group) updated(ctx context.Context, reg sessiondb.Registry, t target, id string, v any, renamed bool) error {
	n := 0
	if renamed {
		var err error
		if n, err = a.reprojectTargeting(ctx, reg, t.tt, id, nil); err != nil {
			return err
		}
	}
	return a.done(map[string]any{t.key: v, "reprojected": n}, "updated %s %s%s", t.kind, id, reprojected(n))
}

// deleteConfirmed asks first (show and question, see cli.Factory.Confirm),
// deletes the target id with del, re-projects the groups whose
// destinations named it and prints what it did.
func (a *group) deleteConfirmed(ctx context.Context, reg sessiondb.Registry, t target, id string, del func(context.Context, string) error,
	yes bool, show func(io.Writer) error, question string) error {
	if err := a.Confirm(yes, show, question); err != nil {
		return err
	}
	n, err := a.reprojectTargeting(ctx, reg, t.tt, id, func() error { return del(ctx, id) })
	if err != nil {
		return err
	}
	return a.done(map[string]any{"deleted": id, "reprojected": n}, "deleted %s %s%s", t.kind, id, reprojected(n))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// whenSet formats a time, "" when unset (a field show leaves out).
func whenSet(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return when(t)
}
