package history

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (h *group) titleCmd() *cobra.Command {
	var next, clear bool
	c := &cobra.Command{
		Use:   "title <id> [new title]",
		Short: "Show, set or clear a session's title; or name the next in a lineage",
		Long: `With only a session, print its title. With a new title, set it: control and
invisible characters are removed, runs of white space become one space, and
the result may hold at most 100 characters. Titles are unique (case
matters); a title held by another session is a conflict (exit 4), except
that a compression ancestor's title moves to its continuation.

--next <title> prints the title the next session of that lineage would get:
"proj" gives "proj #2" when "proj" exists, "proj #4" when "proj #3" does.`,
		Example: `  sessiondb title 20260315_092437_c9a6ff
  sessiondb title 20260315_092437_c9a6ff "Fix Docker build (alpine)"
  sessiondb title 20260315_092437_c9a6ff --clear
  sessiondb title --next proj`,
		Args: cli.MinimumArgs(1, "a session (or, with --next, a title)"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if next {
				t := strings.Join(args, " ")
				return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
					n, err := st.NextTitleInLineage(ctx, t)
					if err != nil {
						return err
					}
					if h.JSON {
						return h.PrintJSON(map[string]string{"title": t, "next": n})
					}
					h.Printf("%s\n", cli.PrintableLine(n))
					return nil
				})
			}
			set := len(args) > 1 || clear
			if len(args) > 1 && clear {
				return sessiondb.Errorf(sessiondb.EINVALID, "give either a new title or --clear, not both")
			}
			access := cli.ReadStore
			want := strings.Join(args[1:], " ")
			if set {
				if err := h.checkSynchronous(); err != nil {
					return err
				}
				if !clear {
					clean, err := sessiondb.SanitizeTitle(want)
					if err != nil {
						return err
					}
					if clean == "" {
						return sessiondb.Errorf(sessiondb.EINVALID, "the new title %q is empty once cleaned up: use --clear to remove a title", want)
					}
				}
				access = cli.WriteStore
			}
			return h.withStore(ctx, access, func(st sessiondb.Store) error {
				id, err := sessiondb.FindSession(ctx, st, args[0], false)
				if err != nil {
					return err
				}
				if set {
					if _, err := st.SetSessionTitle(ctx, id, want); err != nil {
						return err
					}
				}
				t, ok, err := st.GetSessionTitle(ctx, id)
				if err != nil {
					return err
				}
				if h.JSON {
					var v any
					if ok {
						v = t
					}
					return h.PrintJSON(map[string]any{"id": id, "title": v})
				}
				switch {
				case set && !ok:
					h.Printf("cleared the title of %s\n", cli.PrintableLine(id))
				case set:
					h.Printf("%s is now titled %q\n", cli.PrintableLine(id), t)
				case !ok:
					fmt.Fprintf(h.Err, "session %s has no title; set one with `sessiondb title %s \"a title\"`\n", cli.PrintableLine(id), cli.PrintableLine(id))
				default:
					h.Printf("%s\n", cli.PrintableLine(t))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&next, "next", false, "print the next title in the lineage of the given title")
	c.Flags().BoolVar(&clear, "clear", false, "remove the session's title")
	h.addSynchronousFlag(c)
	return c
}

func (h *group) lineageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "lineage <id|prefix|title>",
		Short: "Show a session's ancestors and descendants as a tree",
		Long: `Print the chain of parents above a session (up to its root) and every session
descending from it (continuations after compression, forks), as an indented
tree with start times, message counts and why each ended. The session asked
for is marked with *.`,
		Example: `  sessiondb lineage proj
  sessiondb lineage 20260402_141202 --json`,
		Args: cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
				id, err := sessiondb.FindSession(ctx, st, args[0], true)
				if err != nil {
					return err
				}
				root, err := sessiondb.Lineage(ctx, st, id)
				if err != nil {
					return err
				}
				if h.JSON {
					return h.PrintJSON(root)
				}
				h.printLineage(root, "", true, true)
				return nil
			})
		},
	}
	return c
}

func (h *group) printLineage(n *sessiondb.LineageNode, prefix string, last, root bool) {
	tty := h.Styled()
	branch, next := "", ""
	if !root {
		branch, next = "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
	}
	mark := "  "
	if n.Selected {
		mark = "* "
	}
	title := deref(n.Title)
	if title == "" {
		title = "(untitled)"
	}
	ended := "open"
	if n.EndedAt != nil {
		ended = "ended " + fmtTime(*n.EndedAt) + ": " + cli.OrDash(deref(n.EndReason))
	}
	line := cli.PrintableLine(fmt.Sprintf("%s%s%s  %s · %s · started %s · %d msgs · %s", prefix, branch, mark+n.ID,
		title, n.Source, fmtTime(n.StartedAt), n.Messages, ended))
	if n.Selected {
		line = cli.Style(tty, cli.Bold, line)
	}
	h.Printf("%s\n", line)
	for i, k := range n.Children {
		h.printLineage(k, prefix+next, i == len(n.Children)-1, false)
	}
}
