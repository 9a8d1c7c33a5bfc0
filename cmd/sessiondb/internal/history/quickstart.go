package history

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/examples"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// examplesAge is how old quickstart makes the newest example message: the
// examples end a few hours ago, so every recent range shows them.
const examplesAge = 3 * time.Hour

// quickstartList is how many sessions quickstart lists.
const quickstartList = 10

func (h *group) quickstartCmd() *cobra.Command {
	var query string
	c := &cobra.Command{
		Use:   "quickstart",
		Short: "Load the example conversations, then list and search them",
		Long: `Import the eight example conversations built into this binary (the same as
examples/conversations.jsonl) into the store, creating it if needed, then
list the sessions and run a search, to show what sessiondb keeps.

Their times are moved so the newest message is three hours old, the spacing
between them kept (their ids keep the file's dates): stats --since 30d and
the web UI's analytics then show them. Running it again imports nothing new:
sessions already present are skipped. The list folds a compression chain
into one row, and says how many sessions that leaves out.

The store is --db, else $SESSIONDB_HOME/state.db, else ~/.sessiondb/state.db;
point --db at a scratch file to keep your own store clean. Run through
` + "`go run`" + `, it prints the next commands as ` + "`go run ./cmd/sessiondb ...`" + `, since
nothing is installed, and how to install the binary.`,
		Example: `  sessiondb quickstart
  sessiondb --db /tmp/demo.db quickstart --search "readiness probe"
  go run ./cmd/sessiondb quickstart`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			// Name the store by where it is opened: the domain's interfaces do not say.
			path, err := h.HistoryPath()
			if err != nil {
				return err
			}
			path = errtext.RedactPassword(path)
			recs, size, err := examples.ConversationsEndingAt(h.Now().Add(-examplesAge))
			if err != nil {
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "read the examples")
			}
			ctx := c.Context()
			return h.withStore(ctx, cli.CreateStore, func(st sessiondb.Store) error {
				res, err := h.importRecords(ctx, st, recs, size, true, "examples/conversations.jsonl", false, 1)
				if err != nil {
					return err
				}
				if res.Failed > 0 {
					return h.reportImport(res, "examples/conversations.jsonl")
				}
				rows, err := st.ListSessionsRich(ctx, sessiondb.RichFilter{Limit: quickstartList})
				if err != nil {
					return err
				}
				total, err := st.SessionCount(ctx, "")
				if err != nil {
					return err
				}
				hits, err := st.SearchMessages(ctx, query, sessiondb.SearchFilter{Limit: 3})
				if err != nil {
					return err
				}
				if h.JSON {
					return h.PrintJSON(map[string]any{"store": path, "import": res, "sessions_in_store": total, "sessions": sessiondb.NonNil(rows),
						"search": map[string]any{"query": query, "hits": sessiondb.NonNil(hits)}})
				}
				run, install := h.runLine()
				h.Printf("Store: %s\n", cli.PrintableLine(path))
				h.Printf("Imported %d example session(s), %d already present.", res.Imported, res.Skipped)
				if res.Imported > 0 {
					h.Printf(" Their times are moved to end %d hours ago, their spacing kept.", int(examplesAge.Hours()))
				}
				h.Printf("\n")
				h.Printf("%s\n\n", listedLine(total, len(rows), run))
				h.Printf("$ %s sessions\n", run)
				if err := h.printSessions(rows, false); err != nil {
					return err
				}
				h.Printf("\n$ %s search %s --limit 3\n", run, shellQuote(query))
				if len(hits) == 0 {
					h.Printf("no messages match %q\n", query)
				} else if err := h.printHits(ctx, st, hits); err != nil {
					return err
				}
				h.Printf("\nNext:\n")
				for _, next := range []string{"show proj", "lineage proj", "stats --since 30d", "serve", "--help"} {
					h.Printf("  %s %s\n", run, next)
				}
				if errtext.HasPassword(h.DB) {
					h.Printf("\nThese commands leave the password out of --db: put it in $PGPASSWORD or ~/.pgpass.\n")
				}
				if install != "" {
					h.Printf("\n`go run` built sessiondb for this run only: nothing is installed.\n"+
						"To install it, run `%s`: it puts sessiondb in\n"+
						"$(go env GOPATH)/bin (or $GOBIN when set); add that folder to your PATH\n"+
						"and type sessiondb from anywhere.\n", install)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&query, "search", "docker", "what the demo search looks for")
	h.addSynchronousFlag(c)
	return c
}

// runLine is how the person who ran quickstart runs sessiondb again: the
// installed binary, or `go run` as they did (from the clone when they
// stand in one), with --db when they gave it (a URL's password left out:
// the warning every command gives says where it goes); install is the
// command that installs it, "" when it is installed.
func (h *group) runLine() (run, install string) {
	run = "sessiondb"
	if h.GoRun() {
		run, install = "go run ./cmd/sessiondb", "go install ./cmd/sessiondb"
		if fi, err := os.Stat("cmd/sessiondb"); err != nil || !fi.IsDir() {
			const pkg = "github.com/sessiondb/sessiondb/cmd/sessiondb@latest"
			run, install = "go run "+pkg, "go install "+pkg
		}
	}
	if h.DB != "" {
		run += " --db " + shellQuote(errtext.DropPassword(h.DB))
	}
	return cli.PrintableLine(run), install
}

// listedLine says how many sessions the store holds and how many the
// list shows: a compression chain is one row, which leaves sessions out
// that the person just imported and would look for.
func listedLine(total int64, listed int, run string) string {
	s := fmt.Sprintf("%d session(s) in the store; ", total)
	switch folded := total - int64(listed); {
	case listed == quickstartList && folded > 0:
		return s + fmt.Sprintf("the newest %d rows are listed (`%s sessions --limit 50` lists more).", listed, run)
	case folded == 1:
		return s + fmt.Sprintf("%d listed: 1 continuation is folded into the row of the session it continues (see `%s lineage proj`; `%s sessions --children` lists every session).", listed, run, run)
	case folded > 1:
		return s + fmt.Sprintf("%d listed: %d continuations and forks are folded into the rows of the sessions they continue (`%s sessions --children` lists every session).", listed, folded, run)
	}
	return strings.TrimSuffix(s, "; ") + ", all listed."
}
