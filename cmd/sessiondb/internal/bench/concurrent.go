package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// The concurrent phase runs one OS process per workload worker: the bench
// binary re-executed as the hidden `bench-worker` command. The protocol:
//
//   - the parent writes the worker's messages to its stdin as JSONL and
//     closes it;
//   - the worker opens its own store handle on the shared file and prints
//     "ready" on stdout;
//   - once every worker is ready, the parent closes the write end of one
//     pipe all workers inherited as file descriptor 3: they all see EOF at
//     once, which is the start signal;
//   - each worker appends its messages one call at a time and prints one
//     JSON workerReport line on stdout, then closes its store and exits.

const (
	workerReady     = "ready"
	workerReleaseFD = 3 // the first of exec.Cmd.ExtraFiles
)

// workerMessage is one message on a worker's stdin.
type workerMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCalls  []any   `json:"tool_calls"`
	ToolCallID *string `json:"tool_call_id"`
	ToolName   *string `json:"tool_name"`
}

// workerReport is a worker's last stdout line.
type workerReport struct {
	Appended int     `json:"appended"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	// FirstError is the text of the first failed append, if any.
	FirstError string `json:"first_error,omitempty"`
}

// benchWorkerCommand is the hidden child process of the concurrent phase.
func benchWorkerCommand(f *cli.Factory) *cobra.Command {
	var session, syncFlag string
	var raw bool
	cmd := &cobra.Command{
		Use:    "bench-worker --session ID",
		Short:  "One process of bench's concurrent phase (started by bench, not by hand)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := cli.ParseSynchronous(syncFlag)
			if err != nil {
				return err
			}
			if f.DB == "" && os.Getenv("SESSIONDB_DATABASE_URL") == "" || session == "" {
				return sessiondb.Errorf(sessiondb.EINVALID, "bench-worker needs --db (or $SESSIONDB_DATABASE_URL) and --session")
			}
			db, err := f.HistoryPath()
			if err != nil {
				return err
			}
			// bench passes the release pipe as the first extra descriptor;
			// run by hand, reading it fails and says so.
			release := os.NewFile(workerReleaseFD, "bench-release")
			defer release.Close()
			return runBenchWorker(cmd.Context(), f.Streams, db, session, s, raw, release, f.Now)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&session, "session", "", "the worker's session id")
	fl.StringVar(&syncFlag, "synchronous", "normal", "normal or full")
	fl.BoolVar(&raw, "raw", false, "run the bare INSERT loop instead of the store's appends (PostgreSQL)")
	return cmd
}

// runBenchWorker reads its messages from streams.In, opens the store, reports
// ready on streams.Out, waits for release to reach EOF, appends, and reports.
// With raw it connects to the PostgreSQL schema db names and appends
// through the bare loop instead.
func runBenchWorker(ctx context.Context, streams cli.Streams, db, session, synchronous string, raw bool, release io.Reader, now sessiondb.Clock) error {
	var msgs []sessiondb.NewMessage
	dec := json.NewDecoder(streams.In)
	for {
		var m workerMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINVALID, err, "bench-worker: message %d on stdin", len(msgs)+1)
		}
		wm := wlMessage{SessionID: session, Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
		msgs = append(msgs, wm.newMessage())
	}
	var appendOne func(m *sessiondb.NewMessage) error
	closeStore := func() error { return nil }
	if raw {
		if !store.IsURL(db) {
			return sessiondb.Errorf(sessiondb.EINVALID, "bench-worker --raw runs on PostgreSQL: --db must be a postgres:// URL")
		}
		conn, err := openRawPG(ctx, db)
		if err != nil {
			return err
		}
		defer conn.close()
		appendOne = func(m *sessiondb.NewMessage) error { return conn.append(ctx, m, now) }
	} else {
		st, err := store.Open(ctx, db, store.Options{Synchronous: synchronous})
		if err != nil {
			return sessiondb.Wrap("", err, "bench-worker: open %s", errtext.RedactPassword(db))
		}
		defer st.Close()
		appendOne = func(m *sessiondb.NewMessage) error {
			_, err := st.AppendMessage(ctx, *m)
			return err
		}
		closeStore = st.Close
	}
	if _, err := fmt.Fprintln(streams.Out, workerReady); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, release); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "bench-worker: wait for the release on descriptor %d (bench-worker is started by bench)", workerReleaseFD)
	}
	var rep workerReport
	start := now()
	for i := range msgs {
		if err := appendOne(&msgs[i]); err != nil {
			rep.Errors++
			if rep.FirstError == "" {
				rep.FirstError = fmt.Sprintf("message %d: %v", i, err)
			}
			continue
		}
		rep.Appended++
	}
	rep.Seconds = round(now().Sub(start).Seconds(), 3)
	line, err := json.Marshal(rep)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "bench-worker: encode report")
	}
	if _, err := fmt.Fprintf(streams.Out, "%s\n", line); err != nil {
		return err
	}
	return closeStore()
}

// workerEvent is one thing a worker's stdout told the parent.
type workerEvent struct {
	worker int
	ready  bool
	report *workerReport
	eof    bool
	err    error // an unreadable line
}

// concurrentPhase runs the workers on one fresh shared file and counts what
// was stored. Right before, as the baseline the target is set against, one
// worker process appends all the same messages alone on another fresh file
// (same path through the store, same durability, same moment's disk).
func (b *bencher) concurrentPhase(ctx context.Context, res *benchResult) error {
	ws := b.wl.workers
	res.Concurrent.Procs = len(ws)
	res.Concurrent.RowsExpected = b.wl.concRecords
	if len(ws) == 0 {
		return nil
	}
	all := make([]wlMessage, 0, b.wl.concRecords)
	for _, w := range ws {
		all = append(all, w.Messages...)
	}
	b.p.phase("concurrent baseline: 1 worker process, %d messages", len(all))
	single, err := b.runWorkers(ctx, "concurrent_single", []*wlWorker{{Worker: ws[0].Worker, SessionID: ws[0].SessionID, Messages: all}}, false)
	if err != nil {
		return err
	}
	if single.errors == 0 {
		res.Concurrent.SingleProcMsgsPerS = rate(single.appended, single.wall)
	}

	if b.db != "" {
		return b.concurrentAgainstBare(ctx, res)
	}
	b.p.phase("concurrent: %d worker processes", len(ws))
	run, err := b.runWorkers(ctx, "concurrent", ws, false)
	if err != nil {
		return err
	}
	b.keepConcurrent(res, run)
	return nil
}

// concurrentRounds is how many times, on PostgreSQL, the worker processes
// and the bare loop in as many processes each run, alternated: one run is
// a few seconds, and one slow second of a shared disk moves it by a fifth.
const concurrentRounds = 3

// concurrentAgainstBare runs the workers and the bare loop with as many
// processes (each with one connection to its own session, on a schema of
// its own) concurrentRounds times each, alternating which goes first, so
// a drift in the machine's load falls on both alike. The figures kept are
// the median round of each, and ratio_vs_raw the median of the rounds'
// ratios (concurrent.ratios_by_round has them all).
func (b *bencher) concurrentAgainstBare(ctx context.Context, res *benchResult) error {
	ws := b.wl.workers
	var ours, bare []*workersRun
	var ratios []float64
	for r := range concurrentRounds {
		var o, w *workersRun
		for k := range 2 {
			raw := (k == 0) == (r%2 == 1) // ours first in even rounds
			what, name := "the store", "concurrent"
			if raw {
				what, name = "the bare loop", "concurrent_raw"
			}
			b.p.phase("concurrent, round %d of %d: %s in %d processes", r+1, concurrentRounds, what, len(ws))
			run, err := b.runWorkers(ctx, name, ws, raw)
			if err != nil {
				return err
			}
			if raw {
				w = run
			} else {
				o = run
			}
		}
		ours, bare = append(ours, o), append(bare, w)
		if o.errors == 0 && w.errors == 0 && w.appended > 0 && o.appended > 0 {
			ratios = append(ratios, round(rate(o.appended, o.wall)/rate(w.appended, w.wall), 3))
		}
	}
	mb := medianRun(bare)
	if res.Raw == nil {
		res.Raw = &rawResult{Includes: rawPGIncludes}
	}
	res.Raw.Concurrent = &concurrentResult{Procs: len(ws), TotalWallS: round(mb.wall.Seconds(), 3), AggregateMsgsPerS: rate(mb.appended, mb.wall),
		ErrorsTotal: mb.errors, RowsStored: mb.stored, RowsExpected: b.wl.concRecords}
	res.Concurrent.RatiosByRound = ratios
	if len(ratios) == concurrentRounds {
		slices.Sort(ratios)
		r := ratios[len(ratios)/2]
		res.Concurrent.RatioVsRaw = &r
	}
	b.keepConcurrent(res, medianRun(ours))
	return nil
}

// medianRun is the run of median rate among runs (the lower of the two
// middle ones for an even count), with the most errors and the fewest
// rows stored of any run, so that a round that lost a write shows.
func medianRun(runs []*workersRun) *workersRun {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b *workersRun) int {
		return cmp.Compare(rate(a.appended, a.wall), rate(b.appended, b.wall))
	})
	m := *s[(len(s)-1)/2]
	for _, r := range runs {
		m.errors, m.stored = max(m.errors, r.errors), min(m.stored, r.stored)
	}
	return &m
}

// keepConcurrent records the workers' run in res.
func (b *bencher) keepConcurrent(res *benchResult, run *workersRun) {
	ws := b.wl.workers
	res.Concurrent.TotalWallS = round(run.wall.Seconds(), 3)
	res.Concurrent.AggregateMsgsPerS = rate(run.appended, run.wall)
	res.Concurrent.ErrorsTotal = run.errors
	res.Concurrent.RowsStored = run.stored
	if res.Concurrent.SingleProcMsgsPerS > 0 {
		res.Concurrent.RatioVsSingleProc = round(res.Concurrent.AggregateMsgsPerS/res.Concurrent.SingleProcMsgsPerS, 3)
	}
	b.p.phase("concurrent: %d procs, %.0f msgs/s (one process alone: %.0f), %d errors, %d/%d rows", len(ws),
		res.Concurrent.AggregateMsgsPerS, res.Concurrent.SingleProcMsgsPerS, res.Concurrent.ErrorsTotal, res.Concurrent.RowsStored, res.Concurrent.RowsExpected)
}

// scalingPhase splits the concurrent workload's messages over each process
// count of --scaling, every process appending one call at a time to its
// own session of one fresh store, all released together: how the
// aggregate rate grows with the writers (a SQLite file takes them in turn;
// a server takes them at once).
func (b *bencher) scalingPhase(ctx context.Context, res *benchResult) error {
	var all []wlMessage
	for _, w := range b.wl.workers {
		all = append(all, w.Messages...)
	}
	if len(all) == 0 {
		return nil
	}
	for _, n := range b.cfg.scaling {
		ws := make([]*wlWorker, n)
		for i := range ws {
			ws[i] = &wlWorker{Worker: i, SessionID: fmt.Sprintf("scale_%02d_of_%02d", i, n)}
		}
		for i, m := range all {
			w := ws[i%n]
			w.Messages = append(w.Messages, m)
		}
		b.p.phase("scaling: %d worker processes, %d messages", n, len(all))
		run, err := b.runWorkers(ctx, fmt.Sprintf("scaling_%d", n), ws, false)
		if err != nil {
			return err
		}
		r := scalingResult{Procs: n, AggregateMsgsPerS: rate(run.appended, run.wall), ErrorsTotal: run.errors, RowsStored: run.stored, RowsExpected: len(all)}
		b.p.phase("scaling: %d procs, %.0f msgs/s, %d errors, %d/%d rows", n, r.AggregateMsgsPerS, r.ErrorsTotal, r.RowsStored, r.RowsExpected)
		res.Scaling = append(res.Scaling, r)
	}
	return nil
}

// workersRun is what one multi-process run gave.
type workersRun struct {
	wall     time.Duration // from the release to the last report
	appended int           // appends that succeeded, as reported
	errors   int           // failed appends, plus workers that failed or gave no report
	stored   int64         // messages in the file afterwards
}

// runWorkers starts one bench-worker process per entry of ws on a fresh
// file name.db, releases them together once all are ready, and collects
// their reports. A worker failing before it is ready fails the run; later
// failures are counted in errors and described on stderr. With raw (a
// PostgreSQL store), each worker runs the bare loop on a connection of
// its own instead of the store's appends.
func (b *bencher) runWorkers(ctx context.Context, name string, ws []*wlWorker, raw bool) (*workersRun, error) {
	// The parent creates the file and the sessions, so the workers open a
	// store that needs no migration and race only on appends.
	st, path, err := b.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer b.remove(path)
	for _, w := range ws {
		if _, err := st.CreateSession(ctx, sessiondb.NewSession{ID: w.SessionID, Source: "cli"}); err != nil {
			st.Close()
			return nil, sessiondb.Wrap("", err, "create session %s", w.SessionID)
		}
	}
	if err := st.Close(); err != nil {
		return nil, sessiondb.Wrap("", err, "close the %s store", name)
	}

	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	releaseR, releaseW, err := os.Pipe()
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "make the release pipe")
	}
	released := false
	release := func() {
		if !released {
			released = true
			releaseW.Close()
		}
	}
	defer release()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	events := make(chan workerEvent, 3*len(ws))
	cmds := make([]*exec.Cmd, 0, len(ws))
	waitAll := func() []error {
		errs := make([]error, len(cmds))
		for i, c := range cmds {
			errs[i] = c.Wait()
		}
		return errs
	}
	for i, w := range ws {
		args := []string{"--db", path}
		if store.IsURL(path) {
			// A URL may hold a password: the environment keeps it out of
			// the process list, where a command line shows it.
			args = nil
		}
		args = append(args, "bench-worker", "--session", w.SessionID, "--synchronous", lowerSync(b.cfg.synchronous))
		if raw {
			args = append(args, "--raw")
		}
		c := exec.CommandContext(wctx, exe, args...)
		if store.IsURL(path) {
			c.Env = append(os.Environ(), "SESSIONDB_DATABASE_URL="+path)
		}
		c.ExtraFiles = []*os.File{releaseR}
		c.Stderr = b.stderr
		stdin, err := c.StdinPipe()
		if err == nil {
			var stdout io.ReadCloser
			if stdout, err = c.StdoutPipe(); err == nil {
				if err = c.Start(); err == nil {
					cmds = append(cmds, c)
					go feedWorker(stdin, w.Messages)
					go readWorker(i, stdout, events)
					continue
				}
			}
		}
		releaseR.Close()
		cancel()
		for range cmds { // every started worker's reader ends with eof
			for ev := range events {
				if ev.eof {
					break
				}
			}
		}
		waitAll()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "start worker %d (%s)", w.Worker, exe)
	}
	releaseR.Close() // the workers hold it now

	// Barrier: every worker has its messages and its store open.
	ready, eofs := 0, 0
	var failure error
	for ready+eofs < len(ws) && failure == nil {
		select {
		case ev := <-events:
			switch {
			case ev.ready:
				ready++
			case ev.eof:
				eofs++
				failure = sessiondb.Errorf(sessiondb.EINTERNAL, "concurrent worker %d exited before it was ready", ws[ev.worker].Worker)
			case ev.err != nil:
				failure = ev.err
			}
		case <-ctx.Done():
			failure = ctx.Err()
		}
	}
	if failure != nil {
		cancel()
		release()
		for eofs < len(ws) {
			if ev := <-events; ev.eof {
				eofs++
			}
		}
		waitAll()
		return nil, failure
	}

	b.settle()
	start := b.cfg.now()
	release()
	last := start
	reports := make([]*workerReport, len(ws))
	for eofs < len(ws) {
		ev := <-events
		switch {
		case ev.report != nil:
			reports[ev.worker] = ev.report
			last = b.cfg.now()
		case ev.err != nil:
			fmt.Fprintf(b.stderr, "bench: concurrent worker %d: %v\n", ws[ev.worker].Worker, ev.err)
		case ev.eof:
			eofs++
		}
	}
	exitErrs := waitAll()

	run := &workersRun{wall: last.Sub(start)}
	for i, w := range ws {
		rep := reports[i]
		switch {
		case rep == nil:
			run.errors++
			fmt.Fprintf(b.stderr, "bench: concurrent worker %d gave no report (%v)\n", w.Worker, exitErrs[i])
			continue
		case exitErrs[i] != nil:
			run.errors++
			fmt.Fprintf(b.stderr, "bench: concurrent worker %d: %v\n", w.Worker, exitErrs[i])
		}
		run.appended += rep.Appended
		run.errors += rep.Errors
		if rep.FirstError != "" {
			fmt.Fprintf(b.stderr, "bench: concurrent worker %d: %d failed appends, first: %s\n", w.Worker, rep.Errors, rep.FirstError)
		}
	}

	st, _, err = b.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if run.stored, err = st.MessageCount(ctx, ""); err != nil {
		return nil, sessiondb.Wrap("", err, "count the messages the workers stored")
	}
	return run, nil
}

// feedWorker writes msgs to a worker's stdin as JSONL and closes it. A write
// error means the worker died; its exit tells the parent.
func feedWorker(stdin io.WriteCloser, msgs []wlMessage) {
	defer stdin.Close()
	bw := bufio.NewWriterSize(stdin, 64<<10)
	enc := json.NewEncoder(bw)
	for _, m := range msgs {
		if err := enc.Encode(workerMessage{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName}); err != nil {
			return
		}
	}
	bw.Flush()
}

// readWorker turns worker i's stdout lines into events, ending with eof.
func readWorker(i int, stdout io.Reader, events chan<- workerEvent) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Bytes()
		if string(line) == workerReady {
			events <- workerEvent{worker: i, ready: true}
			continue
		}
		var rep workerReport
		if err := json.Unmarshal(line, &rep); err != nil {
			events <- workerEvent{worker: i, err: sessiondb.Errorf(sessiondb.EINTERNAL, "unexpected worker output %s", strconv.Quote(string(line)))}
			continue
		}
		events <- workerEvent{worker: i, report: &rep}
	}
	events <- workerEvent{worker: i, eof: true}
}
