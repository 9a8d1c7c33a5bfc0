// Package admin holds `sessiondb admin ...`: the control plane's central
// registry from a shell (agent groups, chats and their wiring, users,
// roles, members, destinations, sessions, pending cards, the dropped
// audit), over a NanoClaw data/v2.db.
package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/mailbox"
)

// Commands returns the `admin` command.
func Commands(f *cli.Factory) []*cobra.Command {
	a := &group{Factory: f}
	c := &cobra.Command{
		Use:   "admin",
		Short: "Administer the control plane: agent groups, chats, wiring, users, roles, sessions, approvals",
		Long: `admin reads and changes the central registry (--central, default
$SESSIONDB_HOME/v2.db): NanoClaw's data/v2.db, so it works on an existing
NanoClaw install too. A change that alters what a session may send (a wiring,
a destination, a renamed or deleted chat or agent group) is re-projected at
once into the destinations table of every active session of the groups
concerned, under --data (default $SESSIONDB_HOME/v2-sessions).

Lists print a table (--json: the registry's rows); commands that remove
something ask first on a terminal (--yes skips the question). Exit statuses:
2 invalid input, 3 not found, 4 conflict, 5 busy, 6 you answered no (nothing changed).`,
		Example: `  sessiondb admin groups create "Helper" --id ag-helper
  sessiondb admin channels create telegram --name "Team room" --group-chat -- -100123
  sessiondb admin wire mg-... ag-helper --engage pattern
  sessiondb admin users create telegram:42 --name Ann
  sessiondb admin roles grant telegram:42 owner
  sessiondb admin sessions list --group ag-helper`,
	}
	c.PersistentFlags().StringVar(&a.central, "central", "", "central registry: a v2.db file or a postgres:// URL (default $SESSIONDB_HOME/v2.db)")
	c.PersistentFlags().StringVar(&a.data, "data", "", "data root of the session mailboxes, for re-projection (default $SESSIONDB_HOME/v2-sessions)")
	c.AddCommand(a.groupsCmd(), a.channelsCmd(), a.wireCmd(), a.unwireCmd(), a.wiringsCmd(), a.usersCmd(), a.rolesCmd(),
		a.membersCmd(), a.destinationsCmd(), a.sessionsCmd(), a.approvalsCmd(), a.questionsCmd(), a.droppedCmd())
	return []*cobra.Command{c}
}

// group is what the admin commands share: the factory and the two
// locations.
type group struct {
	*cli.Factory
	central, data string
}

// with opens the registry with the given access and runs fn.
func (a *group) with(c *cobra.Command, what cli.Access, fn func(ctx context.Context, reg sessiondb.Registry) error) error {
	path, err := cli.CentralPath(a.central)
	if err != nil {
		return err
	}
	return a.WithRegistry(c.Context(), path, what, func(reg sessiondb.Registry) error { return fn(c.Context(), reg) })
}

// router returns a router over reg and the data root (for re-projection
// and the expiry of cards); with ifFolders, nil when the data root does not
// exist (no session has a folder to write).
func (a *group) router(reg sessiondb.Registry, ifFolders bool) (*hostd.Router, error) {
	root, err := cli.DataPath(a.data)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(root); ifFolders && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	log := a.WarnLogger()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}, Now: a.Now, Logger: log})
	if err != nil {
		return nil, err
	}
	return hostd.NewRouter(hostd.RouterConfig{Registry: reg, Host: h, Logger: log, Leases: hostd.NotServing(reg, "admin")})
}

// reproject rewrites the destinations of the active sessions of groups and
// returns how many folders it wrote.
func (a *group) reproject(ctx context.Context, reg sessiondb.Registry, groups ...string) (int, error) {
	if len(groups) == 0 {
		return 0, nil
	}
	r, err := a.router(reg, true)
	if err != nil {
		return 0, err
	}
	return reprojectOn(ctx, r, groups)
}

// reprojectOn rewrites, with r (nil: no session folder exists), the
// destinations of the active sessions of groups and returns how many
// folders it wrote.
func reprojectOn(ctx context.Context, r *hostd.Router, groups []string) (int, error) {
	if r == nil || len(groups) == 0 {
		return 0, nil
	}
	res, err := r.Reproject(ctx, groups...)
	return res.Sessions, err
}

// reprojectTargeting re-projects, after change has run (nil: it has run),
// the groups holding a destination to the target (a chat or an agent group
// renamed or deleted), listed before the change since deleting a target
// removes the destinations naming it; none when no session folder exists.
// It returns how many folders it wrote.
func (a *group) reprojectTargeting(ctx context.Context, reg sessiondb.Registry, tt sessiondb.TargetType, id string, change func() error) (int, error) {
	var groups []string
	r, err := a.router(reg, true)
	if err != nil {
		return 0, err
	}
	if r != nil {
		if groups, err = r.GroupsTargeting(ctx, tt, id); err != nil {
			return 0, err
		}
	}
	if change != nil {
		if err := change(); err != nil {
			return 0, err
		}
	}
	return reprojectOn(ctx, r, groups)
}

// done prints what a change did: v as JSON, else msg.
func (a *group) done(v any, format string, args ...any) error {
	if a.JSON {
		return a.PrintJSON(v)
	}
	fmt.Fprintln(a.Out, cli.Printable(fmt.Sprintf(format, args...)))
	return nil
}

// list prints the rows fetch reads from the registry (see cli.PrintList).
func list[T any](a *group, c *cobra.Command, fetch func(context.Context, sessiondb.Registry) ([]T, error), cols cli.Columns[T]) error {
	return a.with(c, cli.ReadStore, func(ctx context.Context, reg sessiondb.Registry) error {
		rows, err := fetch(ctx, reg)
		if err != nil {
			return err
		}
		return cli.PrintList(a.Factory, rows, cols)
	})
}

// ofGroup is the fetch for list of the rows of the agent group id that
// fetch reads (its members, its destinations): an unknown group is
// not_found, not an empty list.
func ofGroup[T any](id string, fetch func(sessiondb.Registry, context.Context, string) ([]T, error)) func(context.Context, sessiondb.Registry) ([]T, error) {
	return func(ctx context.Context, reg sessiondb.Registry) ([]T, error) {
		if _, err := reg.GetAgentGroup(ctx, id); err != nil {
			return nil, err
		}
		return fetch(reg, ctx, id)
	}
}

// parent returns c, a command that only holds subs.
func parent(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.AddCommand(subs...)
	return c
}

// reprojected words a re-projection count for a message.
func reprojected(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; destinations re-projected into %d session(s)", n)
}

// when formats a time for a table ("-" for none).
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// words lists allowed values for help texts.
func words[T ~string](vs ...T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, "|")
}

// checkWord validates a flag's value word through the domain type's own
// Validate, naming the flag.
func checkWord(flag string, err error) error {
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINVALID, err, "--%s", flag)
	}
	return nil
}
