// Package host holds `sessiondb host`: the mailbox host daemon in the foreground.
package host

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/httpguard"
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
		central, listen, hostID, token    string
		dmOpener                          string
		poll, sweep, deliverTimeout       time.Duration
		expire, leaseTTL                  time.Duration
		sharedGID, workers                int
	)
	c := &cobra.Command{
		Use:   "host --data DIR [--central PATH] [--deliver exec:CMD|webhook:URL] [--wake exec:CMD]",
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

--dm-opener exec:CMD runs CMD once per DM not yet known, with
{"channel_type","handle"} as one JSON line on stdin (and SESSIONDB_DM_CHANNEL,
SESSIONDB_DM_HANDLE set); it prints the DM chat's platform id as its last
line (plain, or {"platform_id":"..."}; {"error":"..."} or a non-zero exit:
unreachable now). --dm-opener webhook:URL POSTs the same JSON and reads the
same answer from a 2xx. It is asked for every channel (answer the handle
itself where it is the DM chat); its answers are cached in user_dms.

--wake exec:CMD starts CMD with the session folder as its last argument and
SESSIONDB_AGENT_GROUP, SESSIONDB_SESSION and SESSIONDB_SESSION_DIR set; while it
runs it is the session's container. Its output goes to standard error, each
line prefixed with [wake GROUP/SESSION] and control characters escaped. Without --wake, agents run on their own
and count as alive while their .heartbeat is fresh.

--listen ADDR (a socket path or a loopback host:port) serves Prometheus
metrics at /metrics: rows appended by the router, events by outcome,
deliveries by result, failed sweeps and drains, containers stopped as stuck,
sessions stuck and rows due (queue depth) as the last sweep saw them. On
loopback TCP every web page the browser opens can reach the address, so
there it answers only to a loopback Host (127.0.0.1, [::1], localhost).

One host per data root: the host locks <data>/.sessiondb-host.lock while
it runs, and a second host on the same --data is refused, naming the pid
that holds it. The kernel drops the lock when the host dies, even by
SIGKILL, so the next host starts at once.

--central PATH connects the host to the control plane: the central registry
at PATH (a NanoClaw data/v2.db; created when missing). Then the host also
  - serves the router's event endpoint (--listen, by default the socket
    <data>/host.sock, which only your user can open): chat events and card
    clicks posted there are routed into the sessions' mailboxes and wake
    them (see ` + "`sessiondb route`" + `). On loopback TCP
    (--listen 127.0.0.1:PORT) a POST needs the host's token (--token, else
    $SESSIONDB_HOST_TOKEN, else one is made), a JSON content type and no
    other web page's origin; the token is written to
    <data>/.sessiondb-host.token (0600) while the host runs, where
    ` + "`sessiondb route`" + ` finds it;
  - writes each session's session_routing and destinations before its
    container starts, and records the spawn (container_status, last_active);
  - checks every outbound message against the registry: a session may send
    to its own chat and to its agent group's destinations only; a refused
    send fails at once and the agent is told in its inbound;
  - records ask_question cards for their clicks and sends approval cards
    (unknown senders and chats, install_packages, add_mcp_server) to an
    admin's DM through --deliver;
  - finds that DM: on Telegram, WhatsApp, iMessage, email and Matrix it is
    the admin's handle; on Discord, Slack, Teams, Webex and Google Chat the
    platform must open it, which --dm-opener asks the chat adapter to do
    (without it an admin there cannot be sent cards, and nothing is cached);
  - expires unanswered question cards (after 5 minutes) and action
    approvals (after 7 days) every --expire-every, telling the agents.

Several hosts, one registry: hosts on several machines (each with its own
--data) share a PostgreSQL registry (--central postgres://...). Each needs
its own --host-id (default: the machine's name and the data root). A
session is served by one host at a time, under a lease the host renews
every --lease-ttl/3: that host alone writes its mailbox, wakes it and
delivers its messages. Each event is routed by the first host that takes
it; a message for a session another host serves is handed to that host
through the registry. When a host dies, another takes over its sessions
once their leases run out (a fresh mailbox on the new host); on a clean stop
its leases are handed back at once. A registry in a file (NanoClaw's
v2.db) serves one host: a second host on the same file is refused.

On stop, no new delivery starts, one in flight finishes and is recorded, and
the containers started by --wake are stopped (SIGTERM, then SIGKILL).

The log goes to stderr, one line per event; with --json each line is a JSON
object.`,
		Example: `  # a mailbox host only
  sessiondb host --data ~/.sessiondb/v2-sessions --deliver exec:./send.sh

  # the same, logging JSON lines
  sessiondb --json host --data ~/.sessiondb/v2-sessions --deliver exec:./send.sh 2> host.jsonl

  # with the control plane: route events in, agents started by ./agent.sh
  sessiondb host --central ~/.sessiondb/v2.db --data ~/.sessiondb/v2-sessions \
      --deliver exec:./send.sh --wake exec:./agent.sh

  # admins on Slack: open their DM through the adapter's service
  sessiondb host --central ~/.sessiondb/v2.db --data ~/.sessiondb/v2-sessions \
      --deliver webhook:http://127.0.0.1:8088/send --dm-opener webhook:http://127.0.0.1:8088/open-dm

  # the event endpoint on loopback TCP; scripts send the token it wrote
  sessiondb host --central ~/.sessiondb/v2.db --data ~/.sessiondb/v2-sessions --listen 127.0.0.1:7070
  curl -H "Authorization: Bearer $(cat ~/.sessiondb/v2-sessions/.sessiondb-host.token)" \
      -H 'Content-Type: application/x-ndjson' --data-binary @events.jsonl http://127.0.0.1:7070/v1/route`,

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
			tokenGiven := token != ""
			if !tokenGiven {
				token = os.Getenv(hostd.TokenEnv)
			}
			if tokenGiven && (central == "" || listen == "off" || listen == "" || hostd.IsSocket(listen)) {
				return sessiondb.Errorf(sessiondb.EINVALID, "--token guards the event endpoint on a TCP --listen (with --central); a socket needs none: its mode lets only your user in")
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "--log-level %q: want debug, info, warn or error", logLevel)
			}
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return sessiondb.Errorf(sessiondb.EINVALID, "--tz %q: not an IANA time zone (%v)", tz, err)
			}
			// One host per data root, before anything is opened: a second
			// host would deliver every message again and reset the
			// registry's view of the first one's containers.
			rootLock, err := hostd.LockRoot(data)
			if err != nil {
				return err
			}
			defer rootLock.Close()
			var handler slog.Handler = slog.NewTextHandler(g.Err, &slog.HandlerOptions{Level: level})
			if g.JSON {
				handler = slog.NewJSONHandler(g.Err, &slog.HandlerOptions{Level: level})
			}
			log := slog.New(handler)
			layout := mailbox.Layout{Root: data}
			// The host bounds each delivery too; a longer --deliver-timeout
			// raises that bound rather than being cut by it.
			h, err := mailbox.NewHost(mailbox.HostOptions{Layout: layout, Now: g.Now, Location: loc, Logger: log, SharedGID: sharedGID,
				OpTimeout: max(deliverTimeout, mailbox.DefaultOpTimeout)})
			if err != nil {
				return err
			}
			o := hostd.Config{Logger: log, Poll: poll, FullSweep: sweep, DrainWorkers: workers, ExpiryEvery: expire, RootLock: rootLock}
			if deliver != "" {
				if o.Deliverer, err = hostd.NewDeliverer(deliver, layout, deliverTimeout); err != nil {
					return sessiondb.Wrap(sessiondb.EINVALID, err, "--deliver")
				}
			}
			if wake != "" {
				cmd, ok := strings.CutPrefix(wake, "exec:")
				if !ok {
					return sessiondb.Errorf(sessiondb.EINVALID, "--wake %s: want exec:CMD", hostd.SchemeOnly(wake))
				}
				w, err := hostd.NewExecWaker(cmd, layout, hostd.ExecWakerOptions{Output: g.Err, Logger: log})
				if err != nil {
					return err
				}
				o.Waker = w
			}
			if central == "" {
				if dmOpener != "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--dm-opener needs --central: only the control plane sends cards to DMs")
				}
				var metrics *sdbhttp.HostMetrics
				if listen != "" && listen != "off" {
					metrics = sdbhttp.NewHostMetrics()
					o.Observer = metrics
				}
				d, err := hostd.New(h, o)
				if err != nil {
					return err
				}
				if metrics != nil {
					// Without the control plane --listen serves the
					// metrics alone.
					return serveWhileRunning(c.Context(), listen, hostMux(nil, metrics), "", func() error {
						log.Info("mailbox host running", "data", data, "deliver", redactSpec(deliver), "wake", redactSpec(wake), "poll", poll, "tz", loc.String(), "metrics", listen)
						return d.Run(c.Context())
					})
				}
				log.Info("mailbox host running", "data", data, "deliver", redactSpec(deliver), "wake", redactSpec(wake), "poll", poll, "tz", loc.String())
				return d.Run(c.Context())
			}
			if leaseTTL <= 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--lease-ttl must be a positive duration")
			}
			if hostID == "" {
				hostID = defaultHostID(data)
			}
			if err := sessiondb.CheckHost(hostID); err != nil {
				return sessiondb.Wrap(sessiondb.EINVALID, err, "--host-id")
			}
			lease := hostd.LeaseConfig{Host: hostID, TTL: leaseTTL, Now: g.Now, Logger: log}
			var dms sessiondb.DMOpener
			if dmOpener != "" {
				if dms, err = hostd.NewDMOpener(dmOpener, 0); err != nil {
					return sessiondb.Wrap(sessiondb.EINVALID, err, "--dm-opener")
				}
			}
			return g.runCentral(c.Context(), central, listen, token, lease, h, o, dms, log, func() {
				log.Info("mailbox host running", "central", errtext.RedactPassword(central), "data", data, "deliver", redactSpec(deliver), "wake", redactSpec(wake), "dm_opener", redactSpec(dmOpener), "poll", poll, "tz", loc.String())
			})
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", "", "data root holding <group>/<session> mailbox folders (created if missing)")
	f.StringVar(&deliver, "deliver", "", "deliverer: exec:CMD or webhook:URL")
	f.DurationVar(&deliverTimeout, "deliver-timeout", 0, "longest one delivery may take before it counts as failed and is retried (default 10s)")
	f.StringVar(&wake, "wake", "", "waker: exec:CMD, run with the session folder as its last argument")
	f.StringVar(&dmOpener, "dm-opener", "", "with --central: opens an admin's DM on platforms where it is not their handle (Discord, Slack, ...): exec:CMD or webhook:URL")
	f.DurationVar(&poll, "poll", hostd.DefaultPoll, "change-detection interval (and delivery poll while a container runs)")
	f.DurationVar(&sweep, "sweep", hostd.DefaultFullSweep, "interval of the full sweep over every session")
	f.StringVar(&tz, "tz", "UTC", "IANA time zone recurring tasks are computed in, e.g. Europe/Berlin")
	f.IntVar(&sharedGID, "shared-gid", 0, "make session folders 0770 and files 0660 for this group (container runs as another uid)")
	f.IntVar(&workers, "workers", hostd.DefaultDrainWorkers, "sessions delivered at once")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&central, "central", "", "central registry, a NanoClaw data/v2.db or a postgres:// URL: routes events, checks sends, sends approval cards")
	f.StringVar(&token, "token", "", "with --central and a TCP --listen: the token a POST to the event endpoint must carry (default $"+hostd.TokenEnv+", else one is made); written to <data>/"+sessiondb.HostTokenFile+" while the host runs")
	f.StringVar(&listen, "listen", "", "a socket path or a loopback host:port serving Prometheus metrics at /metrics and, with --central, the event endpoint (with --central the default is <data>/host.sock; off to serve none)")
	f.DurationVar(&expire, "expire-every", hostd.DefaultExpiryEvery, "with --central: interval of the question and approval expiry sweeps")
	f.StringVar(&hostID, "host-id", "", "with a postgres:// --central: this host's name among the hosts sharing the registry (default <machine>:<data root>)")
	f.DurationVar(&leaseTTL, "lease-ttl", hostd.DefaultLeaseTTL, "with a postgres:// --central: how long a dead host's sessions wait before another host takes them")
	return c
}

// runCentral runs the daemon with the control plane: the registry at
// central, the router over it, and the event endpoint on listen until ctx
// ends.
func (g *group) runCentral(ctx context.Context, central, listen, token string, lease hostd.LeaseConfig, h *mailbox.Host, o hostd.Config, dms sessiondb.DMOpener, log *slog.Logger, started func()) error {
	reg, err := g.OpenRegistry(ctx, central, cli.CreateStore)
	if err != nil {
		return err
	}
	defer reg.Close()
	metrics := sdbhttp.NewHostMetrics()
	o.Observer = metrics
	rc := hostd.RouterConfig{Registry: reg, Host: h, Deliverer: o.Deliverer, DMs: dms, Logger: log, Observer: metrics}
	if svc, ok := reg.(sessiondb.HostLeaseService); ok {
		lease.Service = svc
		if rc.Leases, err = hostd.NewLeases(lease); err != nil {
			return err
		}
		log.Info("leases: sharing the registry with other hosts", "host_id", lease.Host, "lease_ttl", lease.TTL)
	} else {
		l, err := hostd.LockRegistryFile(central)
		if err != nil {
			return err
		}
		defer l.Close()
	}
	r, err := hostd.NewRouter(rc)
	if err != nil {
		return err
	}
	o.Router = r
	d, err := hostd.New(h, o)
	if err != nil {
		return err
	}
	if listen == "" {
		listen = filepath.Join(h.Layout().Root, hostd.DefaultSocketName)
	}
	if listen == "off" {
		started()
		return d.Run(ctx)
	}
	root := h.Layout().Root
	if hostd.IsSocket(listen) {
		token = ""
	} else {
		// On TCP every web page the user opens can reach the endpoint:
		// a POST needs this token, which route and scripts on this
		// machine read from the token file.
		if token == "" {
			if token, err = httpguard.MakeToken(); err != nil {
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "make the event endpoint's token")
			}
		}
		if err := hostd.WriteTokenFile(root, token); err != nil {
			return err
		}
		defer hostd.RemoveTokenFile(root)
	}
	return serveWhileRunning(ctx, listen, hostMux(r, metrics), token, func() error {
		if token != "" {
			log.Info("router: serving events", "listen", listen, "token_file", hostd.TokenFile(root))
		} else {
			log.Info("router: serving events", "listen", listen)
		}
		started()
		return d.Run(ctx)
	})
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

// defaultHostID names this host among those sharing a registry: the
// machine's name and the data root, so two hosts on one machine differ.
func defaultHostID(data string) string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "localhost"
	}
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	return name + ":" + data
}

// hostMux is what --listen serves: the router's event endpoint (when there
// is a router) and the daemon's metrics at /metrics.
func hostMux(r *hostd.Router, metrics *sdbhttp.HostMetrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	if r != nil {
		mux.Handle("/", hostd.Handler(r))
	} else {
		mux.HandleFunc("GET /v1/health", hostd.Health)
	}
	return mux
}

// serveWhileRunning serves mux on listen while run runs, and stops
// serving when it returns; a TCP listener asks token of a POST.
func serveWhileRunning(ctx context.Context, listen string, mux http.Handler, token string, run func() error) error {
	l, err := hostd.Listen(listen)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- hostd.ServeHandler(sctx, l, mux, hostd.ServeOptions{Grace: 10 * time.Second, Token: token})
	}()
	err = run()
	stop()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
