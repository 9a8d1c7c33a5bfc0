package mailbox

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentCmd is `mailbox agent ...`: the container side from a shell, so a
// script in any language can be a full agent.
func (m *group) agentCmd() *cobra.Command {
	var sf sessionFlags
	var poll time.Duration
	c := &cobra.Command{
		Use:   "agent",
		Short: "Act as a session's agent from a shell: poll, ack, send, look up, keep state",
		Long: `The agent side of a session mailbox, one command per step, so a shell loop
(or any program that can run commands) can be an agent, doing what NanoClaw's
container does:

  poll, pending            read the next batch; every due row
  ack, fail, acks          acknowledge messages; list the acks
  send                     chat, markdown, files, edits and reactions by seq,
                           questions, cards, agent-to-agent, host actions
  sent, lookup SEQ         the agent's own rows; what a seq names
  destinations, routing    where the agent may send, and its default
  state, tool, heartbeat   key/value state, the tool in flight, liveness

The session is --dir FOLDER, --data/--group/--session, or $SESSIONDB_SESSION_DIR
(set by the host's waker). The agent writes only outbound.db and reads
inbound.db read-only.`,
		Example: `  export SESSIONDB_SESSION_DIR=/tmp/mb/demo/s1
  sessiondb mailbox agent poll --wait --claim
  sessiondb mailbox agent send --reply-to ID --text "on it"
  sessiondb mailbox agent ack ID`,
	}
	sf.addTo(c.PersistentFlags())
	c.PersistentFlags().DurationVar(&poll, "poll", mailbox.DefaultPollInterval, "polling fallback of the waits (--wait)")
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
	c.AddCommand(
		m.agentPollCmd(open), m.agentPendingCmd(open),
		m.agentAckCmd(open, "ack"), m.agentAckCmd(open, "fail"), m.agentAcksCmd(open),
		m.agentSendCmd(open), m.agentSentCmd(open), m.agentLookupCmd(open),
		m.agentDestinationsCmd(open), m.agentRoutingCmd(open),
		m.agentStateCmd(open), m.agentToolCmd(open), m.agentHeartbeatCmd(open),
	)
	return c
}

type openAgentFunc func(ctx context.Context) (*mailbox.Agent, error)

// agentView is the RunE of a command that reads one value from the agent
// the flags name and prints it once the agent is closed: as JSON with
// --json, else with text. read is a method expression such as
// (*mailbox.Agent).Acks, hence the agent before the context.
func agentView[T any](m *group, open openAgentFunc, read func(*mailbox.Agent, context.Context) (T, error), text func(T) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		var v T
		err := withAgent(c.Context(), open, func(a *mailbox.Agent) (err error) {
			v, err = read(a, c.Context())
			return err
		})
		if err != nil {
			return err
		}
		if m.JSON {
			return m.PrintJSON(v)
		}
		return text(v)
	}
}

// agentList is agentView for a list, which --json prints as [] when empty.
func agentList[T any](m *group, open openAgentFunc, read func(*mailbox.Agent, context.Context) ([]T, error), text func([]T) error) func(*cobra.Command, []string) error {
	return agentView(m, open, func(a *mailbox.Agent, ctx context.Context) ([]T, error) {
		xs, err := read(a, ctx)
		return sessiondb.NonNil(xs), err
	}, text)
}

// withAgent runs fn on the agent the flags name, closed after it.
func withAgent(ctx context.Context, open openAgentFunc, fn func(a *mailbox.Agent) error) error {
	a, err := open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a)
}
