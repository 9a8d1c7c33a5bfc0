// Package route holds `sessiondb route`: chat events and card clicks into
// the control plane's router, through the running host or in this
// process.
package route

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Commands returns the `route` command.
func Commands(f *cli.Factory) []*cobra.Command {
	return []*cobra.Command{(&group{Factory: f}).routeCmd()}
}

type group struct {
	*cli.Factory
}

func (g *group) routeCmd() *cobra.Command {
	var (
		central, data, host, deliver, token string
		dmOpener                            string
		direct                              bool
	)
	c := &cobra.Command{
		Use:   "route [FILE|-]",
		Short: "Route chat events and card clicks (JSON lines) into the agents' sessions",
		Long: `route reads one JSON object per line (from FILE, or standard input when FILE
is - or absent) and routes each through the control plane, as a chat platform's
adapter would hand it to NanoClaw's host: a message goes through the chat's
access rules and wirings to the sessions of the agent groups that answer it
(a row in their inbound.db, then a wake); a click answers the card it names.

A message:
  {"channel_type":"telegram","platform_id":"-100123","message_id":"m1",
   "sender":{"id":"42","name":"Ann"},"text":"@bot hello","is_group":true,
   "is_mention":true}
  optional: thread_id (an adapter without threads sends none), mentions,
  attachments [{type,name,mimeType,data(base64)}], chat_name, timestamp.
  A DM (is_group false) counts as a mention.
A click on a card's button (the button data is ncq:<card id>:<option index>):
  {"type":"click","channel_type":"telegram","user_id":"42",
   "action":"ncq:nsa-1747000000000-abc123:0"}
  or "card_id" with "option" (the index) or "value".

Where it goes: with --host ADDR, to the host serving that endpoint; else to the
host serving <data>/host.sock when one answers (it wakes the sessions at once);
else (or with --direct) the events are routed in this process over --central
and --data, and a running host's next sweep wakes the sessions. Approval cards
need a deliverer: the host's, or --deliver when routing directly (so does the
answer to a refused admin command); and an
admin's DM on Discord, Slack, Teams, Webex or Google Chat needs a DM opener:
the host's, or --dm-opener (see ` + "`sessiondb host --help`" + ` for both hooks).
Without one such an admin cannot be sent a card: the line's result warns why,
and no DM is cached. A host's endpoint on loopback TCP takes events only with
its token: --token, else $SESSIONDB_HOST_TOKEN, else the token file the host
wrote in --data (.sessiondb-host.token).

Each line gets one result, printed as it is routed: its outcome (routed: a
row was written now; duplicate: a redelivered event, its rows already there,
nothing written; failed; dropped with the audit's reason; ignored; filtered
or denied by the command gate, with the command), the
sessions it reached, the approval it waits on; --json prints one JSON object per line. A bad line is
reported with the field at fault and does not stop the others; the exit status
is that of the first line that failed.`,
		Example: `  # route one message through the running host
  echo '{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","sender":{"id":"42"},"text":"hi"}' | sessiondb route

  # through a host serving on loopback TCP (its token is read from --data)
  sessiondb route --host 127.0.0.1:7070 events.jsonl

  # replay a file of events without a host, one JSON result per line
  sessiondb route --direct --central v2.db --data v2-sessions --json events.jsonl

  # replay a file without a host, cards to ./send.sh, Slack DMs opened by ./open-dm.sh
  sessiondb route --direct --deliver exec:./send.sh --dm-opener exec:./open-dm.sh events.jsonl

  # an admin clicks Allow on an unknown-sender card
  echo '{"type":"click","channel_type":"telegram","user_id":"1","action":"ncq:nsa-1747000000000-abc123:0"}' | sessiondb route`,
		Args: cli.RangeArgs(0, 1, "at most one file (- for standard input)"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			in := g.In
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return sessiondb.Wrap(sessiondb.ENOTFOUND, err, "open %s", args[0])
				}
				defer f.Close()
				in = f
			}
			if host != "" && direct {
				return sessiondb.Errorf(sessiondb.EINVALID, "--host and --direct exclude each other")
			}
			dataRoot, err := cli.DataPath(data)
			if err != nil {
				return err
			}
			p := &printer{g: g}
			if host == "" && !direct {
				if sock := filepath.Join(dataRoot, hostd.DefaultSocketName); hostd.Reachable(ctx, sock) {
					host = sock
				}
			}
			if host != "" {
				if deliver != "" || dmOpener != "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--deliver and --dm-opener are for --direct routing: the host at %s sends cards with its own", host)
				}
				if !hostd.IsSocket(host) {
					if token, err = endpointToken(token, dataRoot); err != nil {
						return err
					}
				} else if token != "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--token is for a host's TCP endpoint; its socket %s needs none", host)
				}
				if err := hostd.SendLines(ctx, host, token, in, p.emit); err != nil {
					return err
				}
				return p.done()
			}
			if err := g.direct(ctx, central, dataRoot, deliver, dmOpener, in, p.emit); err != nil {
				return err
			}
			return p.done()
		},
	}
	f := c.Flags()
	f.StringVar(&host, "host", "", "the host's event endpoint: a socket path or loopback host:port (default <data>/host.sock when a host answers there)")
	f.StringVar(&token, "token", "", "the token of a host's TCP endpoint (default $"+hostd.TokenEnv+", else the token file the host wrote in --data)")
	f.BoolVar(&direct, "direct", false, "route in this process even when a host is running")
	f.StringVar(&central, "central", "", "central registry for --direct (default $SESSIONDB_HOME/v2.db)")
	f.StringVar(&data, "data", "", "data root of the session mailboxes (default $SESSIONDB_HOME/v2-sessions)")
	f.StringVar(&deliver, "deliver", "", "for --direct: where approval cards go, exec:CMD or webhook:URL")
	f.StringVar(&dmOpener, "dm-opener", "", "for --direct: opens an admin's DM on platforms where it is not their handle (Discord, Slack, ...), exec:CMD or webhook:URL")
	return c
}

// endpointToken is the token to send to a host's TCP endpoint: the one
// given, else $SESSIONDB_HOST_TOKEN, else the one the host wrote in its
// data root ("" when none: the host then says what it wants).
func endpointToken(given, dataRoot string) (string, error) {
	if given != "" {
		return given, nil
	}
	if t := os.Getenv(hostd.TokenEnv); t != "" {
		return t, nil
	}
	t, _, err := hostd.ReadTokenFile(dataRoot)
	return t, err
}

// direct routes the lines of in in this process.
func (g *group) direct(ctx context.Context, central, data, deliver, dmOpener string, in io.Reader, emit func(hostd.LineResult) error) error {
	path, err := cli.CentralPath(central)
	if err != nil {
		return err
	}
	return g.WithRegistry(ctx, path, cli.WriteStore, func(reg sessiondb.Registry) error {
		log := g.WarnLogger()
		layout := mailbox.Layout{Root: data}
		h, err := mailbox.NewHost(mailbox.HostOptions{Layout: layout, Now: g.Now, Logger: log})
		if err != nil {
			return err
		}
		cfg := hostd.RouterConfig{Registry: reg, Host: h, Logger: log, Leases: hostd.NotServing(reg, "route --direct")}
		if deliver != "" {
			if cfg.Deliverer, err = hostd.NewDeliverer(deliver, layout, 0); err != nil {
				return err
			}
		}
		if dmOpener != "" {
			if cfg.DMs, err = hostd.NewDMOpener(dmOpener, 0); err != nil {
				return sessiondb.Wrap(sessiondb.EINVALID, err, "--dm-opener")
			}
		}
		r, err := hostd.NewRouter(cfg)
		if err != nil {
			return err
		}
		return r.RouteLines(ctx, in, emit)
	})
}

// printer prints each line's result as it comes and remembers the first
// failure for the exit status.
type printer struct {
	g          *group
	lines, bad int
	first      *hostd.LineResult
}

func (p *printer) emit(r hostd.LineResult) error {
	p.lines++
	if r.Error != "" {
		p.bad++
		if p.first == nil {
			rc := r
			p.first = &rc
		}
	}
	if p.g.JSON {
		b, err := json.Marshal(r)
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
		}
		_, err = fmt.Fprintf(p.g.Out, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(p.g.Out, cli.PrintableLine(Describe(r)))
	return err
}

// done turns the first failed line into the command's error.
func (p *printer) done() error {
	if p.first == nil {
		return nil
	}
	code := p.first.Code
	if code == "" {
		code = sessiondb.EINTERNAL
	}
	return sessiondb.Errorf(code, "%d of %d line(s) failed; the first, line %d: %s", p.bad, p.lines, p.first.Line, p.first.Error)
}

// Describe is one line's result in words: "line N: <message id> routed to
// ag/sess (engage, new); ag2/... (accumulate)", "line N: m1 duplicate:
// already in ag/sess (engage)", "line N: m2 dropped:
// unknown_sender_strict (waiting on approval nsa-...)", "line N: click
// nsa-... approved", "line N: error: ...".
func Describe(r hostd.LineResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d: ", r.Line)
	switch {
	case r.Message != nil:
		m := r.Message
		fmt.Fprintf(&b, "%s %s", m.MessageID, m.Outcome)
		var parts []string
		for _, d := range m.Deliveries {
			switch {
			case d.Error != "":
				parts = append(parts, fmt.Sprintf("%s: error: %s", d.AgentGroupID, d.Error))
			case d.SessionID == "":
				parts = append(parts, fmt.Sprintf("%s: %s (%s)", d.AgentGroupID, d.Outcome, d.Reason))
			default:
				what := string(d.Outcome)
				if d.SessionCreated {
					what += ", new session"
				}
				if d.Duplicate && m.Outcome != hostd.RouteDuplicate {
					what += ", already there"
				}
				if d.Woken {
					what += ", woken"
				}
				if d.CommandGate != "" {
					what += ", " + d.Command + " " + d.CommandGate
				}
				parts = append(parts, fmt.Sprintf("%s/%s (%s)", d.AgentGroupID, d.SessionID, what))
			}
		}
		switch {
		case len(parts) > 0 && (m.Outcome == hostd.RouteRouted || m.Outcome == hostd.RouteFailed):
			b.WriteString(" to " + strings.Join(parts, "; "))
		case len(parts) > 0 && m.Outcome == hostd.RouteDuplicate:
			b.WriteString(": already in " + strings.Join(parts, "; "))
		case m.Reason != "":
			b.WriteString(": " + m.Reason)
		}
		if m.ApprovalID != "" {
			fmt.Fprintf(&b, " (waiting on approval %s)", m.ApprovalID)
		}
		for _, w := range m.Warnings {
			b.WriteString("; warning: " + w)
		}
	case r.Click != nil:
		fmt.Fprintf(&b, "click %s %s", r.Click.CardID, r.Click.Outcome)
		if r.Click.Replay != nil {
			fmt.Fprintf(&b, "; %s %s", r.Click.Replay.MessageID, r.Click.Replay.Outcome)
		}
		for _, w := range r.Click.Warnings {
			b.WriteString("; warning: " + w)
		}
	}
	if r.Error != "" {
		if r.Message != nil || r.Click != nil {
			b.WriteString("; ")
		}
		b.WriteString("error: " + r.Error)
	}
	return b.String()
}
