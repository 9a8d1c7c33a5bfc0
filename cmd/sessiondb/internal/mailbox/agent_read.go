package mailbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

func (m *group) agentPollCmd(open openAgentFunc) *cobra.Command {
	var (
		wait, first, claim, keepClaims bool
		limit                          int
		timeout                        time.Duration
	)
	c := &cobra.Command{
		Use:   "poll [--wait [--timeout D]] [--limit N] [--claim] [--first]",
		Short: "Print the next batch of inbound messages (oldest first)",
		Long: `poll prints the next batch: one line per message, ID<TAB>SEQ<TAB>KIND<TAB>TEXT
(text flattened to one line), or a JSON array with --json. An empty batch
prints nothing (--json: []). The batch is what NanoClaw's container would
process: due rows not yet acked, newest --limit of them, without kind=system
rows, and only when one of them wakes the agent (trigger=1); context-only
rows ride along. --wait blocks until a batch arrives (or --timeout passes,
or Ctrl-C: exit 130).

A poll starts as a fresh agent does: it first deletes the processing claims
left by earlier polls (a crashed run's), so claimed rows that were never
acked come back. A script that polls again while claimed work is still in
flight passes --keep-claims. Polling does not claim rows: they come back
until acked; --claim marks them processing, as a container does. --first
marks the first poll of a fresh container: on_wake rows are included. A
batch touches .heartbeat, so the host sees the agent working.`,
		Example: `  sessiondb mailbox agent poll
  sessiondb mailbox agent poll --wait --claim --first
  sessiondb mailbox agent poll --wait --timeout 10s --json | jq -r '.[].id'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit must be ≥ 0")
			}
			ctx := c.Context()
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				if !keepClaims {
					if _, err := a.ClearStaleProcessing(ctx); err != nil {
						return err
					}
				}
				batch, err := pollWait(ctx, a, wait, timeout, func() ([]mailbox.InboundRow, error) {
					return a.Poll(ctx, mailbox.PollOptions{FirstPoll: first, Limit: limit})
				})
				if err != nil {
					return err
				}
				if len(batch) > 0 {
					if err := a.TouchHeartbeat(); err != nil {
						return err
					}
					if claim {
						if err := a.MarkProcessing(ctx, rowIDs(batch)...); err != nil {
							return err
						}
					}
				}
				return m.printInbound(batch, false)
			})
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "block until a batch arrives")
	c.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (empty batch, exit 0)")
	c.Flags().IntVar(&limit, "limit", mailbox.DefaultPollLimit, "most messages per batch")
	c.Flags().BoolVar(&first, "first", false, "first poll of a fresh container: include on_wake rows")
	c.Flags().BoolVar(&claim, "claim", false, "mark the batch processing")
	c.Flags().BoolVar(&keepClaims, "keep-claims", false, "leave earlier processing claims alone (work still in flight)")
	return c
}

// pollWait reads with read until it returns rows, or once when !wait; with
// wait it sleeps on inbound changes between reads until timeout (then an
// empty batch) or ctx ends (ctx's error). A busy read (the host is
// committing) counts as nothing yet.
func pollWait(ctx context.Context, a *mailbox.Agent, wait bool, timeout time.Duration, read func() ([]mailbox.InboundRow, error)) ([]mailbox.InboundRow, error) {
	// --timeout bounds the waiting only, never a read or the open, so a
	// slow disk cannot turn "nothing yet" into an error.
	waitCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		batch, err := read()
		if err != nil && sessiondb.ErrorCode(err) != sessiondb.EBUSY {
			return nil, err
		}
		if len(batch) > 0 || !wait || waitCtx.Err() != nil {
			return batch, ctx.Err()
		}
		if err := a.WaitInbound(waitCtx); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// --timeout passed: one last look, then an empty batch.
	}
}

func rowIDs(rows []mailbox.InboundRow) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// printInbound prints rows one per line, ID SEQ KIND [TRIGGER] TEXT, or
// as a JSON array.
func (m *group) printInbound(rows []mailbox.InboundRow, trigger bool) error {
	if m.JSON {
		rows = sessiondb.NonNil(rows)
		return m.PrintJSON(rows)
	}
	for _, r := range rows {
		fmt.Fprintf(m.Out, "%s\t%d\t%s\t", cli.PrintableLine(r.ID), r.Seq, cli.PrintableLine(r.Kind))
		if trigger {
			fmt.Fprintf(m.Out, "%d\t", boolDigit(r.Trigger))
		}
		fmt.Fprintln(m.Out, summarize(r.Content, 0))
	}
	return nil
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *group) agentPendingCmd(open openAgentFunc) *cobra.Command {
	var (
		wait, first bool
		limit       int
		timeout     time.Duration
	)
	c := &cobra.Command{
		Use:   "pending [--wait [--timeout D]] [--limit N] [--first]",
		Short: "Print every due message not yet acked, whatever its trigger and kind",
		Long: `pending prints every due inbound row the agent has not acked, oldest first,
including context-only rows (trigger=0) and kind=system rows (answers to
questions, CLI responses): what NanoClaw's getPendingMessages hands its poll
loop before the loop decides whether to wake. One line per row,
ID<TAB>SEQ<TAB>KIND<TAB>TRIGGER<TAB>TEXT (TRIGGER 1 wakes the agent, 0 is
context), or a JSON array with --json. It claims nothing and clears no
claims. --limit N reads the newest N due rows and leaves out those acked,
as NanoClaw's poll does (so fewer than N may print while older rows wait);
--first includes on_wake rows; --wait blocks until there is at least one row.`,
		Example: `  sessiondb mailbox agent pending
  sessiondb mailbox agent pending --json | jq '.[] | select(.trigger) | .id'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit must be ≥ 0 (0 = all)")
			}
			ctx := c.Context()
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				rows, err := pollWait(ctx, a, wait, timeout, func() ([]mailbox.InboundRow, error) {
					return a.Pending(ctx, mailbox.PendingOptions{FirstPoll: first, Limit: limit})
				})
				if err != nil {
					return err
				}
				return m.printInbound(rows, true)
			})
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "block until a row is pending")
	c.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (nothing printed, exit 0)")
	c.Flags().IntVar(&limit, "limit", 0, "only the unacked among the newest N due rows (0 = all)")
	c.Flags().BoolVar(&first, "first", false, "include on_wake rows, as a fresh container's first poll does")
	return c
}

func (m *group) agentAcksCmd(open openAgentFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "acks",
		Short: "List the agent's acknowledgements (processing_ack)",
		Long: `acks lists every acknowledgement the agent wrote, oldest first: one line per
message, ID<TAB>STATUS<TAB>CHANGED (processing, completed or failed, and when),
or a JSON array with --json. The host mirrors completed and failed ones into
inbound.db; processing ones are claims.`,
		Example: `  sessiondb mailbox agent acks
  sessiondb mailbox agent acks --json | jq -r '.[] | select(.status == "processing") | .message_id'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: agentList(m, open, (*mailbox.Agent).Acks, func(acks []mailbox.Claim) error {
			for _, k := range acks {
				fmt.Fprintf(m.Out, "%s\t%s\t%s\n", cli.PrintableLine(k.MessageID), cli.PrintableLine(k.Status), cli.PrintableLine(k.StatusChanged))
			}
			return nil
		}),
	}
}

// sentRow is one of the agent's outbound rows with what became of it.
type sentRow struct {
	mailbox.OutboundRow
	Delivery mailbox.DeliveryState `json:"delivery"`
}

func (m *group) agentSentCmd(open openAgentFunc) *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "sent [--limit N]",
		Short: "List the agent's own outbound messages and their delivery",
		Long: `sent lists the agent's outbound rows, newest first, with what the host
recorded about each: undelivered, retrying (with the attempts and the last
error), delivered (with the platform's message id) or failed.`,
		Example: `  sessiondb mailbox agent sent --limit 5
  sessiondb mailbox agent sent --json | jq '.[] | {seq, state: .delivery.status}'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit must be ≥ 0 (0 = all)")
			}
			ctx := c.Context()
			return withAgent(ctx, open, func(a *mailbox.Agent) error {
				rows, err := a.OutboundRows(ctx, limit)
				if err != nil {
					return err
				}
				ds, err := a.DeliveryStates(ctx)
				if err != nil {
					return err
				}
				out := make([]sentRow, len(rows))
				for i, r := range rows {
					d, ok := ds[r.ID]
					if !ok {
						d.Status = mailbox.DeliveryUndelivered
					}
					out[i] = sentRow{r, d}
				}
				if m.JSON {
					return m.PrintJSON(out)
				}
				var tb cli.Table
				tb.Row("SEQ", "ID", "KIND", "STATE", "TO", "CONTENT")
				for _, r := range out {
					tb.Row(strconv.FormatInt(r.Seq, 10), r.ID, r.Kind, deliveryText(r.Delivery), routeText(r.Routing), summarize(r.Content, 60))
				}
				return tb.Write(m.Out)
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "rows, newest first (0 = all)")
	return c
}

// deliveryText is a delivery state as a table cell.
func deliveryText(d mailbox.DeliveryState) string {
	switch {
	case d.Status == mailbox.DeliveredOK && d.PlatformMessageID != "":
		return d.Status + " as " + d.PlatformMessageID
	case d.Attempts > 0 && d.Status != mailbox.DeliveredOK:
		return fmt.Sprintf("%s (%d tries: %s)", d.Status, d.Attempts, cli.Cut(d.LastError, 40))
	}
	return d.Status
}

// routeText is a routing as a table cell: channel:platform[/thread].
func routeText(r mailbox.Routing) string {
	s := strings.Trim(r.ChannelType+":"+r.PlatformID, ":")
	if r.ThreadID != "" {
		s += "/" + r.ThreadID
	}
	return cli.OrDash(s)
}

func (m *group) agentLookupCmd(open openAgentFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "lookup SEQ",
		Short: "Say what message a seq names: its id, the id to edit or react to, its routing",
		Long: `lookup finds the message numbered SEQ (even: an inbound message, odd: one of
the agent's own) and prints SEQ<TAB>in|out<TAB>ID<TAB>MESSAGE_ID<TAB>CHANNEL<TAB>PLATFORM<TAB>THREAD
("-" for empty), or a JSON object with --json. MESSAGE_ID is what an edit or a
reaction targets: the inbound id, or for the agent's own message the
platform's id once delivered. An unknown seq exits 3.`,
		Example: `  sessiondb mailbox agent lookup 3
  sessiondb mailbox agent lookup 2 --json | jq -r .message_id`,
		Args: cli.ExactArgs(1, "a seq (message number)"),
		RunE: func(c *cobra.Command, args []string) error {
			seq, err := parseSeq(args[0])
			if err != nil {
				return err
			}
			return withAgent(c.Context(), open, func(a *mailbox.Agent) error {
				t, err := a.LookupSeq(c.Context(), seq)
				if err != nil {
					return err
				}
				if m.JSON {
					return m.PrintJSON(t)
				}
				dir := "in"
				if t.Outbound {
					dir = "out"
				}
				fmt.Fprintf(m.Out, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Seq, dir, cli.PrintableLine(t.ID), cli.PrintableLine(t.MessageID),
					cli.OrDash(cli.PrintableLine(t.Routing.ChannelType)), cli.OrDash(cli.PrintableLine(t.Routing.PlatformID)), cli.OrDash(cli.PrintableLine(t.Routing.ThreadID)))
				return nil
			})
		},
	}
}

// parseSeq reads a message number.
func parseSeq(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || n <= 0 {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "seq %q: want a positive message number", cli.PrintableLine(s))
	}
	return n, nil
}

func (m *group) agentDestinationsCmd(open openAgentFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "destinations",
		Short: "List the names the agent may send to (send --to NAME)",
		Long: `destinations lists the session's destinations table, the names send --to
accepts: channels (a chat on a platform) and agents (another agent group).
The host writes it (sessiondb mailbox project, or a control plane).`,
		Example: `  sessiondb mailbox agent destinations
  sessiondb mailbox agent destinations --json | jq -r '.[].name'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: agentList(m, open, (*mailbox.Agent).Destinations, func(ds []mailbox.Destination) error {
			return destinationColumns.Write(m.Out, ds)
		}),
	}
}

// destinationColumns is a session's destinations table as a table: the
// target is a chat's channel:platform or an agent group.
var destinationColumns = cli.Columns[mailbox.Destination]{
	Header: []string{"NAME", "TYPE", "TARGET", "DISPLAY NAME"},
	Cells: func(d mailbox.Destination) []string {
		target := d.AgentGroupID
		if d.Type == mailbox.DestinationChannel {
			target = d.ChannelType + ":" + d.PlatformID
		}
		return []string{d.Name, d.Type, target, cli.OrDash(d.DisplayName)}
	},
}

// routingView is what `agent routing` shows.
type routingView struct {
	Session mailbox.Routing `json:"session_routing"`
	// Default is where a send without a target goes; empty with Error
	// saying why when there is none.
	Default *mailbox.Routing `json:"default,omitempty"`
	Error   string           `json:"default_error,omitempty"`
}

func (m *group) agentRoutingCmd(open openAgentFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "routing",
		Short: "Show the session's own chat and where a send without a target goes",
		Long: `routing prints the session_routing row (the chat this session belongs to:
channel, platform id, thread) and the default target of send: that chat, or
the only destination when the session has no chat of its own.`,
		Example: `  sessiondb mailbox agent routing
  sessiondb mailbox agent routing --json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: agentView(m, open, readRouting, func(v routingView) error {
			fmt.Fprintf(m.Out, "session: %s\n", cli.PrintableLine(routeText(v.Session)))
			if v.Default != nil {
				fmt.Fprintf(m.Out, "default: %s\n", cli.PrintableLine(routeText(*v.Default)))
			} else {
				fmt.Fprintf(m.Out, "default: none (%s)\n", cli.PrintableLine(v.Error))
			}
			return nil
		}),
	}
}

// readRouting is what `agent routing` shows: the session's own routing and
// where a send without a target goes, or why nowhere. (The agent comes
// first, as the receiver of the methods agentView takes.)
func readRouting(a *mailbox.Agent, ctx context.Context) (v routingView, err error) {
	if v.Session, err = a.SessionRouting(ctx); err != nil {
		return v, err
	}
	d, err := a.RouteTo(ctx, "")
	switch {
	case err == nil:
		v.Default = &d
	case sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND:
		v.Error = err.Error()
	default:
		return v, err
	}
	return v, nil
}
