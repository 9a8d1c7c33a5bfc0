// Package serve holds `sessiondb serve`: the HTTP server (JSON API, web
// UI, live updates, MCP, metrics) over the history store and, when asked,
// the mailboxes, the central registry and the subagent store.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/version"
	"github.com/sessiondb/sessiondb/mailbox"
)

// DefaultListen is where serve listens unless told otherwise: loopback
// only, so nothing leaves the machine by default.
const DefaultListen = "127.0.0.1:8321"

// Commands returns the `serve` and `mcp` commands.
func Commands(f *cli.Factory) []*cobra.Command {
	g := &group{Factory: f, lookupHost: lookupHost}
	return []*cobra.Command{g.serveCmd(), g.mcpCmd()}
}

// lookupHost resolves a host name to its addresses, as the system does
// (/etc/hosts, then DNS).
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// mcpCmd is `sessiondb mcp`: the MCP server on stdin and stdout.
func (g *group) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the history store to an agent over MCP on stdin/stdout",
		Long: `mcp runs a Model Context Protocol server on stdin and stdout, so an agent can
search and read the sessions of a history store: its tools are search_sessions,
list_sessions, read_session (one page at a time) and session_lineage. It only
reads, but for the search index of a large store, which it keeps up to date as
search does; with --read-only it writes nothing. Configure it in an
MCP client as the command "sessiondb mcp" (add --db PATH for another store,
such as a Hermes ~/.hermes/state.db). The same tools are served over HTTP at
/mcp by sessiondb serve.

It reads one JSON-RPC message a line. A line that is not one (not JSON, not
UTF-8, a batch, another version than 2.0, an id that is an object, longer
than 16 MiB) is answered with a JSON-RPC error, and the session goes on.
When stdin ends, the requests read before its end are answered, then mcp
exits.`,
		Example: `  sessiondb mcp
  sessiondb --db ~/.hermes/state.db --read-only mcp`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			st, err := g.OpenHistory(ctx, cli.ReadStore, "")
			if err != nil {
				return err
			}
			defer st.Close()
			srv := sdbhttp.NewMCPServer(st, version.String(), nil)
			err = srv.Run(ctx, &sdbhttp.MCPStdio{In: g.In, Out: g.Out})
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil // the client closed stdin, or Ctrl-C: a normal end
			}
			return err
		},
	}
}

type group struct {
	*cli.Factory
	// lookupHost resolves --listen's host name (tests give a name of their
	// own).
	lookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// options are serve's flags.
type options struct {
	listen, token, data, central, subagents string
}

func (g *group) serveCmd() *cobra.Command {
	var o options
	c := &cobra.Command{
		Use:   "serve [--listen ADDR] [--token TOKEN] [--data DIR]",
		Short: "Serve the store over HTTP: a web UI, a JSON API, live updates, MCP and metrics",
		Long: `serve runs an HTTP server over the history store (--db) until Ctrl-C: the web UI
at /, the JSON API under /api/v1/, live updates as Server-Sent Events, MCP for
agents at /mcp, /healthz, and Prometheus metrics at /metrics. With --data it
serves the session mailboxes under that data root too (with requeue), with
--central the control plane's registry (groups, wirings, sessions, pending
approvals and questions, dropped senders), with --subagents janebot's
subagent store; both read only.

It listens on 127.0.0.1 only, unless --listen names another address; a name
counts by the address it resolves to. Beyond loopback a token is required
(--token, or $SESSIONDB_TOKEN), and every request must carry it. On loopback,
a request that names the server other than localhost, 127.0.0.1 or [::1]
(a name of your own for this machine) must carry it too. Writes (titles, end
and reopen, delete, prune, requeue) always need the token and must come from
the server's own pages (or a client that sends no Origin). Without --token
on loopback, serve makes a token and prints the URL that carries it; open
that URL to be able to write from the browser. With --read-only the stores
are opened read-only and every write is gone from the API and the UI.`,
		Example: `  sessiondb serve
  sessiondb --db ~/.hermes/state.db --read-only serve
  sessiondb serve --data ~/.sessiondb/v2-sessions --central ~/.sessiondb/v2.db
  SESSIONDB_TOKEN=... sessiondb serve --listen 0.0.0.0:8321`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if o.token == "" {
				o.token = os.Getenv("SESSIONDB_TOKEN")
			}
			return g.run(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.listen, "listen", DefaultListen, "address to listen on (host:port; a name counts as the address it resolves to); beyond loopback a token is required")
	c.Flags().StringVar(&o.token, "token", "", "the server's token (default $SESSIONDB_TOKEN; on loopback one is made when neither is set)")
	c.Flags().StringVar(&o.data, "data", "", "data root of the session mailboxes (<group>/<session> folders) to serve too")
	c.Flags().StringVar(&o.central, "central", "", "the control plane's central registry to serve too (a NanoClaw data/v2.db or a postgres:// URL)")
	c.Flags().StringVar(&o.subagents, "subagents", "", "janebot's subagent store to serve too (a state.sqlite or a postgres:// URL)")
	return c
}

// listenAddr resolves --listen to the one address serve listens on: a
// name's first IPv4 address, else its first (as net.Listen would pick);
// no host is every interface.
func (g *group) listenAddr(ctx context.Context, listen string) (*net.TCPAddr, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "--listen %q is not host:port: %v", listen, err)
	}
	n, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "--listen %q: port %q: %v", listen, port, err)
	}
	addr := &net.TCPAddr{Port: n}
	if host == "" {
		return addr, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		addr.IP, addr.Zone = ip.AsSlice(), ip.Zone()
		return addr, nil
	}
	ips, err := g.lookupHost(ctx, host)
	if err != nil || len(ips) == 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "--listen %q: cannot resolve %s: %v", listen, host, err)
	}
	pick := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			pick = ip.Unmap()
			break
		}
	}
	addr.IP, addr.Zone = pick.AsSlice(), pick.Zone()
	return addr, nil
}

// run opens the stores, checks the address against the token before
// anything listens, and serves until ctx ends.
func (g *group) run(ctx context.Context, o options) error {
	addr, err := g.listenAddr(ctx, o.listen)
	if err != nil {
		return err
	}
	// The address itself decides, by the test the server makes of its
	// listener (sdbhttp.IsLoopback): a name that resolves to 127.0.0.1 is
	// loopback to both, as "localhost" is.
	if !sdbhttp.IsLoopback(addr) && o.token == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "refusing to listen on %s without a token: beyond loopback anyone who reaches the address could read every conversation; set --token or $SESSIONDB_TOKEN, or listen on 127.0.0.1", o.listen)
	}
	madeToken := false
	if o.token == "" {
		b := make([]byte, 24)
		rand.Read(b)
		o.token, madeToken = hex.EncodeToString(b), true
	}
	log := g.WarnLogger()
	st, err := g.OpenHistory(ctx, cli.ServeStore, "")
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := sdbhttp.Config{History: st, ReadOnly: g.ReadOnly, Token: o.token, Clock: g.Now, Logger: log}
	if o.data != "" {
		if fi, err := os.Stat(o.data); err != nil || !fi.IsDir() {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "--data %s is not a folder", o.data)
		}
		h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: o.data}, Now: g.Now, Logger: log})
		if err != nil {
			return err
		}
		cfg.Mailboxes, cfg.DataRoot = h, o.data
	}
	if o.central != "" {
		reg, err := g.OpenRegistry(ctx, o.central, cli.ReadStore)
		if err != nil {
			return err
		}
		defer reg.Close()
		cfg.Registry = reg
	}
	if o.subagents != "" {
		if g.ReadOnly {
			// The subagent store has no read-only open: it would migrate
			// the file, and --read-only promises no write at all.
			return sessiondb.Errorf(sessiondb.EINVALID, "--subagents cannot be served with --read-only: the subagent store opens read-write")
		}
		sub, err := store.OpenSubagents(ctx, o.subagents, store.Options{MustExist: true, Now: g.Now, Logger: log})
		if err != nil {
			return err
		}
		defer sub.Close()
		cfg.Subagents = sub
	}
	srv, err := sdbhttp.NewServer(cfg)
	if err != nil {
		return err
	}
	ln, err := net.ListenTCP("tcp", addr)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "listen on %s", o.listen)
	}
	bound := ln.Addr().String()
	// The URL to open names the server as --listen did: a browser that
	// logs in there keeps the cookie for that name.
	open := bound
	if host, _, _ := net.SplitHostPort(o.listen); host != "" && net.ParseIP(host) == nil {
		open = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	url := "http://" + open + "/"
	if madeToken && (!g.ReadOnly || open != bound) {
		// A read-only server reached by its loopback address has
		// nothing a token would let a browser do (reads there need
		// none), so the URL to open holds none to copy or leak. Named
		// otherwise (--listen NAME), its reads need the token.
		url += "?token=" + o.token
	}
	fmt.Fprintf(g.Out, "sessiondb: serving on http://%s/ (Ctrl-C to stop)\n", bound)
	if g.ReadOnly {
		fmt.Fprintln(g.Out, "read-only: no writes")
	}
	fmt.Fprintf(g.Out, "open %s\n", url)
	// The first search of a large store builds its recent search index
	// (seconds at ten million messages): build it now, beside the server,
	// so that no visitor waits for it. Stopped with the server.
	warm, stopWarm := context.WithCancel(ctx)
	var warming sync.WaitGroup
	defer warming.Wait()
	defer stopWarm()
	if m, ok := st.(sessiondb.SQLiteMaintainer); ok {
		warming.Go(func() {
			if err := m.SyncRecentIndex(warm); err != nil && warm.Err() == nil {
				log.Warn("could not bring the recent search index up to date; the first search will", "err", err)
			}
		})
	}
	return srv.Serve(ctx, ln)
}
