package mailbox

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// projection is what `mailbox project` shows: the two tables of
// inbound.db the host projects from the control plane for the agent.
type projection struct {
	Session      mailbox.SessionRef    `json:"session"`
	Routing      mailbox.Routing       `json:"session_routing"`
	Destinations []mailbox.Destination `json:"destinations"`
}

// projectCmd is `mailbox project`: write a session's session_routing and
// destinations by hand, what a control plane projects before each spawn.
func (m *group) projectCmd() *cobra.Command {
	var (
		sf                      sessionFlags
		routing                 mailbox.Routing
		channels, agents        []string
		destsJSON               string
		noRouting, noDests      bool
		changedRoute, wantDests bool
	)
	c := &cobra.Command{
		Use:   "project [--channel-type CT --platform-id P [--thread-id T]] [--channel NAME=CT:P]... [--agent NAME=GROUP]...",
		Short: "Write the session's own chat (session_routing) and its destinations, as a control plane projects them",
		Long: `project writes the two tables of inbound.db that tell the agent where it may
send: session_routing, the chat the session belongs to (where a reply goes by
default, thread kept), and destinations, the names send --to accepts. A host
with a control plane writes them before each spawn from its central tables;
until then, this command writes them by hand (the same rows, the same
transactions: routing upserted, destinations rewritten wholesale).

  --channel-type/--platform-id/--thread-id   the session's own chat
  --no-routing                               clear it
  --channel NAME=CHANNEL_TYPE:PLATFORM_ID    a chat destination (repeatable;
                                             the first ':' splits)
  --agent NAME=AGENT_GROUP                   another agent group (repeatable)
  --destinations JSON                        the whole table as a JSON array of
                                             {name, type, channel_type,
                                             platform_id, agent_group_id,
                                             display_name}
  --no-destinations                          an empty table

Destination flags replace the whole table; routing flags only the routing.
Without flags it prints both tables.`,
		Example: `  sessiondb mailbox project --data /tmp/mb --group demo --session s1 --channel-type cli --platform-id me
  sessiondb mailbox project --dir /tmp/mb/demo/s1 --channel team=slack:C024BE91L --agent research=research-group
  sessiondb mailbox project --dir /tmp/mb/demo/s1 --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			h, ref, err := m.sessionHost(&sf)
			if err != nil {
				return err
			}
			ctx := c.Context()
			changedRoute = !routing.IsZero()
			wantDests = len(channels) > 0 || len(agents) > 0 || destsJSON != "" || noDests
			switch {
			case noRouting && changedRoute:
				return sessiondb.Errorf(sessiondb.EINVALID, "give routing flags or --no-routing, not both")
			case noDests && (len(channels) > 0 || len(agents) > 0 || destsJSON != ""):
				return sessiondb.Errorf(sessiondb.EINVALID, "give destinations or --no-destinations, not both")
			}
			if wantDests {
				ds, err := parseDestinations(destsJSON, channels, agents)
				if err != nil {
					return err
				}
				if err := h.WriteDestinations(ctx, ref, ds); err != nil {
					return err
				}
			}
			if changedRoute || noRouting {
				if err := h.WriteSessionRouting(ctx, ref, routing); err != nil {
					return err
				}
			}
			p := projection{Session: ref}
			if p.Routing, err = h.SessionRouting(ctx, ref); err != nil {
				return err
			}
			if p.Destinations, err = h.Destinations(ctx, ref); err != nil {
				return err
			}
			p.Destinations = sessiondb.NonNil(p.Destinations)
			if m.JSON {
				return m.PrintJSON(p)
			}
			fmt.Fprintf(m.Out, "session_routing: %s\n", cli.PrintableLine(routeText(p.Routing)))
			return destinationColumns.Write(m.Out, p.Destinations)
		},
	}
	sf.add(c)
	f := c.Flags()
	f.StringVar(&routing.ChannelType, "channel-type", "", "the session's own chat: channel type")
	f.StringVar(&routing.PlatformID, "platform-id", "", "the session's own chat: platform chat id")
	f.StringVar(&routing.ThreadID, "thread-id", "", "the session's own chat: thread id")
	f.BoolVar(&noRouting, "no-routing", false, "clear session_routing (a session without a chat of its own)")
	f.StringArrayVar(&channels, "channel", nil, "a chat destination NAME=CHANNEL_TYPE:PLATFORM_ID (repeatable)")
	f.StringArrayVar(&agents, "agent", nil, "an agent destination NAME=AGENT_GROUP (repeatable)")
	f.StringVar(&destsJSON, "destinations", "", "the whole destinations table as a JSON array")
	f.BoolVar(&noDests, "no-destinations", false, "empty the destinations table")
	return c
}

// parseDestinations reads the destination flags into one table.
func parseDestinations(js string, channels, agents []string) ([]mailbox.Destination, error) {
	var ds []mailbox.Destination
	if js != "" {
		dec := json.NewDecoder(strings.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ds); err != nil {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "--destinations: want a JSON array of {name, type, channel_type, platform_id, agent_group_id, display_name}: %v", err)
		}
	}
	for _, s := range channels {
		name, target, ok := strings.Cut(s, "=")
		ct, pid, ok2 := strings.Cut(target, ":")
		if !ok || !ok2 || name == "" || ct == "" || pid == "" {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "--channel %q: want NAME=CHANNEL_TYPE:PLATFORM_ID", cli.PrintableLine(s))
		}
		ds = append(ds, mailbox.Destination{Name: name, Type: mailbox.DestinationChannel, ChannelType: ct, PlatformID: pid, DisplayName: name})
	}
	for _, s := range agents {
		name, group, ok := strings.Cut(s, "=")
		if !ok || name == "" || group == "" {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "--agent %q: want NAME=AGENT_GROUP", cli.PrintableLine(s))
		}
		ds = append(ds, mailbox.Destination{Name: name, Type: mailbox.DestinationAgent, AgentGroupID: group, DisplayName: name})
	}
	return sessiondb.NonNil(ds), nil
}
