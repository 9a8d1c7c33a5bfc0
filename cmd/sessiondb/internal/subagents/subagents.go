// Package subagents holds `sessiondb subagents ...`: janebot's subagent
// store (one coding subagent per Slack thread) from a shell.
package subagents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// Commands returns the `subagents` command.
func Commands(f *cli.Factory) []*cobra.Command {
	s := &group{Factory: f}
	c := &cobra.Command{
		Use:   "subagents",
		Short: "janebot's subagent sessions: list, show, prune, reconcile",
		Long: `janebot keeps one coding subagent per Slack thread in its state.sqlite: the
thread's sandbox, its transcript file, and the job running in it (status idle,
running or error). --subagents names the file; by default it is janebot's own:
$SESSION_DB_PATH, else $WORKSPACE_DIR/.janebot/state.sqlite (the current folder
when WORKSPACE_DIR is unset). With --json a record's keys are snake_case, as
every command's are: janebot's channelId is channel_id, createdAt created_at
(epoch milliseconds, as the file keeps them).`,
		Example: `  sessiondb subagents list --status running
  sessiondb subagents show --thread C123:1234.567
  sessiondb subagents reconcile          # reset running jobs whose process is gone
  sessiondb subagents prune --older-than 720h`,
	}
	c.PersistentFlags().StringVar(&s.path, "subagents", "", "janebot's state.sqlite (default $SESSION_DB_PATH, else $WORKSPACE_DIR/.janebot/state.sqlite)")
	c.AddCommand(s.listCmd(), s.showCmd(), s.pruneCmd(), s.reconcileCmd())
	return []*cobra.Command{c}
}

type group struct {
	*cli.Factory
	path string
}

// with opens the store (which must exist) and runs fn.
func (s *group) with(c *cobra.Command, write bool, fn func(ctx context.Context, st sessiondb.SubagentService) error) (err error) {
	path := s.path
	if path == "" {
		cwd, err := os.Getwd()
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "find the current folder")
		}
		path = sessiondb.DefaultSubagentPath(os.LookupEnv, cwd)
	}
	if write && s.ReadOnly {
		return sessiondb.Errorf(sessiondb.EINVALID, "this command changes the subagent store, and --read-only was given: drop --read-only to run it")
	}
	st, err := store.OpenSubagents(c.Context(), path, store.Options{MustExist: true, Now: s.Now,
		Logger: s.WarnLogger()})
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no subagent store at %s: point --subagents (or SESSION_DB_PATH) at janebot's state.sqlite", errtext.RedactPassword(path))
	}
	if err != nil {
		return err
	}
	defer cli.CloseInto(&err, st, "close subagent store")
	return fn(c.Context(), st)
}

// ms formats epoch milliseconds.
func ms(v int64) string {
	if v == 0 {
		return "-"
	}
	return time.UnixMilli(v).UTC().Format("2006-01-02 15:04:05")
}

var subagentColumns = cli.Columns[sessiondb.Subagent]{
	Header: []string{"ID", "THREAD", "STATUS", "JOB", "TURNS", "UPDATED", "LAST ERROR"},
	Cells: func(a sessiondb.Subagent) []string {
		return []string{a.ID, a.Key, string(a.Status), cli.OrDash(a.JobID()), fmt.Sprint(a.Turns), ms(a.UpdatedAt), cli.OrDash(cli.Cut(a.LastError, 60))}
	},
}

func (s *group) listCmd() *cobra.Command {
	var (
		f             sessiondb.SubagentFilter
		before, after string
	)
	c := &cobra.Command{
		Use:   "list [--channel C] [--status idle|running|error] [--updated-before T] [--updated-after T] [--limit N] [--cursor C]",
		Short: "List subagent sessions, most recently updated first",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if f.UpdatedBefore, err = parseWhen("updated-before", before, s.Now()); err != nil {
				return err
			}
			if f.UpdatedAfter, err = parseWhen("updated-after", after, s.Now()); err != nil {
				return err
			}
			if err := f.Validate(); err != nil {
				return err
			}
			return s.with(c, false, func(ctx context.Context, st sessiondb.SubagentService) error {
				p, err := st.ListSubagents(ctx, f)
				if err != nil {
					return err
				}
				p.Subagents = sessiondb.NonNil(p.Subagents)
				page := recordPage{Subagents: make([]record, len(p.Subagents)), NextCursor: p.NextCursor}
				for i, a := range p.Subagents {
					page.Subagents[i] = recordOf(a)
				}
				return cli.PrintPage(s.Factory, page, p.Subagents, p.NextCursor, subagentColumns)
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.ChannelID, "channel", "", "only this Slack channel's threads")
	fl.StringVar((*string)(&f.Status), "status", "", "only this status: idle|running|error")
	fl.StringVar(&before, "updated-before", "", "updated before this time (RFC 3339) or this long ago (24h)")
	fl.StringVar(&after, "updated-after", "", "updated after this time (RFC 3339) or this long ago (24h)")
	fl.IntVar(&f.Limit, "limit", 100, "records per page")
	fl.StringVar(&f.Cursor, "cursor", "", "continue after the previous page")
	return c
}

// parseWhen reads a time flag as RFC 3339 or as a duration before now, in
// epoch ms; "" is 0 (unbounded).
func parseWhen(flag, v string, now time.Time) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d).UnixMilli(), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, sessiondb.Errorf(sessiondb.EINVALID, "--%s %q: want an RFC 3339 time or a positive duration such as 24h", flag, v)
}

func (s *group) showCmd() *cobra.Command {
	var thread string
	c := &cobra.Command{
		Use:   "show (ID | --thread CHANNEL:TS)",
		Short: "Show one subagent session",
		Args:  cli.RangeArgs(0, 1, "one subagent id, or --thread"),
		RunE: func(c *cobra.Command, args []string) error {
			if (len(args) == 1) == (thread != "") {
				return sessiondb.Errorf(sessiondb.EINVALID, "give a subagent id or --thread CHANNEL:TS, not both or neither")
			}
			return s.with(c, false, func(ctx context.Context, st sessiondb.SubagentService) error {
				var a sessiondb.Subagent
				var err error
				if thread != "" {
					ch, ts, ok := strings.Cut(thread, ":")
					if !ok || ch == "" || ts == "" {
						return sessiondb.Errorf(sessiondb.EINVALID, "--thread %q: want CHANNEL:TS, e.g. C123:1234.567", thread)
					}
					a, err = st.GetSubagentByThread(ctx, ch, ts)
				} else {
					a, err = st.GetSubagent(ctx, args[0])
				}
				if err != nil {
					return err
				}
				if s.JSON {
					return s.PrintJSON(recordOf(a))
				}
				return cli.WriteFields(s.Out, [][2]string{{"id", a.ID}, {"thread", a.Key}, {"sandbox", a.SandboxName}, {"transcript", a.PISessionFile},
					{"status", string(a.Status)}, {"running job", a.RunningJobID}, {"last job", a.LastJobID}, {"last error", a.LastError},
					{"turns", fmt.Sprint(a.Turns)}, {"created", ms(a.CreatedAt)}, {"updated", ms(a.UpdatedAt)}})
			})
		},
	}
	c.Flags().StringVar(&thread, "thread", "", "the Slack thread, CHANNEL:TS")
	return c
}

func (s *group) pruneCmd() *cobra.Command {
	var (
		older    time.Duration
		statuses []string
		yes      bool
	)
	c := &cobra.Command{
		Use:   "prune --older-than DURATION [--status idle,error] [--yes]",
		Short: "Delete subagent records not updated for DURATION (never running ones)",
		Long: `prune deletes the records of threads whose subagent has not been updated for
--older-than, with the given statuses (default idle and error); a running
record is never deleted. The transcripts and sandboxes they name are left
alone. Shows what goes and asks first on a terminal.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if older <= 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--older-than is required and must be positive, e.g. 720h")
			}
			var sts []sessiondb.SubagentStatus
			for _, v := range statuses {
				st := sessiondb.SubagentStatus(v)
				if err := st.Validate(); err != nil {
					return sessiondb.Wrap(sessiondb.EINVALID, err, "--status")
				}
				if st == sessiondb.SubagentRunning {
					return sessiondb.Errorf(sessiondb.EINVALID, "--status running: running records are never pruned")
				}
				sts = append(sts, st)
			}
			return s.with(c, true, func(ctx context.Context, st sessiondb.SubagentService) error {
				cutoff := s.Now().Add(-older).UnixMilli()
				show := func(w io.Writer) error {
					var doomed []sessiondb.Subagent
					want := sts
					if len(want) == 0 {
						want = []sessiondb.SubagentStatus{sessiondb.SubagentIdle, sessiondb.SubagentError}
					}
					for _, v := range want {
						p, err := st.ListSubagents(ctx, sessiondb.SubagentFilter{Status: v, UpdatedBefore: cutoff, Limit: 20})
						if err != nil {
							return err
						}
						doomed = append(doomed, p.Subagents...)
					}
					fmt.Fprintf(w, "records not updated since %s (first ones):\n", ms(cutoff))
					return subagentColumns.Write(w, doomed)
				}
				if err := s.Confirm(yes, show, fmt.Sprintf("Delete the subagent records not updated for %s?", older)); err != nil {
					return err
				}
				n, err := st.PruneSubagents(ctx, older, sts...)
				if err != nil {
					return err
				}
				if s.JSON {
					return s.PrintJSON(map[string]any{"pruned": n})
				}
				fmt.Fprintf(s.Out, "pruned %d record(s)\n", n)
				return nil
			})
		},
	}
	c.Flags().DurationVar(&older, "older-than", 0, "age of the records to delete (e.g. 720h)")
	c.Flags().StringSliceVar(&statuses, "status", nil, "statuses to prune: idle, error (default both)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

// DefaultProbe is how reconcile asks whether a running job's agent still
// lives, as janebot does: a process started with --session <transcript>.
const DefaultProbe = `pgrep -f -- "--session $SESSIONDB_SUBAGENT_FILE" >/dev/null`

func (s *group) reconcileCmd() *cobra.Command {
	var (
		probe   string
		allDead bool
		yes     bool
	)
	c := &cobra.Command{
		Use:   "reconcile [--probe CMD | --all-dead] [--yes]",
		Short: "Reset running records whose agent process is gone to idle",
		Long: `reconcile asks, for every running record, whether its agent still lives, and
resets those that do not to idle (a compare-and-set on the job it saw, so a job
that finished meanwhile is left alone), as janebot does before dispatching and
should at startup. The probe is a shell command run once per running record
with SESSIONDB_SUBAGENT_ID, SESSIONDB_SUBAGENT_FILE (the transcript),
SESSIONDB_SUBAGENT_SANDBOX and SESSIONDB_SUBAGENT_JOB set: exit 0 means alive.
The default looks for a local process started with --session <transcript>;
--all-dead treats every running record as stale (after a reboot). Shows the
stale records and asks first on a terminal.`,
		Example: `  sessiondb subagents reconcile
  sessiondb subagents reconcile --probe 'sprite exec "$SESSIONDB_SUBAGENT_SANDBOX" -- pgrep -f "$SESSIONDB_SUBAGENT_FILE"'`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if allDead && c.Flags().Changed("probe") {
				return sessiondb.Errorf(sessiondb.EINVALID, "--probe and --all-dead exclude each other")
			}
			return s.with(c, true, func(ctx context.Context, st sessiondb.SubagentService) error {
				// Probe first, outside any transaction, so the question is
				// asked about what will be reset.
				var running []sessiondb.Subagent
				f := sessiondb.SubagentFilter{Status: sessiondb.SubagentRunning, Limit: 1000}
				for {
					p, err := st.ListSubagents(ctx, f)
					if err != nil {
						return err
					}
					running = append(running, p.Subagents...)
					if p.NextCursor == "" {
						break
					}
					f.Cursor = p.NextCursor
				}
				dead := map[string]string{} // id → the job seen dead
				var stale []sessiondb.Subagent
				for _, a := range running {
					if allDead || !probeAlive(ctx, probe, a) {
						dead[a.ID] = a.RunningJobID
						stale = append(stale, a)
					}
				}
				if len(stale) == 0 {
					if s.JSON {
						return s.PrintJSON(map[string]any{"running": len(running), "reset": []string{}})
					}
					fmt.Fprintf(s.Out, "%d running record(s), none stale\n", len(running))
					return nil
				}
				show := func(w io.Writer) error { return subagentColumns.Write(w, stale) }
				if err := s.Confirm(yes, show, fmt.Sprintf("Reset these %d running record(s) to idle?", len(stale))); err != nil {
					return err
				}
				reset, err := st.ReconcileRunning(ctx, func(a sessiondb.Subagent) bool {
					job, ok := dead[a.ID]
					return !ok || job != a.RunningJobID
				})
				if err != nil {
					return err
				}
				if s.JSON {
					return s.PrintJSON(map[string]any{"running": len(running), "reset": reset})
				}
				fmt.Fprintf(s.Out, "reset %d of %d running record(s) to idle\n", len(reset), len(running))
				for _, id := range reset {
					fmt.Fprintln(s.Out, "  "+cli.PrintableLine(id))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&probe, "probe", DefaultProbe, "shell command that exits 0 while a record's agent lives")
	c.Flags().BoolVar(&allDead, "all-dead", false, "treat every running record as stale")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

// probeAlive runs the probe for a; exit 0 is alive. A probe that cannot
// run says alive: an unknown answer never resets a job.
func probeAlive(ctx context.Context, probe string, a sessiondb.Subagent) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", probe)
	cmd.Env = append(os.Environ(), "SESSIONDB_SUBAGENT_ID="+a.ID, "SESSIONDB_SUBAGENT_FILE="+a.PISessionFile,
		"SESSIONDB_SUBAGENT_SANDBOX="+a.SandboxName, "SESSIONDB_SUBAGENT_JOB="+a.RunningJobID)
	err := cmd.Run()
	if err == nil {
		return true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false
	}
	return true
}

// record is a subagent as --json prints it: janebot's record, field for
// field, with the snake_case keys of every command's JSON (the store's
// own record JSON, sessiondb.Subagent, keeps janebot's camelCase).
type record struct {
	ID            string                   `json:"id"`
	Key           string                   `json:"key"`
	ChannelID     string                   `json:"channel_id"`
	ThreadTS      string                   `json:"thread_ts"`
	SandboxName   string                   `json:"sandbox_name"`
	PISessionFile string                   `json:"pi_session_file"`
	Status        sessiondb.SubagentStatus `json:"status"`
	RunningJobID  string                   `json:"running_job_id,omitempty"`
	LastJobID     string                   `json:"last_job_id,omitempty"`
	LastError     string                   `json:"last_error,omitempty"`
	Turns         int64                    `json:"turns"`
	CreatedAt     int64                    `json:"created_at"`
	UpdatedAt     int64                    `json:"updated_at"`
}

// recordPage is a page of list --json.
type recordPage struct {
	Subagents  []record `json:"subagents"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

func recordOf(a sessiondb.Subagent) record {
	return record{ID: a.ID, Key: a.Key, ChannelID: a.ChannelID, ThreadTS: a.ThreadTS, SandboxName: a.SandboxName,
		PISessionFile: a.PISessionFile, Status: a.Status, RunningJobID: a.RunningJobID, LastJobID: a.LastJobID,
		LastError: a.LastError, Turns: a.Turns, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}
