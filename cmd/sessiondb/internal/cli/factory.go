// Package cli is what every command group of the sessiondb command line
// shares: the streams, the clock, the global flags, the way to the history
// store, output as a table or as JSON, argument checks, exit statuses and
// the progress line.
//
// A command group is a package under cmd/sessiondb/internal (history,
// mailbox, host, bench, ...) whose one exported function, Commands (a
// Group), builds its commands from a *Factory; main hands the groups to Run. A new group
// needs nothing else: the root command, the global flags, the flag-error
// hook and the mapping of error codes to exit statuses are here, once.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/version"
)

// Factory is what a command group is built from (gh's cmdutil.Factory).
// Commands keep the pointer and read it when they run, not when they are
// built, so a test sets Now (or anything else) on the factory instead of
// rebuilding the command tree.
type Factory struct {
	Streams
	// Now is the clock of every command: timestamps, ages, schedules and
	// the progress line all read it. time.Now unless a test sets it.
	Now sessiondb.Clock
	// Executable is the path of the running binary (os.Executable unless a
	// test sets it): where it is tells a `go run` from an installed
	// binary (GoRun).
	Executable func() (string, error)

	// The global flags, filled in when the command line is parsed.

	// DB is --db: the history store; "" means the default location (see
	// HistoryPath).
	DB string
	// JSON is --json: print data as JSON for scripts.
	JSON bool
	// ReadOnly is --read-only: open the store read-only.
	ReadOnly bool
	// NoAdditions opens a SQLite store adding nothing of sessiondb's own
	// (--no-additions, sqlite.Options.NoAdditions).
	NoAdditions bool
}

// New returns a factory on the given streams with the real clock.
func New(in io.Reader, out, errOut io.Writer) *Factory {
	return &Factory{Streams: Streams{In: in, Out: out, Err: errOut}, Now: time.Now, Executable: os.Executable}
}

// Group builds one command group's top-level commands on f.
type Group func(f *Factory) []*cobra.Command

// NewRootCommand returns the sessiondb command: the global flags bound to
// f, the flag-error hook, and the commands of every group in order.
func NewRootCommand(f *Factory, groups ...Group) *cobra.Command {
	root := &cobra.Command{
		Use:   "sessiondb",
		Short: "The session store for AI agents",
		Long: `sessiondb keeps the durable memory of agent sessions: who said what, which tools
ran, what it cost, which session continues which. Its history file is a Hermes
Agent state.db (schema v6), so it works on an existing ~/.hermes/state.db too:

  sessiondb --db ~/.hermes/state.db search docker

The store defaults to $SESSIONDB_DATABASE_URL, else $SESSIONDB_HOME/state.db,
else ~/.sessiondb/state.db. A postgres:// URL needs no password in it: put the
password in $PGPASSWORD or a password file (~/.pgpass, $PGPASSFILE), where the
process list does not show it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&f.DB, "db", "", "history store: a state.db file or a postgres:// URL, its password in $PGPASSWORD or ~/.pgpass rather than in the URL (default $SESSIONDB_DATABASE_URL, else $SESSIONDB_HOME/state.db, else ~/.sessiondb/state.db)")
	root.PersistentFlags().BoolVar(&f.JSON, "json", false, "print data as JSON for scripts (and errors as {\"error\":{\"code\",\"message\"}} on stderr)")
	root.PersistentFlags().BoolVar(&f.ReadOnly, "read-only", false, "open the store read-only (no schema changes, no writes)")
	root.PersistentFlags().BoolVar(&f.NoAdditions, "no-additions", false, "add no table, index, trigger or state_meta key of sessiondb's own to a state.db (README: \"What sessiondb adds to Hermes' file\"); everything works, but listing by last activity, a long session's last page and search of a large store are slower")
	// --version prints what `sessiondb version` prints first: the one
	// version string every face reports (internal/version).
	root.Version = version.String()
	root.SetVersionTemplate("sessiondb {{.Version}}\n")
	// Flag mistakes are the caller's: give them a code (exit 2), words
	// instead of a parser's internals, and a pointer to the help that would
	// have prevented them. Cobra asks a command's parents for this hook, so
	// every command inherits it.
	root.SetFlagErrorFunc(flagError)
	// Every command of every group runs this first (none has a hook of
	// its own, which would replace it).
	root.PersistentPreRun = func(c *cobra.Command, _ []string) { f.warnURLPasswords(c) }
	root.AddCommand(f.versionCmd())
	for _, g := range groups {
		root.AddCommand(g(f)...)
	}
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.Err)
	return root
}

// Run executes the command line args with the given groups and returns the
// process exit status; an error is printed on f.Err: as text, or with
// --json as {"error":{"code","message"}}, the HTTP API's shape.
func Run(ctx context.Context, f *Factory, args []string, groups ...Group) int {
	root := NewRootCommand(f, groups...)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	// Ctrl-C (or SIGTERM) ended the command: the user knows, and "context
	// canceled" would tell them nothing. A command with more to say (what
	// an import kept) says it itself before returning.
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	code := ExitCode(err)
	// A flag error stops the parse before --json is read, so the command
	// line itself is asked too.
	if f.JSON || asksJSON(args) {
		enc := json.NewEncoder(f.Err)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(jsonError{jsonErrorDetail{Code: errorCode(code), Message: err.Error()}})
		return code
	}
	// An error may quote stored text (a title, an id, a file's own
	// complaint), so it reaches the terminal escaped like any other.
	fmt.Fprintf(f.Err, "sessiondb: %s\n", Printable(err.Error()))
	return code
}

// jsonError is an error under --json: {"error":{"code","message"}}, as
// the HTTP API answers one (http/response.go).
type jsonError struct {
	Error jsonErrorDetail `json:"error"`
}

type jsonErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// asksJSON reports whether args hold --json (or --json=true) before a
// "--" that ends the flags.
func asksJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}

// HistoryPath is where the history store is: --db, else
// $SESSIONDB_DATABASE_URL, else $SESSIONDB_HOME/state.db, else
// ~/.sessiondb/state.db. It is a file path or a postgres:// URL.
func (f *Factory) HistoryPath() (string, error) {
	if f.DB != "" {
		return f.DB, nil
	}
	if u := os.Getenv("SESSIONDB_DATABASE_URL"); u != "" {
		return u, nil
	}
	if h := os.Getenv("SESSIONDB_HOME"); h != "" {
		return filepath.Join(h, "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "cannot find your home folder (%v): set SESSIONDB_HOME or pass --db", err)
	}
	return filepath.Join(home, ".sessiondb", "state.db"), nil
}

// GoRun reports whether this binary was built by `go run` for this run
// only: it then lives in the go command's temporary build folder
// (.../go-build<n>/b001/exe/sessiondb), and the commands a person types
// next must say `go run` too, since no sessiondb is installed.
func (f *Factory) GoRun() bool {
	if f.Executable == nil {
		return false
	}
	p, err := f.Executable()
	if err != nil {
		return false
	}
	p = filepath.ToSlash(p)
	return strings.Contains(p, "/go-build") && path.Base(path.Dir(p)) == "exe"
}
