package history

import (
	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/examples"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

func (h *group) quickstartCmd() *cobra.Command {
	var query string
	c := &cobra.Command{
		Use:   "quickstart",
		Short: "Load the example conversations, then list and search them",
		Long: `Import the eight example conversations built into this binary (the same as
examples/conversations.jsonl) into the store, creating it if needed, then
list the sessions and run a search, to show what sessiondb keeps.

Running it again imports nothing new: sessions already present are skipped.
The store is --db, else $SESSIONDB_HOME/state.db, else ~/.sessiondb/state.db;
point --db at a scratch file to keep your own store clean.`,
		Example: `  sessiondb quickstart
  sessiondb --db /tmp/demo.db quickstart --search "readiness probe"`,
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
			ctx := c.Context()
			return h.withStore(ctx, cli.CreateStore, func(st sessiondb.Store) error {
				res, err := h.importRecords(ctx, st, examples.Conversations(), examples.Size(), "examples/conversations.jsonl", false)
				if err != nil {
					return err
				}
				if res.Failed > 0 {
					return h.reportImport(res, "examples/conversations.jsonl")
				}
				rows, err := st.ListSessionsRich(ctx, sessiondb.RichFilter{Limit: 10})
				if err != nil {
					return err
				}
				hits, err := st.SearchMessages(ctx, query, sessiondb.SearchFilter{Limit: 3})
				if err != nil {
					return err
				}
				if h.JSON {
					return h.PrintJSON(map[string]any{"store": path, "import": res, "sessions": rows, "search": map[string]any{"query": query, "hits": hits}})
				}
				h.Printf("Store: %s\n", path)
				h.Printf("Imported %d example session(s), %d already present.\n\n", res.Imported, res.Skipped)
				h.Printf("$ sessiondb sessions\n")
				if err := h.printSessions(rows); err != nil {
					return err
				}
				h.Printf("\n$ sessiondb search %s --limit 3\n", query)
				if len(hits) == 0 {
					h.Printf("no messages match %q\n", query)
				} else if err := h.printHits(ctx, st, hits); err != nil {
					return err
				}
				h.Printf("\nNext: sessiondb show proj · sessiondb lineage proj · sessiondb stats · sessiondb --help\n")
				return nil
			})
		},
	}
	c.Flags().StringVar(&query, "search", "docker", "what the demo search looks for")
	h.addSynchronousFlag(c)
	return c
}
