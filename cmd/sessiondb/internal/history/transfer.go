package history

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/safefile"
)

func (h *group) exportCmd() *cobra.Command {
	var out, source string
	var liveOnly bool
	c := &cobra.Command{
		Use:   "export [id|prefix|title]",
		Short: "Write sessions with their messages as JSON Lines",
		Long: `Write one session, or every session (newest first, optionally of one source),
as JSON Lines: one object per session holding all its columns, a
"messages" list and, from a newer Hermes' file, its usage rows by model
("session_model_usage"). This is the format ` + "`sessiondb import`" + ` reads back,
and the shape of Hermes' own export: a multimodal message's content is its
list of parts, tool_calls decoded.

Every message row is written, with every column: rows a newer Hermes hid
(rewound, or summarised away by an in-place compaction) too, marked
"active": 0, so that an import elsewhere keeps them hidden. Hermes' own
export writes the live rows only, and Hermes' own import takes every row it
is given as live: give Hermes a file with --live-only.

Output goes to stdout, or with -o to a file readable only by you (0600):
conversations are private. The file is written beside the target and
renamed over it once complete, so an interrupted export leaves the old file
as it was; a symbolic link or a folder at the target is refused.`,
		Example: `  sessiondb export > backup.jsonl
  sessiondb export -o backup.jsonl --source telegram
  sessiondb export "Fix Docker build" | jq '.messages | length'`,
		Args: cli.RangeArgs(0, 1, "at most one session"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && source != "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "--source selects sessions for a full export: give either a session or --source")
			}
			ctx := c.Context()
			return h.withStore(ctx, cli.ReadStore, func(st sessiondb.Store) error {
				var id string
				if len(args) == 1 {
					var err error
					if id, err = sessiondb.FindSession(ctx, st, args[0], true); err != nil {
						return err
					}
				}
				return h.export(ctx, st, id, source, out, liveOnly)
			})
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "write to this file (created or replaced whole once complete, mode 0600; a symbolic link there is refused) instead of stdout")
	c.Flags().StringVar(&source, "source", "", "export only sessions of this source")
	c.Flags().BoolVar(&liveOnly, "live-only", false, "write only the rows Hermes resumes (active), as Hermes' own export does, for Hermes' own import")
	return c
}

// export writes session id, or all sessions of source when id is "", as
// JSONL to stdout or to the file out; with liveOnly without the hidden
// rows. The file is written beside out and renamed over it once complete
// (safefile): a failed or killed export leaves out as it was, and a link
// planted at out is refused.
func (h *group) export(ctx context.Context, st sessiondb.Store, id, source, out string, liveOnly bool) (err error) {
	if liveOnly {
		st = liveRows{st}
	}
	w := h.Out
	var f *safefile.File
	if out != "" {
		if f, err = safefile.Create("--output", out, 0o600); err != nil {
			return err
		}
		defer f.Abort()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	n := 0
	write := func(rec map[string]any) error {
		if err := sessiondb.WriteExport(bw, rec); err != nil {
			return sessiondb.Errorf(sessiondb.EINTERNAL, "write session %v: %w", rec["id"], err)
		}
		n++
		return nil
	}
	if id != "" {
		// One session, however large, a page of messages at a time.
		if err := sessiondb.WriteSessionExport(ctx, st, id, bw); err != nil {
			return sessiondb.Wrap("", err, "export session %s", id)
		}
		n++
	} else {
		var total int64
		var bar *cli.ProgressLine
		if cli.IsTerminal(h.Err) {
			if total, err = st.SessionCount(ctx, source); err != nil {
				return err
			}
			bar = cli.NewProgressLine(h.Err, h.Now, "exporting", total, "sessions")
		}
		err := st.ExportAll(ctx, source, func(rec map[string]any) error {
			if err := write(rec); err != nil {
				return err
			}
			bar.Set(int64(n))
			return nil
		})
		bar.Done()
		if err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return sessiondb.Errorf(sessiondb.EINTERNAL, "write export: %v", err)
	}
	if f == nil {
		return nil
	}
	if err := f.Commit(); err != nil {
		return err
	}
	if h.JSON {
		return h.PrintJSON(map[string]any{"exported": n, "file": out})
	}
	fmt.Fprintf(h.Err, "exported %d session(s) to %s\n", n, cli.PrintableLine(out))
	return nil
}

func (h *group) importCmd() *cobra.Command {
	var detach bool
	var jobs int
	c := &cobra.Command{
		Use:   "import <file.jsonl|->",
		Short: "Load sessions from a JSON Lines export (ours or Hermes')",
		Long: `Load sessions written by ` + "`sessiondb export`" + ` or by Hermes' session export: one
JSON object per line with the session's columns and its "messages". "-"
reads stdin. The store is created if it does not exist yet.

Importing is idempotent: a session already in the store is skipped, so the
same file can be loaded twice.

Every field the store has a column for is kept: a newer Hermes' message
fields (reasoning_content, codex_message_items, platform_message_id,
observed, effect_disposition), hidden rows with their active and compacted
marks, and the usage rows by model. A field the store has no place for (a
file of ours is schema 6: import into a state.db the current Hermes made to
keep them) is named in a warning and counted under "dropped" in --json; a
hidden row such a file cannot mark is left out rather than made live. As
Hermes' own import does, the live gateway state is reset: session_key,
chat_id, chat_type, thread_id, display_name, origin_json, expiry_finalized,
handoff_*, compression_failure_*, compression_fallback_streak and
rewind_count keep their defaults (copy keeps them). Hermes' own export
(hermes sessions export) is read as it is: content given as a list of parts
is stored as Hermes stores it. A message keeps its id where no other message
holds it; from the first that another holds on, a session's messages take
new ids, in order, so the session reads as it did. An id given must be from
1 to 2^53 (9007199254740992). Sessions commit in batches (up to 50
sessions or 5,000 messages, and whatever has been read before the input
makes it wait), each session all or nothing. On PostgreSQL two batches are
written at once by default, as the server inserts them on two cores
(--jobs sets how many; a SQLite file takes one). Interrupted, the command keeps
the batches committed and says how many sessions they hold. A bad line is
reported with its line number and what was wrong, the lines around it are
still imported, and the command exits with status 2. A continuation that
comes before its parent in the file is held back until the parent is in; one
whose parent is in neither the store nor the file (a partial export) fails,
unless --detach-orphans imports it without its parent. A session id is at
most 255 bytes and an end_reason one line of at most 128 bytes; a record
breaking either is a bad line (a store Hermes wrote may hold longer ids:
they still show, export and delete there).`,
		Example: `  sessiondb import examples/conversations.jsonl
  sessiondb --db /tmp/copy.db import backup.jsonl
  sessiondb export --source cli | sessiondb --db other.db import -
  sessiondb import telegram-only.jsonl --detach-orphans
  sessiondb --db postgres://db.internal/agents import history.jsonl --jobs 4`,
		Args: cli.ExactArgs(1, "one file (or - for stdin)"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := h.checkSynchronous(); err != nil {
				return err
			}
			loc, _ := h.HistoryPath()
			jobs, err := importJobs(jobs, loc)
			if err != nil {
				return err
			}
			name := args[0]
			var r io.Reader = h.In
			var size int64
			regular := false
			if name != "-" {
				f, err := os.Open(name)
				if err != nil {
					code := sessiondb.EINVALID
					if errors.Is(err, os.ErrNotExist) {
						code = sessiondb.ENOTFOUND
					}
					return sessiondb.Errorf(code, "cannot read %s: %v", name, err)
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil {
					if fi.IsDir() {
						return sessiondb.Errorf(sessiondb.EINVALID, "%s is a folder: give the JSONL file to import", name)
					}
					size, regular = fi.Size(), fi.Mode().IsRegular()
				}
				r = f
			}
			ctx := c.Context()
			return h.withStore(ctx, cli.CreateStore, func(st sessiondb.Store) error {
				res, err := h.importRecords(ctx, st, r, size, regular, name, detach, jobs)
				if err != nil {
					if res.Imported > 0 {
						fmt.Fprintf(h.Err, "stopped after importing %d session(s), which stay imported; importing the file again skips them\n", res.Imported)
					}
					return err
				}
				return h.reportImport(res, name)
			})
		},
	}
	c.Flags().BoolVar(&detach, "detach-orphans", false, "import a session whose parent is missing from store and input without its parent, instead of failing it")
	addJobsFlag(c, &jobs)
	h.addSynchronousFlag(c)
	return c
}

// maxImportJobs bounds --jobs: a batch being written is in memory whole
// (up to 5,000 messages), and a server's connections run out first.
const maxImportJobs = 64

// addJobsFlag adds --jobs, the batches import and copy write at once, to c.
func addJobsFlag(c *cobra.Command, jobs *int) {
	c.Flags().IntVar(jobs, "jobs", 0, "batches written at once, each in a transaction of its own (1 to 64; default 2 on PostgreSQL, where the server inserts them on as many cores; 1 on a SQLite file, which takes one writer at a time)")
}

// importJobs checks --jobs and gives what it means for the store at
// target: the number given, or by default store.ImportJobs.
func importJobs(jobs int, target string) (int, error) {
	if jobs < 0 || jobs > maxImportJobs {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "--jobs %d: give 1 to %d batches at once (0: the default)", jobs, maxImportJobs)
	}
	if jobs == 0 {
		return store.ImportJobs(target), nil
	}
	return jobs, nil
}

// importReport counts what an import did.
type importReport struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped"`
	Failed   int `json:"failed"`
	// Detached counts sessions imported without their missing parent.
	Detached int `json:"detached"`
	// Dropped names what the store has no place for (a newer Hermes'
	// columns and tables in an older file) and was not stored.
	Dropped []sessiondb.DroppedField `json:"dropped"`
	Errors  []lineError              `json:"errors"`
}

// lineError is one line of the input that was not imported.
type lineError struct {
	Line    int    `json:"line"`
	Session string `json:"session,omitempty"`
	Error   string `json:"error"`
}

// pendingLine is a record held back until its parent session is imported.
type pendingLine struct {
	line   int
	id     string
	parent string
	rec    map[string]any
}

// importRecords reads JSONL from r and imports every record. size is the
// input's length for the progress line (0 if unknown). With detach, a
// session whose parent is in neither the store nor the input is imported
// with parent_session_id NULL; without, it fails. Errors of single lines are
// collected in the result; only a failure of the store or the input as a
// whole (or cancellation) is returned, with the result so far: what it
// counts as imported is committed.
func (h *group) importRecords(ctx context.Context, st sessiondb.Store, r io.Reader, size int64, regular bool, name string, detach bool, jobs int) (*importReport, error) {
	res := &importReport{Errors: []lineError{}, Dropped: []sessiondb.DroppedField{}}
	bar := cli.NewProgressLine(h.Err, h.Now, "importing", size, "bytes")
	defer bar.Done()
	// A line's failure is found when it is read, or when its batch
	// commits; the report names them in the file's order.
	defer func() { slices.SortStableFunc(res.Errors, func(a, b lineError) int { return a.Line - b.Line }) }()
	// Up to jobs batches are written at once (each a transaction of its
	// own, on a connection of its own); mu guards what their writers
	// report into: res, present and fatal.
	var mu sync.Mutex
	var writers sync.WaitGroup
	defer writers.Wait()
	slots := make(chan struct{}, max(jobs, 1))
	var fatal error
	fail := func(line int, id string, err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed++
		res.Errors = append(res.Errors, lineError{Line: line, Session: id, Error: err.Error()})
	}
	// present caches sessions known to be in the store, so a chain of
	// continuations does not cost a lookup per record.
	present := map[string]bool{}
	isPresent := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return present[id]
	}
	// count records what importing session id did; mu is held.
	count := func(id string, r sessiondb.ImportResult) {
		res.Dropped = sessiondb.MergeDropped(res.Dropped, r.Dropped)
		if r.Imported {
			res.Imported++
		} else {
			res.Skipped++
		}
		present[id] = true
	}
	// Records are committed in batches (sessiondb.ImportBatchFull, and
	// whenever the input read so far is used up), one transaction each;
	// queued names the ids waiting in the batch, writing those of the
	// batches being written (each closed once its batch is done).
	var queue []pendingLine
	queued, queuedMsgs := map[string]bool{}, 0
	writing := map[string]chan struct{}{}
	// wait waits for the batch being written that holds id, if one does.
	wait := func(id string) {
		if done, ok := writing[id]; ok {
			<-done
			delete(writing, id)
		}
	}
	var flush func() error
	hasSession := func(id string) (bool, error) {
		if queued[id] {
			// A child of a session still in the batch: commit the
			// batch first, so the parent's outcome is known.
			if err := flush(); err != nil {
				return false, err
			}
		}
		wait(id)
		if isPresent(id) {
			return true, nil
		}
		_, err := st.GetSession(ctx, id)
		switch sessiondb.ErrorCode(err) {
		case "":
			mu.Lock()
			present[id] = true
			mu.Unlock()
			return true, nil
		case sessiondb.ENOTFOUND:
			return false, nil
		}
		return false, err
	}
	importOne := func(p pendingLine) error {
		r, err := st.ImportSession(ctx, p.rec, sessiondb.ImportOptions{})
		if err != nil && (sessiondb.ErrorCode(err) == sessiondb.EINTERNAL || sessiondb.ErrorCode(err) == sessiondb.EBUSY) {
			// The store itself is failing: stop rather than report every
			// remaining line as bad.
			return sessiondb.Wrap("", err, "%s line %d (session %s)", name, p.line, p.id)
		}
		if err != nil {
			fail(p.line, p.id, err)
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		count(p.id, r)
		return nil
	}
	// write imports one batch; batches run at once up to jobs.
	write := func(batch []pendingLine) error {
		recs := make([]map[string]any, len(batch))
		for i, p := range batch {
			recs[i] = p.rec
		}
		// results are committed whatever err says: they are counted
		// first, so that a stopped import's count holds them.
		results, err := st.ImportSessions(ctx, recs, sessiondb.ImportOptions{})
		mu.Lock()
		for i, r := range results {
			count(batch[i].id, r)
		}
		mu.Unlock()
		if err != nil && ctx.Err() != nil {
			return ctx.Err() // stopped: the rest are not bad lines
		}
		if err != nil {
			// The batch stopped at rest[0] (the sessions before it are
			// committed) or failed whole: the rest go one at a time,
			// each failure named by its line as before.
			for _, p := range batch[len(results):] {
				if err := importOne(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return fatal
	}
	flush = func() error {
		if err := failed(); err != nil || len(queue) == 0 {
			return err
		}
		batch, done := queue, make(chan struct{})
		for _, p := range batch {
			writing[p.id] = done
		}
		queue, queuedMsgs = nil, 0
		clear(queued)
		slots <- struct{}{}
		writers.Add(1)
		go func() {
			defer writers.Done()
			defer func() { <-slots }()
			defer close(done)
			if err := write(batch); err != nil {
				mu.Lock()
				fatal = cmp.Or(fatal, err)
				mu.Unlock()
			}
		}()
		return nil
	}
	// settle waits for every batch being written, and gives the first
	// failure of the store itself.
	settle := func() error {
		writers.Wait()
		clear(writing)
		return failed()
	}
	enqueue := func(p pendingLine) error {
		// An id a batch being written holds: the first line in the file
		// wins, as one batch at a time, so this one waits for that batch
		// (and is skipped), rather than racing it.
		wait(p.id)
		queue = append(queue, p)
		queued[p.id] = true
		queuedMsgs += sessiondb.RecordMessages(p.rec)
		if sessiondb.ImportBatchFull(len(queue), queuedMsgs) {
			return flush()
		}
		return nil
	}

	var held []pendingLine
	br := bufio.NewReaderSize(r, 1<<20)
	var read int64
	for line := 1; ; line++ {
		// Before a read that may wait (a pipe whose writer is slow, a
		// person at a terminal), what was read is committed: a batch
		// waits for input no longer than it takes to arrive. A regular
		// file's reads do not wait: its batches are cut by size alone.
		if !regular && br.Buffered() == 0 {
			if err := flush(); err != nil {
				return res, err
			}
			if err := settle(); err != nil {
				return res, err
			}
		}
		raw, rerr := br.ReadBytes('\n')
		// Checked after the read, which may have waited long on stdin: no
		// new session starts once the user has asked to stop.
		if err := ctx.Err(); err != nil {
			return res, err
		}
		read += int64(len(raw))
		if rerr != nil && rerr != io.EOF {
			return res, sessiondb.Errorf(sessiondb.EINTERNAL, "read %s: %v", name, rerr)
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 {
			p, err := parseRecord(t, line)
			if err != nil {
				fail(line, "", err)
			} else {
				ok := true
				if p.parent != "" {
					if ok, err = hasSession(p.parent); err != nil {
						return res, err
					}
				}
				if !ok {
					held = append(held, p)
				} else if err := enqueue(p); err != nil {
					return res, err
				}
			}
			bar.Set(read)
		}
		if rerr == io.EOF {
			break
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	if err := settle(); err != nil {
		return res, err
	}
	// Records whose parent came later in the file (an export is newest
	// first, so continuations precede their parents): retry until a round
	// imports nothing more.
	for progressed := true; progressed && len(held) > 0; {
		progressed = false
		rest := held[:0]
		for _, p := range held {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			ok, err := hasSession(p.parent)
			if err != nil {
				return res, err
			}
			if !ok {
				rest = append(rest, p)
				continue
			}
			if err := importOne(p); err != nil {
				return res, err
			}
			progressed = true
		}
		held = rest
	}
	waiting := make(map[string]bool, len(held))
	for _, p := range held {
		waiting[p.id] = true
	}
	// Every writer is done: res is read without mu.
	failedAt := make(map[string]int, len(res.Errors))
	for _, e := range res.Errors {
		if _, ok := failedAt[e.Session]; !ok && e.Session != "" {
			failedAt[e.Session] = e.Line
		}
	}
	for _, p := range held {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if !detach {
			why := "is neither in the store nor in the input"
			switch {
			case p.parent == p.id:
				why = "is the session itself"
			case failedAt[p.parent] > 0:
				why = fmt.Sprintf("is in the input but failed to import (line %d)", failedAt[p.parent])
			case waiting[p.parent]:
				why = "is in the input but was not imported first: its own parents loop or end outside the store and the input"
			}
			fail(p.line, p.id, sessiondb.Errorf(sessiondb.EINVALID,
				"field parent_session_id: session %q %s (--detach-orphans imports it without a parent)", p.parent, why))
			continue
		}
		p.rec["parent_session_id"] = nil
		before := res.Failed
		if err := importOne(p); err != nil {
			return res, err
		}
		if res.Failed == before {
			res.Detached++
		}
	}
	return res, nil
}

// parseRecord decodes one JSONL line (sessiondb.DecodeRecord) and checks
// what the import needs to know before the store sees it: an object with a
// string id.
func parseRecord(raw []byte, line int) (pendingLine, error) {
	rec, err := sessiondb.DecodeRecord(raw)
	if err != nil {
		// JSON of another kind than an object: name it in JSON's words,
		// where the decoder names the Go types it could not fill.
		var v any
		if json.Unmarshal(raw, &v) == nil {
			if _, isObject := v.(map[string]any); !isObject {
				return pendingLine{}, sessiondb.Errorf(sessiondb.EINVALID, "not a JSON object but %s", sessiondb.JSONKind(v))
			}
		}
		return pendingLine{}, err
	}
	id, ok := rec["id"].(string)
	if !ok || id == "" {
		return pendingLine{}, sessiondb.Errorf(sessiondb.EINVALID, "field id: want the session id as a non-empty string, got %s", jsonText(rec["id"]))
	}
	p := pendingLine{line: line, id: id, rec: rec}
	switch v := rec["parent_session_id"].(type) {
	case nil:
	case string:
		p.parent = v
	default:
		return pendingLine{}, sessiondb.Errorf(sessiondb.EINVALID, "field parent_session_id: want a string or null, got %s", jsonText(v))
	}
	return p, nil
}

// jsonText shows a decoded JSON value as JSON, for error messages.
func jsonText(v any) string {
	if v == nil {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > 60 {
		return sessiondb.JSONKind(v)
	}
	return string(b)
}

// reportImport prints the outcome and turns failed lines into exit status 2.
func (h *group) reportImport(res *importReport, name string) error {
	if h.JSON {
		if err := h.PrintJSON(res); err != nil {
			return err
		}
	} else {
		for _, e := range res.Errors {
			sess := ""
			if e.Session != "" {
				sess = " (session " + e.Session + ")"
			}
			fmt.Fprintf(h.Err, "%s\n", cli.PrintableLine(fmt.Sprintf("%s line %d%s: %s", name, e.Line, sess, e.Error)))
		}
		if len(res.Dropped) > 0 {
			fmt.Fprintf(h.Err, "warning: the store has no place for %s: not imported (a newer Hermes' fields in an older file; import into a state.db the current Hermes made to keep them)\n",
				sessiondb.DroppedText(res.Dropped))
		}
		h.Printf("imported %d session(s), skipped %d already present", res.Imported, res.Skipped)
		if res.Detached > 0 {
			h.Printf(", %d detached from a missing parent", res.Detached)
		}
		if res.Failed > 0 {
			h.Printf(", %d failed", res.Failed)
		}
		h.Printf("\n")
	}
	if res.Failed > 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "%d record(s) of %s were not imported (the others were): fix those lines and import the file again", res.Failed, name)
	}
	return nil
}

// liveRows is st with exports holding the live rows only
// (sessiondb.LiveRows), as Hermes' own export.
type liveRows struct{ sessiondb.Store }

func (l liveRows) ExportAll(ctx context.Context, source string, yield func(map[string]any) error) error {
	return l.Store.ExportAll(ctx, source, func(rec map[string]any) error {
		if msgs, ok := rec["messages"].([]map[string]any); ok {
			rec["messages"] = sessiondb.LiveRows(msgs)
		}
		return yield(rec)
	})
}

func (l liveRows) ExportSessionPages(ctx context.Context, id string, row func(map[string]any) error, page func([]map[string]any) error) error {
	return l.Store.ExportSessionPages(ctx, id, row, func(p []map[string]any) error {
		if p = sessiondb.LiveRows(p); len(p) == 0 {
			return nil
		}
		return page(p)
	})
}
