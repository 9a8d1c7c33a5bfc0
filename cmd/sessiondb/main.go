// Command sessiondb is the command line of the session store for AI agents:
// it lists, shows, searches, titles, exports, imports and prunes a history
// store (a Hermes-compatible state.db), replays the benchmark workload, and
// inspects and runs session mailboxes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// app holds what every command shares: the global flags and the streams.
// Commands get it explicitly; there is no package-level state.
type app struct {
	dbPath   string
	jsonOut  bool
	readOnly bool

	stdin          io.Reader
	stdout, stderr io.Writer
}

// run executes the command line args and returns the process exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "sessiondb: %v\n", err)
	return exitCode(err)
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "sessiondb",
		Short: "The session store for AI agents",
		Long: `sessiondb keeps the durable memory of agent sessions: who said what, which tools
ran, what it cost, which session continues which. Its history file is a Hermes
Agent state.db (schema v6), so it works on an existing ~/.hermes/state.db too:

  sessiondb --db ~/.hermes/state.db search docker

The store defaults to $SESSIONDB_HOME/state.db, else ~/.sessiondb/state.db.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.dbPath, "db", "", "history store file (default $SESSIONDB_HOME/state.db, else ~/.sessiondb/state.db)")
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "print data as JSON for scripts")
	root.PersistentFlags().BoolVar(&a.readOnly, "read-only", false, "open the store read-only (no schema changes, no writes)")
	for _, add := range []func(*app) []*cobra.Command{historyCommands, benchCommands, mailboxCommands} {
		root.AddCommand(add(a)...)
	}
	return root
}

// defaultDBPath is where the history store lives when --db is not given.
func defaultDBPath() (string, error) {
	if h := os.Getenv("SESSIONDB_HOME"); h != "" {
		return filepath.Join(h, "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "cannot find your home folder (%v): set SESSIONDB_HOME or pass --db", err)
	}
	return filepath.Join(home, ".sessiondb", "state.db"), nil
}

// Exit statuses by error code, so scripts can tell "nothing there" from
// "bad input" from "try again later".
const (
	exitOK       = 0
	exitInternal = 1
	exitInvalid  = 2
	exitNotFound = 3
	exitConflict = 4
	exitBusy     = 5
)

func exitCode(err error) int {
	if errors.Is(err, context.Canceled) {
		return 130
	}
	switch sessiondb.ErrorCode(err) {
	case sessiondb.EINVALID:
		return exitInvalid
	case sessiondb.ENOTFOUND:
		return exitNotFound
	case sessiondb.ECONFLICT:
		return exitConflict
	case sessiondb.EBUSY:
		return exitBusy
	case "":
		return exitOK
	}
	// cobra's own usage errors (unknown flag, wrong arg count) are plain
	// errors; they are the caller's mistake.
	if isUsageError(err) {
		return exitInvalid
	}
	return exitInternal
}
