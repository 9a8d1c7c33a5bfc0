package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

func (h *group) copyCmd() *cobra.Command {
	var from, to string
	var jobs int
	c := &cobra.Command{
		Use:   "copy --from STORE --to STORE",
		Short: "Copy every session from one store to another (a file to PostgreSQL, or back)",
		Long: `Copy every session of one history store into another, whole: every column
of its row (the live gateway state of a newer Hermes too), every message row
with all its fields (rows hidden by a rewind or a compaction with their
marks), its usage rows by model and its parent link: from a state.db file to
a PostgreSQL server to move to it, or back. Either side is a file path or a
postgres:// URL; the target is created when missing (a new file is schema 6).

What the target has no place for (a newer Hermes' fields in a file of
schema 6) is named in a warning and counted under "dropped" in --json; a
hidden row such a file cannot mark is left out rather than made live. To
keep everything in a file, copy into a state.db the current Hermes made.

Parents are copied before their children, a batch of sessions per commit,
each session whole or not at all. Into PostgreSQL two batches are written
at once by default, while the next is read, as the server inserts them on
two cores (--jobs sets how many; a SQLite file takes one); a batch holding
a continuation waits for its parent's batch, so a stopped copy leaves no
child without its parent. Sessions already in the target are skipped, so an
interrupted copy is resumed by running it again, and a second run changes
nothing. At the end both sides are read back and compared with a
checksum over every copied session (what both sides keep: the columns both
have, the messages in order, the usage rows); a difference fails the command,
naming each session as held in the target before with other content, or as
changed in the source while it was copied (a session in use: copy it anew by
deleting it from the target and copying again). A session deleted from the
source since it was listed is not compared. A session whose parent the
source lacks (deleted with the foreign keys off), or is the session itself,
is copied without it, named in a warning and under "unparented" in --json.`,
		Example: `  sessiondb copy --from ~/.hermes/state.db --to postgres://agent@db.internal/sessions
  sessiondb copy --from postgres://agent@db.internal/sessions --to backup.db
  sessiondb copy --from ~/.hermes/state.db --to postgres://db.internal/agents --jobs 4`,
		Args: cli.ExactArgs(0, "no arguments (the stores are --from and --to)"),
		RunE: func(c *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "copy needs both --from and --to")
			}
			if from == to {
				return sessiondb.Errorf(sessiondb.EINVALID, "--from and --to name the same store")
			}
			jobs, err := importJobs(jobs, to)
			if err != nil {
				return err
			}
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			return h.copy(c.Context(), from, to, jobs)
		},
	}
	c.Flags().StringVar(&from, "from", "", "the store to copy from: a state.db file or a postgres:// URL (read only)")
	c.Flags().StringVar(&to, "to", "", "the store to copy into: a state.db file or a postgres:// URL (created when missing)")
	addJobsFlag(c, &jobs)
	h.addSynchronousFlag(c)
	return c
}

func (h *group) copy(ctx context.Context, from, to string, jobs int) (err error) {
	src, err := h.OpenHistoryAt(ctx, from, cli.ReadStore, "")
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND && !store.IsURL(from) {
		// The generic hint names --db, which copy does not take.
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "--from %s: no history store there; name a state.db file or a postgres:// URL to copy from", cli.PrintableLine(from))
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := h.OpenHistoryAt(ctx, to, cli.CreateStore, h.synchronous)
	if err != nil {
		return err
	}
	defer cli.CloseInto(&err, dst, "close "+errtext.RedactPassword(to))
	var bar *cli.ProgressLine
	rep, err := sessiondb.Copy(ctx, src, dst, sessiondb.CopyOptions{Jobs: jobs, Progress: func(done, total int) {
		if bar == nil {
			bar = cli.NewProgressLine(h.Err, h.Now, "copying", int64(total), "sessions")
		}
		bar.Set(int64(done))
	}})
	bar.Done()
	if err != nil {
		switch {
		case rep == nil || rep.Copied == 0:
		case ctx.Err() != nil:
			// Interrupted: the error is not printed (cli.Run), so this is.
			fmt.Fprintf(h.Err, "stopped after copying %d sessions, which stay; running the copy again resumes it\n", rep.Copied)
		default:
			return sessiondb.Wrap("", err, "%d sessions were copied before it stopped; run it again to resume", rep.Copied)
		}
		return err
	}
	if h.JSON {
		if rep.Dropped == nil {
			rep.Dropped = []sessiondb.DroppedField{}
		}
		return h.PrintJSON(rep)
	}
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(h.Err, "warning: the target has no place for %s: not copied (a newer Hermes' fields in an older file; copy into a state.db the current Hermes made to keep them)\n",
			sessiondb.DroppedText(rep.Dropped))
	}
	if n := len(rep.Unparented); n > 0 {
		names := strings.Join(rep.Unparented[:min(n, 5)], ", ")
		if n > 5 {
			names += ", ..."
		}
		fmt.Fprintf(h.Err, "warning: %d sessions name a parent the source lacks, or themselves, and were copied without it: %s\n",
			n, cli.PrintableLine(names))
	}
	fmt.Fprintf(h.Out, "copied %d sessions (%d were there already), %d messages in all; checksum %s matches on both sides\n",
		rep.Copied, rep.Skipped, rep.Messages, rep.Checksum)
	return nil
}
