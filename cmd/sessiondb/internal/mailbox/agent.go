package mailbox

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentCmd is `mailbox agent ...`: the container side from a shell, so a
// script in any language can be an agent.
func (m *group) agentCmd() *cobra.Command {
	var sf sessionFlags
	var poll time.Duration
	c := &cobra.Command{
		Use:   "agent",
		Short: "Act as a session's agent from a shell: poll, ack, send, state",
		Long: `The agent side of a session mailbox, one command per step, so a shell loop
(or any program that can run commands) can be an agent:

  sessiondb mailbox agent poll --wait      # blocks until a batch arrives
  sessiondb mailbox agent send --reply-to ID --text "..."
  sessiondb mailbox agent ack ID...        # completed (or --status failed)

The session is --dir FOLDER, --data/--group/--session, or $SESSIONDB_SESSION_DIR
(set by the host's waker). The agent writes only outbound.db and reads
inbound.db read-only.`,
	}
	sf.addTo(c.PersistentFlags())
	c.PersistentFlags().DurationVar(&poll, "poll", mailbox.DefaultPollInterval, "polling fallback of --wait")
	open := func(ctx context.Context) (*mailbox.Agent, error) {
		root, ref, err := sf.resolve(true)
		if err != nil {
			return nil, err
		}
		if poll <= 0 {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "--poll must be positive")
		}
		dir, err := mailbox.Layout{Root: root}.SessionDir(ref)
		if err != nil {
			return nil, err
		}
		return mailbox.OpenAgent(ctx, dir, mailbox.AgentOptions{Now: m.Now, PollInterval: poll})
	}
	c.AddCommand(m.agentPollCmd(open), m.agentAckCmd(open), m.agentSendCmd(open), m.agentStateCmd(open))
	return c
}

type openAgentFunc func(ctx context.Context) (*mailbox.Agent, error)

func (m *group) agentPollCmd(open openAgentFunc) *cobra.Command {
	var (
		wait, first, claim bool
		limit              int
		timeout            time.Duration
	)
	c := &cobra.Command{
		Use:   "poll [--wait] [--limit N] [--claim]",
		Short: "Print the next batch of inbound messages (oldest first)",
		Long: `poll prints the next batch: one line per message, ID<TAB>SEQ<TAB>KIND<TAB>TEXT
(text flattened to one line), or a JSON array with --json. An empty batch
prints nothing (--json: []). --wait blocks until a batch arrives (or
--timeout passes, or Ctrl-C). Polling does not claim the rows: they come back
until acked; --claim marks them processing, as a container does. A batch
touches .heartbeat, so the host sees the agent working.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--limit must be ≥ 0")
			}
			ctx := c.Context()
			a, err := open(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			// --timeout bounds the waiting only, never a read or the open,
			// so a slow disk cannot turn "nothing yet" into an error.
			waitCtx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				waitCtx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			var batch []mailbox.InboundRow
			for {
				batch, err = a.Poll(ctx, mailbox.PollOptions{FirstPoll: first, Limit: limit})
				if err != nil && sessiondb.ErrorCode(err) != sessiondb.EBUSY {
					return err
				}
				if len(batch) > 0 || !wait || waitCtx.Err() != nil {
					break
				}
				if err := a.WaitInbound(waitCtx); err != nil {
					if ctx.Err() != nil {
						return err
					}
					// --timeout passed: one last look, then an empty batch.
				}
			}
			if len(batch) > 0 {
				if err := a.TouchHeartbeat(); err != nil {
					return err
				}
				if claim {
					ids := make([]string, len(batch))
					for i, r := range batch {
						ids[i] = r.ID
					}
					if err := a.MarkProcessing(c.Context(), ids...); err != nil {
						return err
					}
				}
			}
			if m.JSON {
				if batch == nil {
					batch = []mailbox.InboundRow{}
				}
				return m.PrintJSON(batch)
			}
			for _, r := range batch {
				fmt.Fprintf(m.Out, "%s\t%d\t%s\t%s\n", cli.PrintableLine(r.ID), r.Seq, cli.PrintableLine(r.Kind), summarize(r.Content, 0))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "block until a batch arrives")
	c.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (empty batch, exit 0)")
	c.Flags().IntVar(&limit, "limit", mailbox.DefaultPollLimit, "most messages per batch")
	c.Flags().BoolVar(&first, "first", false, "first poll of a fresh container: include on_wake rows")
	c.Flags().BoolVar(&claim, "claim", false, "mark the batch processing")
	return c
}

func (m *group) agentAckCmd(open openAgentFunc) *cobra.Command {
	var status string
	c := &cobra.Command{
		Use:   "ack ID... [--status completed|failed|processing]",
		Short: "Acknowledge inbound messages (default completed)",
		Args:  cli.MinimumArgs(1, "at least one message id"),
		RunE: func(c *cobra.Command, ids []string) error {
			a, err := open(c.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			switch status {
			case mailbox.AckCompleted:
				err = a.MarkCompleted(c.Context(), ids...)
			case mailbox.AckFailed:
				err = a.MarkFailed(c.Context(), ids...)
			case mailbox.AckProcessing:
				err = a.MarkProcessing(c.Context(), ids...)
			default:
				return sessiondb.Errorf(sessiondb.EINVALID, "--status %q: want completed, failed or processing", status)
			}
			if err != nil {
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
		},
	}
	c.Flags().StringVar(&status, "status", mailbox.AckCompleted, "completed, failed or processing")
	return c
}

func (m *group) agentSendCmd(open openAgentFunc) *cobra.Command {
	var (
		mf                 messageFlags
		to, replyTo, after string
		files              []string
	)
	c := &cobra.Command{
		Use:   "send (--text T | --content JSON) [--reply-to ID | --to NAME]",
		Short: "Write an outbound message for the host to deliver",
		Long: `send writes one outbound row. Where it goes: --channel-type/--platform-id
when given; else --to NAME (a destination); else the routing of the inbound
message named by --reply-to; else the session's default (its routing row, or
its only destination). --file copies files into outbox/<id>/ and lists them
in the content's "files".`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			a, err := open(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			now := m.Now()
			// Agent.Send lists the --file names in the content itself.
			raw, err := mf.body(map[string]any{"text": mf.text}, "--text or --content")
			if err != nil {
				return err
			}
			routing := mf.routing()
			switch {
			case !routing.IsZero():
			case to != "":
				d, err := a.Destination(ctx, to)
				if err != nil {
					return err
				}
				routing = d.Routing()
			case replyTo != "":
				r, err := a.InboundByID(ctx, replyTo)
				if err != nil {
					return err
				}
				routing = r.Routing
			}
			if routing.IsZero() {
				if routing, err = a.DefaultRouting(ctx); err != nil {
					return err
				}
			}
			id := mf.newID(now)
			msg := mailbox.OutboundMessage{ID: id, Kind: mf.kind, Content: raw, Routing: routing, InReplyTo: replyTo, Files: files}
			if after != "" {
				if msg.DeliverAfter, err = parseWhen("after", after, now); err != nil {
					return err
				}
			}
			seq, err := a.Send(ctx, msg)
			if err != nil {
				return err
			}
			if err := a.TouchHeartbeat(); err != nil {
				return err
			}
			if m.JSON {
				return m.PrintJSON(map[string]any{"id": id, "seq": seq})
			}
			fmt.Fprintf(m.Out, "sent %s as seq %d\n", id, seq)
			return nil
		},
	}
	mf.add(c, "message id (default msg-<ms>-<random>)", "message kind: chat, chat-sdk, system")
	f := c.Flags()
	f.StringVar(&to, "to", "", "destination name")
	f.StringVar(&replyTo, "reply-to", "", "inbound message id this answers (in_reply_to)")
	f.StringVar(&after, "after", "", "deliver after this time (RFC 3339) or duration from now (+10m)")
	f.StringArrayVar(&files, "file", nil, "attach a file (repeatable)")
	return c
}

func (m *group) agentStateCmd(open openAgentFunc) *cobra.Command {
	c := &cobra.Command{
		Use:   "state (get KEY | set KEY VALUE | delete KEY | list)",
		Short: "Read and write the agent's session_state key/value table",
		Args:  cli.RangeArgs(1, 3, "get KEY, set KEY VALUE, delete KEY or list"),
		RunE: func(c *cobra.Command, args []string) error {
			want := map[string]int{"get": 2, "set": 3, "delete": 2, "list": 1}
			n, ok := want[args[0]]
			if !ok {
				return sessiondb.Errorf(sessiondb.EINVALID, "state %q: want get, set, delete or list", args[0])
			}
			if len(args) != n {
				return sessiondb.Errorf(sessiondb.EINVALID, "state %s takes %d argument(s)", args[0], n-1)
			}
			ctx := c.Context()
			a, err := open(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			switch args[0] {
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
				return a.StateSet(ctx, args[1], args[2])
			case "delete":
				return a.StateDelete(ctx, args[1])
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
		},
	}
	return c
}
