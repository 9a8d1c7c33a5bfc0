package mailbox

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentAckCmd is `agent ack` (any status, completed by default) or `agent
// fail` (failed).
func (m *group) agentAckCmd(open openAgentFunc, verb string) *cobra.Command {
	status := mailbox.AckCompleted
	c := &cobra.Command{
		Use:   "ack ID... [--status completed|failed|processing]",
		Short: "Acknowledge inbound messages (default completed)",
		Long: `ack writes the agent's acknowledgement of each message: completed (done),
failed, or processing (claimed: the host's stuck check watches it). The host
mirrors completed and failed into inbound.db. Every ID must name an inbound
message: an unknown one exits 3 and nothing is written.`,
		Example: `  sessiondb mailbox agent ack msg-1795308931637-gf58pk
  sessiondb mailbox agent ack --status processing ID1 ID2`,
		Args: cli.MinimumArgs(1, "at least one message id"),
	}
	if verb == "fail" {
		c.Use = "fail ID..."
		c.Short = "Acknowledge inbound messages as failed"
		c.Long = `fail acknowledges each message as failed (the same as ack --status failed):
the host marks the row failed, which ends its retries but not a recurring
task's series. Every ID must name an inbound message: an unknown one exits 3
and nothing is written.`
		c.Example = `  sessiondb mailbox agent fail msg-1795308931637-gf58pk`
	}
	c.RunE = func(c *cobra.Command, ids []string) error {
		ctx := c.Context()
		return withAgent(ctx, open, func(a *mailbox.Agent) error {
			var mark func(...string) error
			switch status {
			case mailbox.AckCompleted:
				mark = func(ids ...string) error { return a.MarkCompleted(ctx, ids...) }
			case mailbox.AckFailed:
				mark = func(ids ...string) error { return a.MarkFailed(ctx, ids...) }
			case mailbox.AckProcessing:
				mark = func(ids ...string) error { return a.MarkProcessing(ctx, ids...) }
			default:
				return sessiondb.Errorf(sessiondb.EINVALID, "--status %q: want completed, failed or processing", cli.PrintableLine(status))
			}
			if err := a.RequireInbound(ctx, ids...); err != nil {
				return err
			}
			if err := mark(ids...); err != nil {
				return err
			}
			if err := a.TouchHeartbeat(); err != nil {
				return err
			}
			if m.JSON {
				return m.PrintJSON(map[string]any{"acked": ids, "status": status})
			}
			fmt.Fprintf(m.Out, "%s: %d message(s)\n", status, len(ids))
			return nil
		})
	}
	if verb == "ack" {
		c.Flags().StringVar(&status, "status", mailbox.AckCompleted, "completed, failed or processing")
	} else {
		status = mailbox.AckFailed
	}
	return c
}

func (m *group) agentStateCmd(open openAgentFunc) *cobra.Command {
	var provider string
	c := &cobra.Command{
		Use:   "state (get KEY | set KEY VALUE | clear KEY | list)",
		Short: "Read and write the agent's session_state key/value table",
		Long: `state keeps the agent's own key/value pairs in outbound.db (session_state),
where they outlive the process: get prints a value (exit 3 when absent), set
stores one, clear (or delete) removes one, list prints KEY<TAB>VALUE lines.
With --continuation PROVIDER, get, set and clear act on that provider's
resume id (the key continuation:<provider>, as NanoClaw's agent keeps it)
and take no KEY.`,
		Example: `  sessiondb mailbox agent state set last-topic "deploys"
  sessiondb mailbox agent state get last-topic
  sessiondb mailbox agent state clear last-topic
  sessiondb mailbox agent state set --continuation claude 6f0c2a
  sessiondb mailbox agent state list --json`,
		Args: cli.RangeArgs(1, 3, "get KEY, set KEY VALUE, clear KEY or list"),
		RunE: func(c *cobra.Command, args []string) error {
			verb := args[0]
			if verb == "delete" {
				verb = "clear"
			}
			want := map[string]int{"get": 2, "set": 3, "clear": 2, "list": 1}
			n, ok := want[verb]
			if !ok {
				return sessiondb.Errorf(sessiondb.EINVALID, "state %q: want get, set, clear or list", cli.PrintableLine(args[0]))
			}
			if provider != "" {
				if verb == "list" {
					return sessiondb.Errorf(sessiondb.EINVALID, "state list takes no --continuation")
				}
				args = append([]string{args[0], "continuation:" + lowerASCII(provider)}, args[1:]...)
			}
			if len(args) != n {
				return sessiondb.Errorf(sessiondb.EINVALID, "state %s takes %d argument(s)", verb, n-1)
			}
			ctx := c.Context()
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				switch verb {
				case "get":
					v, found, err := a.StateGet(ctx, args[1])
					if err != nil {
						return err
					}
					if !found {
						return sessiondb.Errorf(sessiondb.ENOTFOUND, "no state key %q", args[1])
					}
					if m.JSON {
						return m.PrintJSON(map[string]string{"key": args[1], "value": v})
					}
					fmt.Fprintln(m.Out, cli.Printable(v)) // --json gives the exact value
				case "set":
					if err := a.StateSet(ctx, args[1], args[2]); err != nil {
						return err
					}
					if m.JSON {
						return m.PrintJSON(map[string]string{"key": args[1], "value": args[2]})
					}
				case "clear":
					if err := a.StateDelete(ctx, args[1]); err != nil {
						return err
					}
					if m.JSON {
						return m.PrintJSON(map[string]string{"cleared": args[1]})
					}
				case "list":
					kv, err := a.StateList(ctx)
					if err != nil {
						return err
					}
					if m.JSON {
						return m.PrintJSON(kv)
					}
					keys := make([]string, 0, len(kv))
					for k := range kv {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						fmt.Fprintf(m.Out, "%s\t%s\n", cli.PrintableLine(k), cli.PrintableLine(kv[k]))
					}
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&provider, "continuation", "", "act on this model provider's resume id instead of a KEY")
	return c
}

// lowerASCII lowercases A-Z, as JavaScript's toLowerCase does for the
// provider names NanoClaw keys continuations by.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (m *group) agentToolCmd(open openAgentFunc) *cobra.Command {
	var timeoutMS int64
	c := &cobra.Command{
		Use:   "tool (start NAME [--timeout-ms N] | end | show)",
		Short: "Record the tool in flight, so the host's stuck check allows a long run",
		Long: `tool start NAME records that a tool is running (container_state), with its
own declared timeout in milliseconds when it has one: while Bash runs with a
timeout longer than the host's limits, the host waits that long before it
calls the agent stuck. tool end records that no tool runs. tool show prints
the record.`,
		Example: `  sessiondb mailbox agent tool start Bash --timeout-ms 600000
  sessiondb mailbox agent tool end
  sessiondb mailbox agent tool show --json`,
		Args: cli.RangeArgs(1, 2, "start NAME, end or show"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			switch {
			case args[0] == "start" && len(args) == 2:
			case (args[0] == "end" || args[0] == "show") && len(args) == 1:
				if c.Flags().Changed("timeout-ms") {
					return sessiondb.Errorf(sessiondb.EINVALID, "--timeout-ms goes with tool start")
				}
			default:
				return sessiondb.Errorf(sessiondb.EINVALID, "tool %s: want start NAME, end or show", cli.PrintableLine(args[0]))
			}
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				var err error
				switch args[0] {
				case "start":
					err = a.SetToolInFlight(ctx, args[1], timeoutMS)
				case "end":
					err = a.ClearToolInFlight(ctx)
				}
				if err != nil {
					return err
				}
				st, err := a.ContainerState(ctx)
				if err != nil {
					return err
				}
				if m.JSON {
					return m.PrintJSON(st)
				}
				switch {
				case args[0] != "show":
				case st.CurrentTool == "":
					fmt.Fprintln(m.Out, "no tool in flight")
				default:
					fmt.Fprintf(m.Out, "%s since %s", cli.PrintableLine(st.CurrentTool), cli.PrintableLine(st.ToolStartedAt))
					if st.ToolDeclaredTimeoutMS > 0 {
						fmt.Fprintf(m.Out, " (timeout %d ms)", st.ToolDeclaredTimeoutMS)
					}
					fmt.Fprintln(m.Out)
				}
				return nil
			})
		},
	}
	c.Flags().Int64Var(&timeoutMS, "timeout-ms", 0, "the tool's own declared timeout in milliseconds (0: none)")
	return c
}

func (m *group) agentHeartbeatCmd(open openAgentFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "heartbeat",
		Short: "Touch .heartbeat: tell the host the agent is alive and working",
		Long: `heartbeat sets .heartbeat's time to now. The host counts an agent alive
while its heartbeat is recent, and calls it stuck when a claimed message sees
no beat for a minute (30 minutes without any beat at all). poll (with a
batch), ack and send beat too; a long step in between should beat on its own.`,
		Example: `  sessiondb mailbox agent heartbeat
  long_job & while kill -0 $! 2>/dev/null; do sessiondb mailbox agent heartbeat; sleep 10; done`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return withAgent(c.Context(), open, func(a *mailbox.Agent) error {
				if err := a.TouchHeartbeat(); err != nil {
					return err
				}
				if m.JSON {
					return m.PrintJSON(map[string]string{"heartbeat": mailbox.FormatTime(m.Now())})
				}
				return nil
			})
		},
	}
}
