package admin

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (a *group) wireCmd() *cobra.Command {
	var n sessiondb.NewWiring
	c := &cobra.Command{
		Use:   "wire CHAT AGENT_GROUP [flags]",
		Short: "Wire a chat to an agent group: the agent answers it (and may send to it)",
		Long: `wire connects a chat to an agent group. The engage mode says when the agent
answers: pattern (its regular expression matches the text; '.' matches
everything), mention (the bot is mentioned; a DM counts), or mention-sticky (a
mention, then, in a group chat, everything in a chat or thread where the agent
already has a session). The sender scope says whom it answers: all (whoever the
chat lets in) or known (members and admins only). Messages it does not answer
are dropped, or kept as context (--ignored accumulate) for the next one it
does. The session mode says which session a message lands in: shared (one per
chat), per-thread, or agent-shared (the agent's newest session, whatever the
chat). Wirings of one chat are evaluated by --priority, highest first.

Patterns are Go (RE2) regular expressions: JavaScript-only syntax such as
lookbehind is refused here. Wiring also lets the agent send to the chat: a
channel destination named after the chat is added (and re-projected into the
agent's running sessions) unless it has one.`,
		Example: `  sessiondb admin wire mg-team ag-helper --engage mention-sticky
  sessiondb admin wire mg-dm ag-helper --engage pattern --pattern . --scope known
  sessiondb admin wire mg-ops ag-helper --engage pattern --pattern '^!deploy' --priority 10`,
		Args: cli.ExactArgs(2, "a chat id and an agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			n.MessagingGroupID, n.AgentGroupID = args[0], args[1]
			if n.EngageMode == "" && n.EngagePattern != "" {
				n.EngageMode = sessiondb.EngagePattern
			}
			if err := n.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				w, err := reg.CreateWiring(ctx, n)
				if err != nil {
					return err
				}
				count := 0
				if w.Destination != nil {
					// [IMP] of spec A8: the new destination reaches the
					// running sessions now, not at their next spawn.
					if count, err = a.reproject(ctx, reg, w.Wiring.AgentGroupID); err != nil {
						return err
					}
				}
				msg := fmt.Sprintf("wired chat %s to agent group %s (%s)", w.Wiring.MessagingGroupID, w.Wiring.AgentGroupID, w.Wiring.ID)
				if w.Destination != nil {
					msg += fmt.Sprintf("; destination %q added", w.Destination.LocalName)
				}
				return a.done(map[string]any{"wiring": w.Wiring, "destination": w.Destination, "reprojected": count}, "%s%s", msg, reprojected(count))
			})
		},
	}
	fl := c.Flags()
	fl.StringVar((*string)(&n.EngageMode), "engage", "", "when the agent answers: "+words(sessiondb.EngagePattern, sessiondb.EngageMention, sessiondb.EngageMentionSticky)+" (default mention)")
	fl.StringVar(&n.EngagePattern, "pattern", "", "the engage pattern (a Go regular expression; '.' is everything)")
	fl.StringVar((*string)(&n.SenderScope), "scope", "", "whom it answers: "+words(sessiondb.ScopeAll, sessiondb.ScopeKnown)+" (default all)")
	fl.StringVar((*string)(&n.IgnoredMessagePolicy), "ignored", "", "messages it does not answer: "+words(sessiondb.IgnoredDrop, sessiondb.IgnoredAccumulate)+" (default drop)")
	fl.StringVar((*string)(&n.SessionMode), "session-mode", "", "which session: "+words(sessiondb.ModeShared, sessiondb.ModePerThread, sessiondb.ModeAgentShared)+" (default shared)")
	fl.IntVar(&n.Priority, "priority", 0, "evaluation order among the chat's wirings (highest first)")
	fl.StringVar(&n.ID, "id", "", "the wiring's id (default mga-<ms>-<random>)")
	return c
}

func (a *group) unwireCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "unwire (WIRING | CHAT AGENT_GROUP) [--yes]",
		Short: "Remove a wiring: the agent stops answering the chat (its destination stays)",
		Long: `unwire removes a wiring, named by its id or by its chat and agent group. The
agent stops answering the chat; the destination the wiring added stays (remove
it with ` + "`admin destinations remove`" + ` to stop the agent sending there too).
Asks first on a terminal.`,
		Args: cli.RangeArgs(1, 2, "a wiring id, or a chat id and an agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				var w sessiondb.Wiring
				if len(args) == 1 {
					var err error
					if w, err = reg.GetWiring(ctx, args[0]); err != nil {
						return err
					}
				} else {
					ws, err := reg.ListWirings(ctx, sessiondb.WiringFilter{MessagingGroupID: args[0], AgentGroupID: args[1]})
					if err != nil {
						return err
					}
					if len(ws) == 0 {
						return sessiondb.Errorf(sessiondb.ENOTFOUND, "chat %s is not wired to agent group %s", args[0], args[1])
					}
					w = ws[0]
				}
				show := func(wr io.Writer) error {
					_, err := fmt.Fprintf(wr, "wiring %s: chat %s → agent group %s (%s)\n", w.ID, w.MessagingGroupID, w.AgentGroupID, w.EngageMode)
					return err
				}
				if err := a.Confirm(yes, show, "Remove this wiring?"); err != nil {
					return err
				}
				if err := reg.DeleteWiring(ctx, w.ID); err != nil {
					return err
				}
				return a.done(map[string]any{"deleted": w.ID}, "removed wiring %s", w.ID)
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func (a *group) wiringsCmd() *cobra.Command {
	var chat, ag string
	c := &cobra.Command{
		Use:   "wirings [--chat ID] [--group ID]",
		Short: "List wirings, in the order the router evaluates them",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, func(ctx context.Context, reg sessiondb.Registry) ([]sessiondb.Wiring, error) {
				return reg.ListWirings(ctx, sessiondb.WiringFilter{MessagingGroupID: chat, AgentGroupID: ag})
			}, wiringColumns)
		},
	}
	c.Flags().StringVar(&chat, "chat", "", "only this chat's wirings")
	c.Flags().StringVar(&ag, "group", "", "only this agent group's wirings")
	return c
}

var wiringColumns = cli.Columns[sessiondb.Wiring]{
	Header: []string{"ID", "CHAT", "AGENT GROUP", "ENGAGE", "PATTERN", "SCOPE", "IGNORED", "SESSIONS", "PRIORITY"},
	Cells: func(w sessiondb.Wiring) []string {
		return []string{w.ID, w.MessagingGroupID, w.AgentGroupID, string(w.EngageMode), cli.OrDash(w.EngagePattern), string(w.SenderScope),
			string(w.IgnoredMessagePolicy), string(w.SessionMode), strconv.Itoa(w.Priority)}
	},
}

func (a *group) destinationsCmd() *cobra.Command {
	return parent(&cobra.Command{
		Use:   "destinations",
		Short: "Where an agent group may send: list, add, remove",
		Long: `A destination is a name an agent group may send to: a chat (channel) or
another agent group (agent). Its existence is the permission: the host refuses
any other send except to the session's own chat. Every change is re-projected
at once into the destinations table of the group's active sessions.`,
	}, a.destinationsListCmd(), a.destinationsAddCmd(), a.destinationsRemoveCmd())
}

func (a *group) destinationsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list AGENT_GROUP",
		Short: "List an agent group's destinations by name",
		Args:  cli.ExactArgs(1, "one agent group id"),
		RunE: func(c *cobra.Command, args []string) error {
			return list(a, c, ofGroup(args[0], sessiondb.Registry.ListDestinations), destinationColumns)
		},
	}
}

var destinationColumns = cli.Columns[sessiondb.Destination]{
	Header: []string{"NAME", "TYPE", "TARGET", "CREATED"},
	Cells: func(d sessiondb.Destination) []string {
		return []string{d.LocalName, string(d.TargetType), d.TargetID, when(d.CreatedAt)}
	},
}

func (a *group) destinationsAddCmd() *cobra.Command {
	var chat, agent string
	c := &cobra.Command{
		Use:     "add AGENT_GROUP NAME (--chat ID | --agent ID)",
		Short:   "Let an agent group send to a chat or another agent group under NAME",
		Example: "  sessiondb admin destinations add ag-helper ops --chat mg-ops\n  sessiondb admin destinations add ag-helper reviewer --agent ag-reviewer",
		Args:    cli.ExactArgs(2, "an agent group id and the destination's name"),
		RunE: func(c *cobra.Command, args []string) error {
			n := sessiondb.NewDestination{AgentGroupID: args[0], LocalName: args[1]}
			switch {
			case (chat == "") == (agent == ""):
				return sessiondb.Errorf(sessiondb.EINVALID, "give exactly one of --chat and --agent")
			case chat != "":
				n.TargetType, n.TargetID = sessiondb.TargetChannel, chat
			default:
				n.TargetType, n.TargetID = sessiondb.TargetAgent, agent
			}
			if err := n.Validate(); err != nil {
				return err
			}
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				d, err := reg.AddDestination(ctx, n)
				if err != nil {
					return err
				}
				count, err := a.reproject(ctx, reg, d.AgentGroupID)
				if err != nil {
					return err
				}
				return a.done(map[string]any{"destination": d, "reprojected": count}, "agent group %s may send to %s %s as %q%s",
					d.AgentGroupID, d.TargetType, d.TargetID, d.LocalName, reprojected(count))
			})
		},
	}
	c.Flags().StringVar(&chat, "chat", "", "the chat (messaging group id) to send to")
	c.Flags().StringVar(&agent, "agent", "", "the agent group id to send to")
	return c
}

func (a *group) destinationsRemoveCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "remove AGENT_GROUP NAME [--yes]",
		Short: "Stop an agent group sending to a destination",
		Args:  cli.ExactArgs(2, "an agent group id and the destination's name"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.with(c, cli.WriteStore, func(ctx context.Context, reg sessiondb.Registry) error {
				if err := a.Confirm(yes, nil, fmt.Sprintf("Stop agent group %s sending to %q?", args[0], args[1])); err != nil {
					return err
				}
				if err := reg.RemoveDestination(ctx, args[0], args[1]); err != nil {
					return err
				}
				count, err := a.reproject(ctx, reg, args[0])
				if err != nil {
					return err
				}
				return a.done(map[string]any{"removed": args[1], "agent_group_id": args[0], "reprojected": count},
					"agent group %s may no longer send to %q%s", args[0], args[1], reprojected(count))
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}
