// Package history holds the history store commands of the command line:
// sessions, show, search, title, lineage, stats, export, import, fork,
// end, reopen, archive, unarchive, clear, delete, prune, doctor and
// quickstart.
package history

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

// group is what the history commands share beyond the factory: the
// durability asked for by --synchronous.
type group struct {
	*cli.Factory
	synchronous string
}

// Commands returns the history store commands and quickstart, in the order
// docs/cli.md lists them.
func Commands(f *cli.Factory) []*cobra.Command {
	h := &group{Factory: f}
	return []*cobra.Command{
		h.sessionsCmd(), h.showCmd(), h.searchCmd(), h.titleCmd(), h.lineageCmd(),
		h.statsCmd(), h.exportCmd(), h.importCmd(), h.forkCmd(), h.endCmd(),
		h.reopenCmd(), h.archiveCmd(true), h.archiveCmd(false), h.clearCmd(), h.deleteCmd(), h.pruneCmd(), h.doctorCmd(),
		h.quickstartCmd(), h.copyCmd(),
	}
}

// withStore opens the history store with the --synchronous durability, runs
// fn and closes the store (see cli.Factory.WithHistory).
func (h *group) withStore(ctx context.Context, what cli.Access, fn func(sessiondb.Store) error) error {
	return h.WithHistory(ctx, what, h.synchronous, fn)
}

// addSynchronousFlag gives a writing command the --synchronous flag.
func (h *group) addSynchronousFlag(c *cobra.Command) {
	c.Flags().StringVar(&h.synchronous, "synchronous", "", "durability of each commit: normal (default; survives a crash of the process) or full (also survives power loss, slower)")
}

// checkSynchronous validates --synchronous (with the parser bench uses, so both
// take the same words) before anything is opened.
func (h *group) checkSynchronous() error {
	if h.synchronous == "" {
		return nil
	}
	s, err := cli.ParseSynchronous(h.synchronous)
	h.synchronous = s
	return err
}

// withSession opens the store as withStore does and runs fn on it and on
// the session ref names (sessiondb.FindSession), read whole.
func (h *group) withSession(ctx context.Context, what cli.Access, ref string, byTitle bool, fn func(sessiondb.Store, *sessiondb.Session) error) error {
	return h.withStore(ctx, what, func(st sessiondb.Store) error {
		id, err := sessiondb.FindSession(ctx, st, ref, byTitle)
		if err != nil {
			return err
		}
		s, err := st.GetSession(ctx, id)
		if err != nil {
			return err
		}
		return fn(st, s)
	})
}
