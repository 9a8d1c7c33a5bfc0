// Command sessiondb is the command line of the session store for AI agents:
// it lists, shows, searches, titles, exports, imports and prunes a history
// store (a Hermes-compatible state.db), replays the benchmark workload, and
// inspects and runs session mailboxes.
//
// Each command group is a package under internal/ built on internal/cli;
// this file only lists the groups.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/admin"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/bench"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/history"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/host"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/mailbox"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/route"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/serve"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/subagents"
)

// groups are the command groups of the binary, in the order their
// commands are added.
func groups() []cli.Group {
	return []cli.Group{history.Commands, bench.Commands, mailbox.Commands, host.Commands, admin.Commands, route.Commands, subagents.Commands, serve.Commands}
}

func main() {
	// Ctrl-C or SIGTERM cancels ctx: every command stops at its next check
	// and SQLite's interrupt ends the statement running. From then on the
	// signals act as if never caught, so a second one ends the process at
	// once (NotifyContext alone would swallow every later signal too).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := cli.Run(ctx, cli.New(os.Stdin, os.Stdout, os.Stderr), os.Args[1:], groups()...)
	stop()
	os.Exit(code)
}
