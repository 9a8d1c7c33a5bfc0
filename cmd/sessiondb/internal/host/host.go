// Package host holds `sessiondb host`: the mailbox host daemon in the foreground.
package host

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Commands returns the `host` command.
func Commands(f *cli.Factory) []*cobra.Command {
	return []*cobra.Command{(&group{Factory: f}).hostCmd()}
}

// group is what the host command is built from.
type group struct {
	*cli.Factory
}

// hostCmd is `sessiondb host`: the mailbox host daemon in the foreground.
func (g *group) hostCmd() *cobra.Command {
	var (
		data, deliver, wake, tz, logLevel string
		poll, sweep, deliverTimeout       time.Duration
		sharedGID, workers                int
	)
	c := &cobra.Command{
		Use:   "host --data DIR [--deliver exec:CMD|webhook:URL] [--wake exec:CMD]",
		Short: "Run the mailbox host daemon over every session folder under --data",
		Long: `host runs the host side of every session mailbox under --data until Ctrl-C
(SIGINT) or SIGTERM: it syncs the agents' acks, wakes a session with due work
(--wake), stops stuck containers, resets a dead container's claims, advances
recurring tasks, expires orphan system rows, and delivers what agents write
(--deliver). A change to a session's files is acted on within --poll; every
--sweep all sessions are looked at whether they changed or not.

--deliver exec:CMD runs CMD (under /bin/sh -c) once per outbound message with
the message as one JSON line on stdin; it answers with a last stdout line
{"ok":true,"platform_message_id":"..."} or {"ok":false,"error":"...",
"permanent":true}, or just exits 0 (delivered) / non-zero (retried).
--deliver webhook:URL POSTs the message JSON; 2xx is delivered, 4xx (not 408
or 429) fails it for good, anything else is retried, redirects included
(they are not followed). A delivery that takes longer than --deliver-timeout
(a hanging receiver) is a failure and retried. The log and the status name the webhook by scheme
and host only and an exec command by its program only, as either may hold a
secret.
Without --deliver, messages stay undelivered (nothing is lost).

--wake exec:CMD starts CMD with the session folder as its last argument and
SESSIONDB_AGENT_GROUP, SESSIONDB_SESSION and SESSIONDB_SESSION_DIR set; while it
runs it is the session's container. Without --wake, agents run on their own
and count as alive while their .heartbeat is fresh.

On stop, no new delivery starts, one in flight finishes and is recorded, and
the containers started by --wake are stopped (SIGTERM, then SIGKILL).`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if data == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "--data is required: the folder holding <group>/<session> mailboxes")
			}
			if poll <= 0 || sweep <= 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--poll and --sweep must be positive durations")
			}
			if deliverTimeout < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--deliver-timeout must not be negative")
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "--log-level %q: want debug, info, warn or error", logLevel)
			}
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "--tz %q: not an IANA time zone (%v)", tz, err)
			}
			if err := os.MkdirAll(data, 0o700); err != nil {
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "create --data %s", data)
			}
			log := slog.New(slog.NewTextHandler(g.Err, &slog.HandlerOptions{Level: level}))
			layout := mailbox.Layout{Root: data}
			// The host bounds each delivery too; a longer --deliver-timeout
			// raises that bound rather than being cut by it.
			h, err := mailbox.NewHost(mailbox.HostOptions{Layout: layout, Now: g.Now, Location: loc, Logger: log, SharedGID: sharedGID,
				OpTimeout: max(deliverTimeout, mailbox.DefaultOpTimeout)})
			if err != nil {
				return err
			}
			o := hostd.Config{Logger: log, Poll: poll, FullSweep: sweep, DrainWorkers: workers}
			if deliver != "" {
				if o.Deliverer, err = deliverer(deliver, layout, deliverTimeout); err != nil {
					return err
				}
			}
			if wake != "" {
				cmd, ok := strings.CutPrefix(wake, "exec:")
				if !ok {
					return sessiondb.Errorf(sessiondb.EINVALID, "--wake %s: want exec:CMD", schemeOnly(wake))
				}
				w, err := hostd.NewExecWaker(cmd, layout, hostd.ExecWakerOptions{Output: g.Err, Logger: log})
				if err != nil {
					return err
				}
				o.Waker = w
			}
			d, err := hostd.New(h, o)
			if err != nil {
				return err
			}
			log.Info("mailbox host running", "data", data, "deliver", redactSpec(deliver), "wake", redactSpec(wake), "poll", poll, "tz", loc.String())
			return d.Run(c.Context())
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", "", "data root holding <group>/<session> mailbox folders (created if missing)")
	f.StringVar(&deliver, "deliver", "", "deliverer: exec:CMD or webhook:URL")
	f.DurationVar(&deliverTimeout, "deliver-timeout", 0, "longest one delivery may take before it counts as failed and is retried (default 10s)")
	f.StringVar(&wake, "wake", "", "waker: exec:CMD, run with the session folder as its last argument")
	f.DurationVar(&poll, "poll", hostd.DefaultPoll, "change-detection interval (and delivery poll while a container runs)")
	f.DurationVar(&sweep, "sweep", hostd.DefaultFullSweep, "interval of the full sweep over every session")
	f.StringVar(&tz, "tz", "UTC", "IANA time zone recurring tasks are computed in, e.g. Europe/Berlin")
	f.IntVar(&sharedGID, "shared-gid", 0, "make session folders 0770 and files 0660 for this group (container runs as another uid)")
	f.IntVar(&workers, "workers", hostd.DefaultDrainWorkers, "sessions delivered at once")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return c
}

// redactSpec names a --deliver or --wake value for the log without what
// may be secret in it: a webhook by scheme and host, a command by its
// program (errtext.RedactURL, RedactCommand). "-" when unset.
func redactSpec(spec string) string {
	if u, ok := strings.CutPrefix(spec, "webhook:"); ok {
		return "webhook:" + errtext.RedactURL(u)
	}
	if c, ok := strings.CutPrefix(spec, "exec:"); ok {
		return "exec:" + errtext.RedactCommand(c)
	}
	return cli.OrDash(errtext.RedactCommand(spec))
}

// deliverer parses --deliver; timeout (0: the deliverer's default) bounds
// one delivery.
func deliverer(spec string, layout mailbox.Layout, timeout time.Duration) (mailbox.Deliverer, error) {
	if cmd, ok := strings.CutPrefix(spec, "exec:"); ok {
		d, err := hostd.NewExecDeliverer(cmd, layout)
		if d != nil {
			d.Timeout = timeout
		}
		return d, err
	}
	if u, ok := strings.CutPrefix(spec, "webhook:"); ok {
		d, err := hostd.NewWebhookDeliverer(u)
		if d != nil {
			d.Timeout = timeout
		}
		return d, err
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "--deliver %s: want exec:CMD or webhook:URL", schemeOnly(spec))
}

// schemeOnly shows a --deliver or --wake value the command does not know
// by what comes before its first colon: the rest may be a secret.
func schemeOnly(spec string) string {
	scheme, _, found := strings.Cut(spec, ":")
	if !found {
		return "(no kind: prefix)"
	}
	return strconv.Quote(scheme + ":…")
}
