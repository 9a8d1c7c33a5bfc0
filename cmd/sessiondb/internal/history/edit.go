package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
)

func (h *group) forkCmd() *cobra.Command {
	var at int64
	var newID, title string
	c := &cobra.Command{
		Use:   "fork <id|prefix|title>",
		Short: "Branch a session: copy its messages into a new child session",
		Long: `Create a new session whose parent is the given one and copy its messages up to
and including message --at (all of them by default) into it, so you can take
the conversation another way and keep the original. A tool call is never
separated from its results: the copy grows to include them, or stops before
the call if a result is missing. --at takes a message's id, the "id N"
` + "`sessiondb show`" + ` prints beside each message, not the #n before it (its place
in the session).

The new session gets the source, model and system prompt of the original,
and its model_config records "_branched_from", as newer Hermes does.`,
		Example: `  sessiondb fork proj
  sessiondb fork 20260315_092437_c9a6ff --at 5 --title "Docker build, distroless variant"
  sessiondb fork proj --id my-experiment --json`,
		Args: cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			if c.Flags().Changed("at") && at < 1 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--at %d: want a message id (1 or more): the \"id N\" `sessiondb show` prints beside each message", at)
			}
			if c.Flags().Changed("id") {
				if err := checkNewID(newID); err != nil {
					return err
				}
			}
			clean := ""
			if title != "" {
				var err error
				if clean, err = sessiondb.SanitizeTitle(title); err != nil {
					return err
				}
				if clean == "" {
					return sessiondb.Errorf(sessiondb.EINVALID, "--title %q is empty once cleaned up: give a title or leave --title out", title)
				}
			}
			ctx := c.Context()
			return h.withSession(ctx, cli.WriteStore, args[0], true, func(st sessiondb.Store, s *sessiondb.Session) (err error) {
				src := s.ID
				if clean != "" {
					// Check before forking, so a taken title does not leave
					// an untitled fork behind.
					if other, err := st.GetSessionByTitle(ctx, clean); err == nil {
						return sessiondb.Errorf(sessiondb.ECONFLICT, "Title '%s' is already in use by session %s: choose another --title", clean, other.ID)
					} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
						return err
					}
				}
				cutAt := at
				if !c.Flags().Changed("at") {
					if cutAt, err = lastMessageID(ctx, st, src); err != nil {
						return err
					}
				} else if err := checkMessageOf(ctx, st, src, at); err != nil {
					return err
				}
				if newID == "" {
					if newID, err = newSessionID(h.Now()); err != nil {
						return err
					}
				}
				id, err := st.ForkSession(ctx, src, cutAt, sessiondb.NewSession{
					ID: newID, Source: s.Source, Model: deref(s.Model),
					SystemPrompt: deref(s.SystemPrompt), UserID: deref(s.UserID),
				})
				if err != nil {
					return err
				}
				if clean != "" {
					if _, err := st.SetSessionTitle(ctx, id, clean); err != nil {
						return sessiondb.Wrap("", err, "forked %s into %s, but could not title it", src, id)
					}
				}
				child, err := st.GetSession(ctx, id)
				if err != nil {
					return err
				}
				if h.JSON {
					return h.PrintJSON(child)
				}
				h.Printf("%s\n", cli.PrintableLine(fmt.Sprintf("forked %s into %s (%d messages copied)", src, id, child.MessageCount)))
				return nil
			})
		},
	}
	c.Flags().Int64Var(&at, "at", 0, "copy messages up to and including the message with this id, as show prints it (default: all)")
	c.Flags().StringVar(&newID, "id", "", "id of the new session, at most 255 bytes (default: a new time-based id)")
	c.Flags().StringVar(&title, "title", "", "title of the new session")
	h.addSynchronousFlag(c)
	return c
}

// lastMessageID is the id of the session's newest message, 0 if it has none.
func lastMessageID(ctx context.Context, st sessiondb.MessageService, id string) (int64, error) {
	p, err := st.GetMessagesPage(ctx, id, sessiondb.Page{Limit: 1})
	if err != nil {
		return 0, err
	}
	var last int64
	for _, m := range p.Messages {
		last = max(last, m.ID)
	}
	return last, nil
}

// checkMessageOf fails invalid unless message id belongs to session src:
// the store would take any id as a cut point, and a number copied from the
// wrong transcript should not fork silently.
func checkMessageOf(ctx context.Context, st sessiondb.MessageService, src string, id int64) error {
	p, err := st.GetMessagesPage(ctx, src, sessiondb.Page{AfterID: id - 1, Limit: 1})
	if err != nil {
		return err
	}
	for _, m := range p.Messages {
		if m.ID == id {
			return nil
		}
	}
	return sessiondb.Errorf(sessiondb.EINVALID, "--at %d: session %s has no message with id %d (the ids are the \"id N\" beside each message in `sessiondb show %s`, not its #n)", id, src, id, src)
}

// newSessionID makes an id in Hermes' shape, 20260315_092437_c9a6ff: the
// start time to the second plus six random hex digits.
func newSessionID(now time.Time) (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "make a session id: %v", err)
	}
	return now.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:]), nil
}

// checkNewID rejects ids a person could not type back: empty, too long, or
// holding white space or control characters.
func checkNewID(id string) error {
	if id == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "--id is empty: give the new session's id, or leave --id out for a generated one")
	}
	if len(id) > sessiondb.MaxSessionIDBytes {
		return sessiondb.Errorf(sessiondb.EINVALID, "--id is %d bytes long, the limit is %d", len(id), sessiondb.MaxSessionIDBytes)
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return sessiondb.Errorf(sessiondb.EINVALID, "--id %q: white space and control characters are not allowed in a session id", id)
		}
	}
	return nil
}

func (h *group) endCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "end <id|prefix|title>",
		Short: "Mark a session ended, with a reason",
		Long: `Set a session's end time to now and its end reason. The first reason wins:
ending an ended session changes nothing (reopen it first to end it again).
The reason is one line of text, at most 128 bytes, without control characters.`,
		Example: `  sessiondb end 20261006_164519_f28a0c
  sessiondb end proj --reason compression`,
		Args: cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "--reason is empty: say why the session ended (user_exit, compression, ...)")
			}
			return h.changeSession(c, args[0], true, nil, func(st sessiondb.SessionService, id string) error {
				return st.EndSession(c.Context(), id, reason)
			}, func(before, after *sessiondb.Session) string {
				if before.EndedAt != nil {
					return fmt.Sprintf("%s was already ended at %s (%s); reopen it to end it again", after.ID, fmtTime(*before.EndedAt), cli.OrDash(deref(before.EndReason)))
				}
				return fmt.Sprintf("ended %s (%s)", after.ID, deref(after.EndReason))
			})
		},
	}
	c.Flags().StringVar(&reason, "reason", "user_exit", "why the session ended: user_exit, compression, idle_timeout, ...")
	h.addSynchronousFlag(c)
	return c
}

func (h *group) reopenCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "reopen <id|prefix|title>",
		Short:   "Clear a session's end time and reason",
		Long:    `Make an ended session open again: its end time and end reason are cleared.`,
		Example: `  sessiondb reopen 20260315_092437_c9a6ff`,
		Args:    cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			return h.changeSession(c, args[0], true, nil, func(st sessiondb.SessionService, id string) error {
				return st.ReopenSession(c.Context(), id)
			}, func(before, after *sessiondb.Session) string {
				if before.EndedAt == nil {
					return after.ID + " was open already"
				}
				return "reopened " + after.ID
			})
		},
	}
	h.addSynchronousFlag(c)
	return c
}

// archiveCmd is archive (archived) or unarchive.
func (h *group) archiveCmd(archived bool) *cobra.Command {
	verb, short, long := "archive", "Hide a conversation from listings, keeping every message", `Archive a session, as Hermes' /archive does: the session and its whole
compression lineage (the sessions it continued from and the ones that
continue it) get Hermes' archived flag. Nothing is deleted: an archived
session keeps its messages, shows, exports and is found by id as before;
listings and counts leave it out unless asked (sessions --archived).
`+"`sessiondb unarchive`"+` undoes it.

The flag is a column of newer Hermes (schema 14 on) and of PostgreSQL; a
schema-6 file, as sessiondb makes, has none, and sessiondb adds no column to
Hermes' tables: archiving there fails and says so.`
	example := `  sessiondb archive 20260315_092437_c9a6ff
  sessiondb --db ~/.hermes/state.db archive "Docker build"`
	if !archived {
		verb, short, long = "unarchive", "Bring an archived conversation back into listings", `Unarchive a session: the session and its whole compression lineage lose
Hermes' archived flag, as Hermes' unarchive does, and show in listings
again.`
		example = `  sessiondb unarchive 20260315_092437_c9a6ff`
	}
	c := &cobra.Command{
		Use:     verb + " <id|prefix|title>",
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cli.ExactArgs(1, "one session id, id prefix or title"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			ctx := c.Context()
			return h.withSession(ctx, cli.WriteStore, args[0], true, func(st sessiondb.Store, s *sessiondb.Session) error {
				n, err := st.SetSessionArchived(ctx, s.ID, archived)
				if err != nil {
					return err
				}
				if n == 0 {
					return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s was gone before it could be %sd", s.ID, verb)
				}
				if h.JSON {
					return h.PrintJSON(map[string]any{"id": s.ID, "archived": archived, "sessions": n})
				}
				line := fmt.Sprintf("%sd %s", verb, s.ID)
				if n > 1 {
					line += fmt.Sprintf(" with its compression lineage (%d sessions)", n)
				}
				h.Printf("%s\n", cli.PrintableLine(line))
				return nil
			})
		},
	}
	h.addSynchronousFlag(c)
	return c
}

func (h *group) clearCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "clear <id|prefix>",
		Short: "Delete a session's messages, keep the session",
		Long: `Delete every message of a session and reset its message and tool-call
counts; the session row, its title and its token and cost totals stay.
On a terminal you are shown the session and asked to confirm; --yes skips
the question. Without a terminal on stdin (a script, a pipe, cron, systemd,
</dev/null) nobody can answer and it goes ahead. Only an exact id or a
unique id prefix is accepted, not a title.`,
		Example: `  sessiondb clear 20260701_020000_e1d442
  sessiondb clear 20260701_020000 --yes`,
		Args: cli.ExactArgs(1, "one session id or id prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			ask := func(s *sessiondb.Session) error {
				return h.Confirm(yes, nil, fmt.Sprintf("Delete the %d message(s) of session %s %q? The session and its title stay; the messages cannot be brought back.",
					s.MessageCount, s.ID, deref(s.Title)))
			}
			return h.changeSession(c, args[0], false, ask, func(st sessiondb.SessionService, id string) error {
				return st.ClearMessages(c.Context(), id)
			}, func(before, after *sessiondb.Session) string {
				return fmt.Sprintf("cleared %d message(s) from %s", before.MessageCount, after.ID)
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	h.addSynchronousFlag(c)
	return c
}

// changeSession runs one change on a resolved session and reports it with
// the rows before and after (as JSON: the row after). ask, when set, may
// refuse the change once the session is found (a question on a terminal).
func (h *group) changeSession(c *cobra.Command, ref string, byTitle bool, ask func(*sessiondb.Session) error, change func(sessiondb.SessionService, string) error, say func(before, after *sessiondb.Session) string) error {
	if err := h.checkSynchronous(); err != nil {
		return err
	}
	ctx := c.Context()
	return h.withSession(ctx, cli.WriteStore, ref, byTitle, func(st sessiondb.Store, before *sessiondb.Session) error {
		id := before.ID
		if ask != nil {
			if err := ask(before); err != nil {
				return err
			}
		}
		if err := change(st, id); err != nil {
			return err
		}
		after, err := st.GetSession(ctx, id)
		if err != nil {
			return err
		}
		if h.JSON {
			return h.PrintJSON(after)
		}
		h.Printf("%s\n", cli.PrintableLine(say(before, after)))
		return nil
	})
}

func (h *group) deleteCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "delete <id|prefix>",
		Short: "Delete a session and its messages, with its delegate subagents",
		Long: `Delete a session and all of its messages. As Hermes deletes a session, its
delegate subagents (sessions a delegated task ran in, marked _delegate_from
in their model_config) go with it, and theirs in turn; sessions that
continued, branched or forked from it stay, without a parent. On a terminal
you are shown the session and its delegates and asked to confirm; --yes
skips the question. Without a terminal on stdin (a script, a pipe, cron,
systemd, </dev/null) nobody can answer and it goes ahead. Only an exact id or
a unique id prefix is accepted, not a title.`,
		Example: `  sessiondb delete 20260509_081244_a3f9e0
  sessiondb delete 20260509_081244 --yes`,
		Args: cli.ExactArgs(1, "one session id or id prefix"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			ctx := c.Context()
			return h.withSession(ctx, cli.WriteStore, args[0], false, func(st sessiondb.Store, s *sessiondb.Session) error {
				id := s.ID
				q := fmt.Sprintf("Delete session %s %q with its %d message(s)? This cannot be undone.", id, deref(s.Title), s.MessageCount)
				var show func(io.Writer) error
				if !yes && cli.IsTerminal(h.In) {
					delegates, err := st.DelegatesOf(ctx, id)
					if err != nil {
						return err
					}
					if len(delegates) > 0 {
						q = fmt.Sprintf("Delete session %s %q with its %d message(s), and its %d delegate subagent session(s) with theirs? This cannot be undone.", id, deref(s.Title), s.MessageCount, len(delegates))
						show = func(w io.Writer) error {
							_, err := fmt.Fprintf(w, "delegate subagents that go with it: %s\n", cli.PrintableLine(strings.Join(delegates, ", ")))
							return err
						}
					}
				}
				if err := h.Confirm(yes, show, q); err != nil {
					return err
				}
				ids, err := st.DeleteSession(ctx, id)
				if err != nil {
					return err
				}
				delegates := []string{}
				if len(ids) > 1 {
					delegates = ids[1:]
				}
				if h.JSON {
					return h.PrintJSON(map[string]any{"id": id, "deleted": len(ids) > 0, "delegates": delegates})
				}
				if len(ids) == 0 {
					return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %s was already gone", id)
				}
				h.Printf("deleted %s (%d messages)\n", cli.PrintableLine(id), s.MessageCount)
				if len(delegates) > 0 {
					h.Printf("deleted with it, its delegate subagents: %s\n", cli.PrintableLine(strings.Join(delegates, ", ")))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	h.addSynchronousFlag(c)
	return c
}

func (h *group) pruneCmd() *cobra.Command {
	var olderThan, source string
	var dryRun, yes bool
	c := &cobra.Command{
		Use:   "prune --older-than AGE",
		Short: "Delete ended sessions started longer ago than an age",
		Long: `Delete every ended session that started before the given age, with its
messages; open sessions are never pruned. Sessions continuing from a pruned
one stay, without a parent: its delegate subagents too, as Hermes' prune
leaves them (delete takes them with their parent). --older-than is required: there is no default
age. --dry-run lists what would go and changes nothing. On a terminal the
sessions are listed and you are asked to confirm; --yes skips the question.
Without a terminal on stdin (a script, a pipe, cron, systemd, </dev/null)
nobody can answer and it goes ahead.`,
		Example: `  sessiondb prune --older-than 90d --dry-run
  sessiondb prune --older-than 2w --source cron
  sessiondb prune --older-than 180 --yes      # plain number: days; no question`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if olderThan == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "--older-than is required: say how long ago an ended session must have started to be pruned, e.g. --older-than 90d (add --dry-run to list them first)")
			}
			days, err := parseAge("--older-than", olderThan)
			if err != nil {
				return err
			}
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			ctx := c.Context()
			if dryRun {
				return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
					doomed, err := h.prunable(ctx, st, days, source)
					if err != nil {
						return err
					}
					if h.JSON {
						return h.PrintJSON(map[string]any{"dry_run": true, "would_prune": len(doomed), "sessions": doomed})
					}
					if err := pruneTable(doomed).Write(h.Out); err != nil {
						return err
					}
					h.Printf("would prune %d session(s) (dry run: nothing was deleted)\n", len(doomed))
					return nil
				})
			}
			return h.withStore(ctx, cli.WriteStore, func(st sessiondb.Store) error {
				var doomed []sessiondb.Session
				show := func(w io.Writer) error {
					return pruneTable(doomed).Write(w)
				}
				if !yes && cli.IsTerminal(h.In) {
					if doomed, err = h.prunable(ctx, st, days, source); err != nil {
						return err
					}
					if len(doomed) == 0 {
						yes = true // nothing to ask about
					}
				}
				if err := h.Confirm(yes, show, fmt.Sprintf("Delete these %d session(s) and their messages? This cannot be undone.", len(doomed))); err != nil {
					return err
				}
				var n int
				err := h.Spin("pruning", func() (err error) {
					n, err = st.PruneSessions(ctx, days, source)
					return err
				})
				if err != nil {
					return err
				}
				if h.JSON {
					return h.PrintJSON(map[string]any{"dry_run": false, "pruned": n})
				}
				h.Printf("pruned %d session(s)\n", n)
				return nil
			})
		},
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "required: prune ended sessions started longer ago than this age: 90d, 12h, 2w or a plain number of days")
	c.Flags().StringVar(&source, "source", "", "prune only sessions of this source")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be pruned, change nothing")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	h.addSynchronousFlag(c)
	return c
}

// prunable lists the sessions prune would delete by the command's clock
// (sessiondb.PruneCandidates).
func (h *group) prunable(ctx context.Context, st sessiondb.Store, days float64, source string) ([]sessiondb.Session, error) {
	return sessiondb.PruneCandidates(ctx, st, h.Now(), days, source)
}

// pruneTable lists sessions prune would delete (no rows: an empty table).
func pruneTable(doomed []sessiondb.Session) *cli.Table {
	t := &cli.Table{}
	if len(doomed) == 0 {
		return t
	}
	t.Row("ID", "TITLE", "SOURCE", "STARTED", "ENDED", "MSGS")
	for i := range doomed {
		d := &doomed[i]
		t.Row(d.ID, cli.OrDash(cli.Cut(deref(d.Title), 32)), d.Source, fmtTime(d.StartedAt), fmtTime(*d.EndedAt), strconv.FormatInt(d.MessageCount, 10))
	}
	return t
}
