// Package bench holds `sessiondb bench`, the replay of the shared benchmark
// workload, and `bench-worker`, the process its concurrent phase starts.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/safefile"
)

// Commands returns the `bench` command (the shared workload replay) and its
// hidden helper `bench-worker`, the child process of the concurrent phase.
func Commands(f *cli.Factory) []*cobra.Command {
	cfg := benchConfig{groupCommitMessages: defaultGroupCommitMessages, gen: defaultGenConfig()}
	gcfg := defaultGrowthConfig()
	var syncFlag, stepsFlag string
	var growth bool
	var output string
	cmd := &cobra.Command{
		Use:   "bench [--workload FILE | --messages N | --growth]",
		Short: "Run the history store benchmark (a generated workload or a file, or the growth curve): a summary, and JSON",
		Long: `bench replays a workload against fresh stores in a temporary folder and reports
its figures as one JSON object, whose keys are those of the project's
cross-implementation benchmark, so figures of other implementations line up.
The workload is generated here, deterministically from --seed (--messages,
--sessions, --long-session, --procs and --proc-messages size it; --dump FILE
writes it out instead of running it). --workload FILE replays a file instead:
one --dump wrote, or one from workload.py, the generator of that
cross-implementation benchmark. That script is kept with the project's shared
benchmark material, outside this repository: a clone does not have it, and
does not need it, since the built-in generator writes the same format.

On a terminal bench prints a summary of the headline figures and writes the
whole JSON (some 3,000 lines: every query's figures) to a file, --output or
else sessiondb-bench-<UTC time>.json in the current folder, and names it.
With --json, or when stdout is a file or a pipe (bench > result.json), the
JSON goes to stdout. The phases:

  append        every message record appended one call at a time, in order
  import        the same messages through the bulk import path
  search        the query records, limit 20: one warm-up pass, three timed passes
  get_messages  the long session read back, 20 timed runs after a warm-up
  concurrent    one OS process per worker on one shared file, released together,
                after one process alone appending the same messages (the baseline);
                with --db, three rounds alternated with the bare loop in as many
                processes, the median round's ratio kept
  group_commit  16 goroutines in one process against a serial run of the same messages
  raw           with --include-raw: the same SQL in a bare database/sql loop
  serve         with --serve: the HTTP server over the main store, timed from a
                Go client on loopback: session list pages in each order, the
                first transcript page of an added 20,000-message session,
                search beside the library's, append-to-event live latency

With --db postgres://... the whole run is made twice, on SQLite files and on
PostgreSQL (a fresh schema per store, dropped at the end), and the output
holds both results side by side under "sqlite" and "postgres", with the same
keys. --scaling 1,4,8,16 adds concurrent_scaling: the concurrent workload's
messages split over that many processes, each appending to its own session
(the default with --db). Every SQLite store in the run uses the
--synchronous level. Before
each timed phase the OS is asked to write back dirty pages (sync), so one
phase's write-back does not land in the next one's fsyncs. Progress goes to
stderr when it is a terminal (--quiet silences it).

With --growth it measures instead how the store behaves as it grows: one
store is built in steps (--steps, messages; default 100k, 1M and 10M across
--sessions sessions at the last step) through the bulk import path, and at
each step it prints one JSON line of figures: appends one call at a time,
search, session listings (first and deep pages, keyset and offset, with and
without a source filter, by last activity), the first and last page of a
long session, stats, prune of 1% of the sessions, export, file size and the
peak memory of this process and of each read command run as a child process
(--read-commands). --store FILE builds in (or continues) that file and keeps
it, so a large store is built once. Appends run in --append-rounds rounds,
each next to the same round on a fresh baseline store (--append-baseline,
by default of the first step's size, at most 100,000 messages), so every
step's append rate is also given as a ratio to one measured in the same
minutes.

  sessiondb bench                                  # generated, 100,000 messages
  sessiondb bench --messages 2000 --sessions 20 --long-session 100
  sessiondb bench --json > result.json             # the JSON alone, for scripts
  sessiondb bench --dump workload.jsonl --messages 20000
  sessiondb bench --workload workload.jsonl --include-raw --synchronous full
  sessiondb bench --growth --steps 2000,20000
  sessiondb bench --growth --store /srv/growth/state.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := cli.ParseSynchronous(syncFlag)
			if err != nil {
				return err
			}
			cfg.synchronous = s
			cfg.now = f.Now
			if growth {
				return runGrowthCommand(cmd, f, cfg, gcfg, stepsFlag)
			}
			if err := cfg.checkWorkloadFlags(cmd); err != nil {
				return err
			}
			if cfg.dump != "" {
				return dumpGenerated(cfg.gen, cfg.dump)
			}
			if cfg.groupCommitMessages < 0 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--group-commit-messages %d: must be >= 0", cfg.groupCommitMessages)
			}
			if f.DB != "" && !store.IsURL(f.DB) {
				return sessiondb.Errorf(sessiondb.EINVALID, "bench --db takes a postgres:// URL to compare with; SQLite stores are made in --dir")
			}
			cfg.db = f.DB
			if cfg.db != "" && !cmd.Flags().Changed("scaling") {
				cfg.scaling = []int{1, 4, 8, 16}
			}
			for _, n := range cfg.scaling {
				if n < 1 || n > 64 {
					return sessiondb.Errorf(sessiondb.EINVALID, "--scaling %d: process counts run from 1 to 64", n)
				}
			}
			var profile *safefile.File
			if cfg.cpuProfile != "" {
				// Written beside the name and renamed over it when the run
				// ends: a link planted there is refused, never followed.
				if profile, err = safefile.Create("--cpuprofile", cfg.cpuProfile, 0o600); err != nil {
					return err
				}
				defer profile.Abort()
				if err := pprof.StartCPUProfile(profile); err != nil {
					return sessiondb.Wrap(sessiondb.EINTERNAL, err, "start the CPU profile")
				}
			}
			res, err := runAll(cmd.Context(), f.Err, cfg)
			if profile != nil {
				pprof.StopCPUProfile()
				if err == nil {
					err = profile.Commit()
				}
			}
			if err != nil {
				return err
			}
			return printResult(f, res, output)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.workload, "workload", "", "replay this workload JSONL file (written by --dump, or by the cross-implementation benchmark's workload.py) instead of generating one")
	fl.IntVar(&cfg.gen.Messages, "messages", cfg.gen.Messages, "generated workload: messages appended")
	fl.IntVar(&cfg.gen.Sessions, "sessions", cfg.gen.Sessions, "generated workload: sessions they are spread over (--growth: sessions at the last step, default 1 per 100 messages)")
	fl.IntVar(&cfg.gen.LongSession, "long-session", cfg.gen.LongSession, "generated workload: messages of the one long session get_messages reads (--growth: default 20000)")
	fl.Uint64Var(&cfg.gen.Seed, "seed", cfg.gen.Seed, "generated workload: random seed (the same seed and sizes give the same workload)")
	fl.IntVar(&cfg.gen.Procs, "procs", cfg.gen.Procs, "generated workload: processes of the concurrent phase")
	fl.IntVar(&cfg.gen.ProcMessages, "proc-messages", cfg.gen.ProcMessages, "generated workload: messages each concurrent process appends")
	fl.StringVar(&cfg.dump, "dump", "", "write the generated workload to this file as JSONL (workload.py's format) and exit")
	fl.BoolVar(&growth, "growth", false, "run the growth benchmark instead: one store built in steps, one JSON line per step")
	fl.StringVar(&stepsFlag, "steps", "", "--growth: message counts to measure at, comma-separated (default 100000,1000000,10000000)")
	fl.StringVar(&gcfg.store, "store", "", "--growth: build in (or continue) this store file and keep it, instead of a temporary one")
	fl.IntVar(&gcfg.appends, "append-messages", gcfg.appends, "--growth: messages appended one call at a time in each append round")
	fl.IntVar(&gcfg.rounds, "append-rounds", gcfg.rounds, "--growth: append rounds at each step; the step's rate is their median")
	fl.IntVar(&gcfg.baseline, "append-baseline", gcfg.baseline, "--growth: messages of a fresh baseline store whose append rounds alternate with each step's (0: none; default the first step's size, at most 100000)")
	fl.IntVar(&gcfg.searchWindow, "search-window", 0, "--growth: the stores' messages window: up to this many messages a search ranks every match, above it the newest ones through the recent index (0: the library's, 200000)")
	fl.IntVar(&gcfg.searchRecent, "search-recent", 0, "--growth: how many of the newest messages the recent index holds (0: the library's, 100000)")
	fl.BoolVar(&gcfg.readCommands, "read-commands", true, "--growth: also run the read commands as child processes and report their peak memory")
	fl.StringVar(&syncFlag, "synchronous", "normal", "durability of every store in the run: normal or full")
	fl.BoolVar(&cfg.includeRaw, "include-raw", false, "also time the same SQL in a bare database/sql loop (raw.append)")
	fl.StringVar(&cfg.dir, "dir", "", "folder in which to make the temporary run folder (default: the system temp folder)")
	fl.BoolVar(&cfg.keep, "keep", false, "keep the run folder and its stores (its path goes to stderr)")
	fl.BoolVar(&cfg.quiet, "quiet", false, "no progress on stderr")
	fl.StringVarP(&output, "output", "o", "", "also write the JSON result to this file (0600); on a terminal without --json, by default sessiondb-bench-<UTC time>.json in the current folder")
	fl.IntVar(&cfg.groupCommitMessages, "group-commit-messages", defaultGroupCommitMessages, "messages in the group-commit phase (0 skips it)")
	fl.MarkHidden("group-commit-messages")
	fl.BoolVar(&cfg.serve, "serve", false, "also time the HTTP server over the main store (serve): session list pages, the first transcript page of a 20,000-message session, search, live events")
	fl.IntSliceVar(&cfg.scaling, "scaling", nil, "also run the concurrent appends split over each of these process counts (default 1,4,8,16 with --db)")
	fl.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	fl.MarkHidden("cpuprofile")
	return []*cobra.Command{cmd, benchWorkerCommand(f), benchRusageCommand(f)}
}

// benchConfig is one bench run's settings.
type benchConfig struct {
	// workload is the file to replay; "" generates one from gen.
	workload    string
	gen         genConfig
	dump        string
	synchronous string // "NORMAL" or "FULL"
	includeRaw  bool
	dir         string
	keep        bool
	quiet       bool
	// groupCommitMessages is how many workload messages the group-commit
	// phase spreads over its sessions.
	groupCommitMessages int
	// now is the clock the phases are timed with.
	now sessiondb.Clock
	// cpuProfile, when set, receives a pprof CPU profile of the run (the
	// worker processes are not in it).
	cpuProfile string
	// db is a postgres:// URL to run against as well, "" for SQLite alone.
	db string
	// scaling lists the process counts of the scaling phase.
	scaling []int
	// serve adds the serve phase (the HTTP server over the main store).
	serve bool
}

// The result keys follow ../shared/bench/README.md exactly, so figures from
// different implementations line up; group_commit and raw are ours.
type benchResult struct {
	Impl          string            `json:"impl"`
	Backend       string            `json:"backend"`
	Driver        string            `json:"driver"`
	SQLiteVersion string            `json:"sqlite_version"`
	GoVersion     string            `json:"go_version"`
	Synchronous   string            `json:"synchronous"`
	Append        appendResult      `json:"append"`
	Import        importResult      `json:"import"`
	Search        searchResult      `json:"search"`
	GetMessages   getMessagesResult `json:"get_messages"`
	DBBytes       int64             `json:"db_bytes"`
	Concurrent    concurrentResult  `json:"concurrent"`
	GroupCommit   groupCommitResult `json:"group_commit"`
	Raw           *rawResult        `json:"raw,omitempty"`
	Scaling       []scalingResult   `json:"concurrent_scaling,omitempty"`
	Serve         *serveResult      `json:"serve,omitempty"`
}

// scalingResult is one process count of the scaling phase.
type scalingResult struct {
	Procs             int     `json:"procs"`
	AggregateMsgsPerS float64 `json:"aggregate_msgs_per_s"`
	ErrorsTotal       int     `json:"errors_total"`
	RowsStored        int64   `json:"rows_stored"`
	RowsExpected      int     `json:"rows_expected"`
}

type appendResult struct {
	Messages         int       `json:"messages"`
	Seconds          float64   `json:"seconds"`
	MsgsPerS         float64   `json:"msgs_per_s"`
	MsgsPerSByDecile []float64 `json:"msgs_per_s_by_decile"`
	// RatioVsRaw is msgs_per_s over raw.append.msgs_per_s (--include-raw).
	RatioVsRaw *float64 `json:"ratio_vs_raw,omitempty"`
}

type importResult struct {
	MsgsPerS float64 `json:"msgs_per_s"`
	// RatioVsAppend is msgs_per_s over append.msgs_per_s: the same
	// messages in bulk against one call at a time.
	RatioVsAppend float64 `json:"ratio_vs_append"`
}

type searchResult struct {
	P50MS          float64            `json:"p50_ms"`
	P95MS          float64            `json:"p95_ms"`
	MaxMS          float64            `json:"max_ms"`
	P50MSByKind    map[string]float64 `json:"p50_ms_by_kind"`
	ZeroHitQueries int                `json:"zero_hit_queries"`
	PerQuery       []queryResult      `json:"per_query"`
	// Plans (PostgreSQL only): the server's plan of each statement of the
	// first search of each kind, one line each (explainpg.go).
	Plans map[string][]string `json:"plans,omitempty"`
	// The floor (SQLite only, searchfloor.go): the same queries through a
	// bare FTS5 ranking statement, interleaved with the store's, and the
	// store's p50 over the floor's.
	FloorIncludes string  `json:"floor_includes,omitempty"`
	FloorP50MS    float64 `json:"floor_p50_ms,omitempty"`
	FloorP95MS    float64 `json:"floor_p95_ms,omitempty"`
	RatioVsFloor  float64 `json:"ratio_vs_floor,omitempty"`
}

type queryResult struct {
	Idx  int    `json:"idx"`
	Kind string `json:"kind"`
	Q    string `json:"q"`
	Hits int    `json:"hits"`
	// MS is the median of the query's timed passes.
	MS  float64 `json:"ms"`
	IDs []int64 `json:"ids"`
}

type getMessagesResult struct {
	Rows  int     `json:"rows"`
	P50MS float64 `json:"p50_ms"`
}

type concurrentResult struct {
	Procs             int     `json:"procs"`
	TotalWallS        float64 `json:"total_wall_s"`
	AggregateMsgsPerS float64 `json:"aggregate_msgs_per_s"`
	ErrorsTotal       int     `json:"errors_total"`
	RowsStored        int64   `json:"rows_stored"`
	RowsExpected      int     `json:"rows_expected"`
	// SingleProcMsgsPerS is one worker process appending all the same
	// messages alone, just before; RatioVsSingleProc compares to it.
	SingleProcMsgsPerS float64 `json:"single_proc_msgs_per_s"`
	RatioVsSingleProc  float64 `json:"ratio_vs_single_proc"`
	// RatioVsRaw is aggregate_msgs_per_s over the bare loop's with as
	// many processes (raw.concurrent; PostgreSQL): the median of the
	// alternated rounds' ratios, listed in RatiosByRound
	// (concurrentAgainstBare).
	RatioVsRaw    *float64  `json:"ratio_vs_raw,omitempty"`
	RatiosByRound []float64 `json:"ratios_by_round,omitempty"`
}

type groupCommitResult struct {
	Goroutines    int     `json:"goroutines"`
	Messages      int     `json:"messages"`
	MsgsPerS      float64 `json:"msgs_per_s"`
	SerialPerS    float64 `json:"serial_msgs_per_s"`
	RatioVsSerial float64 `json:"ratio_vs_serial"`
}

// rawResult's append has the append phase's shape (without ratio_vs_raw).
// On PostgreSQL the bare loop also runs with one process per concurrent
// worker (concurrent), and includes says what it does.
type rawResult struct {
	Includes   string            `json:"includes,omitempty"`
	Append     appendResult      `json:"append"`
	Concurrent *concurrentResult `json:"concurrent,omitempty"`
}

// runBench runs every phase against fresh stores in a new run folder and
// returns the figures. The main store serves append, get_messages and
// search; import, group commit, raw and concurrent each get their own fresh
// file, so no phase measures another's leftovers. Progress and warnings go
// to stderr, which the worker processes write to as well (cli.Streams takes
// concurrent writes).
// runAll runs the benchmark on SQLite, and with --db on PostgreSQL too,
// returning one result or both side by side.
func runAll(ctx context.Context, stderr io.Writer, cfg benchConfig) (any, error) {
	if cfg.db == "" {
		return runBench(ctx, stderr, cfg, "")
	}
	lite, err := runBench(ctx, stderr, cfg, "")
	if err != nil {
		return nil, err
	}
	pg, err := runBench(ctx, stderr, cfg, cfg.db)
	if err != nil {
		return nil, err
	}
	return &pairResult{SQLite: lite, Postgres: pg, Ratios: pgRatiosOf(lite, pg)}, nil
}

// pairResult is a run on both backends.
type pairResult struct {
	SQLite   *benchResult `json:"sqlite"`
	Postgres *benchResult `json:"postgres"`
	Ratios   pgRatios     `json:"ratios"`
}

// pgRatios are the PostgreSQL run's figures against their baselines of the
// same run: the bare loop's, its own append's, SQLite's.
type pgRatios struct {
	// AppendVsRaw: append, one call at a time, over the bare loop with
	// one client.
	AppendVsRaw *float64 `json:"append_vs_raw"`
	// ImportVsAppend: import over append.
	ImportVsAppend float64 `json:"import_vs_append"`
	// ConcurrentVsRaw: the aggregate of the concurrent workers' processes
	// over the bare loop's with as many processes.
	ConcurrentVsRaw *float64 `json:"concurrent_vs_raw"`
	// SearchP50VsSQLite and SearchP95VsSQLite: PostgreSQL's search times
	// over SQLite's on the same queries and messages.
	SearchP50VsSQLite float64 `json:"search_p50_vs_sqlite"`
	SearchP95VsSQLite float64 `json:"search_p95_vs_sqlite"`
}

func pgRatiosOf(lite, pg *benchResult) pgRatios {
	r := pgRatios{AppendVsRaw: pg.Append.RatioVsRaw, ImportVsAppend: pg.Import.RatioVsAppend, ConcurrentVsRaw: pg.Concurrent.RatioVsRaw}
	if lite.Search.P50MS > 0 && lite.Search.P95MS > 0 {
		r.SearchP50VsSQLite = round(pg.Search.P50MS/lite.Search.P50MS, 3)
		r.SearchP95VsSQLite = round(pg.Search.P95MS/lite.Search.P95MS, 3)
	}
	return r
}

// runBench runs the benchmark on one backend: SQLite files in a run folder
// when db is "", else fresh schemas on the PostgreSQL server at db.
func runBench(ctx context.Context, stderr io.Writer, cfg benchConfig, db string) (*benchResult, error) {
	p := newProgress(stderr, cfg.quiet, cfg.now)
	wl, err := cfg.loadWorkload(p)
	if err != nil {
		return nil, err
	}
	p.phase("workload: %d sessions, %d messages, %d queries, %d concurrent workers", len(wl.sessions), len(wl.messages), len(wl.queries), len(wl.workers))

	if cfg.dir != "" {
		if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "--dir %s", cfg.dir)
		}
	}
	dir, err := os.MkdirTemp(cfg.dir, "sessiondb-bench-*")
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "make the run folder")
	}
	// MkdirTemp already uses 0700; stores hold conversations.
	if cfg.keep {
		defer fmt.Fprintf(stderr, "bench: kept the run folder %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	res := &benchResult{
		Impl:        "sessiondb",
		Backend:     "sqlite",
		Driver:      store.Driver,
		GoVersion:   runtime.Version(),
		Synchronous: lowerSync(cfg.synchronous),
	}
	b := &bencher{cfg: cfg, wl: wl, dir: dir, p: p, stderr: stderr, db: db}
	if db != "" {
		b.pgTrace = &stmtRecorder{}
		res.Backend, res.Driver = "postgres", "pgx"
		// One schema per store of the run, under a prefix of its own.
		b.prefix = filepath.Base(dir)
		b.prefix = "bench_" + strings.ReplaceAll(strings.TrimPrefix(b.prefix, "sessiondb-bench-"), "-", "_")
		p.phase("PostgreSQL: schemas %s_*", b.prefix)
	}

	if err := b.mainStore(ctx, res); err != nil {
		return nil, err
	}
	if err := b.importPhase(ctx, res); err != nil {
		return nil, err
	}
	if res.Append.MsgsPerS > 0 {
		res.Import.RatioVsAppend = round(res.Import.MsgsPerS/res.Append.MsgsPerS, 3)
	}
	if err := b.groupCommitPhase(ctx, res); err != nil {
		return nil, err
	}
	if cfg.includeRaw && db == "" {
		raw, err := b.rawPhase(ctx)
		if err != nil {
			return nil, err
		}
		res.Raw = raw
	}
	// The bare loop ran beside the appends (PostgreSQL) or after them
	// (--include-raw on SQLite).
	if res.Raw != nil && res.Raw.Append.MsgsPerS > 0 {
		r := round(res.Append.MsgsPerS/res.Raw.Append.MsgsPerS, 3)
		res.Append.RatioVsRaw = &r
	}
	if err := b.concurrentPhase(ctx, res); err != nil {
		return nil, err
	}
	if err := b.scalingPhase(ctx, res); err != nil {
		return nil, err
	}
	p.phase("done")
	return res, nil
}

// checkWorkloadFlags refuses generator flags beside --workload (the file
// has its own sizes) and generator sizes that make no workload.
func (cfg *benchConfig) checkWorkloadFlags(cmd *cobra.Command) error {
	if cfg.workload != "" {
		for _, name := range []string{"messages", "sessions", "long-session", "seed", "procs", "proc-messages", "dump"} {
			if cmd.Flags().Changed(name) {
				return sessiondb.Errorf(sessiondb.EINVALID, "--%s sizes a generated workload: it cannot be given with --workload, whose file has its own", name)
			}
		}
		return nil
	}
	return cfg.gen.validate()
}

// loadWorkload reads the --workload file, or generates the workload.
func (cfg *benchConfig) loadWorkload(p *progress) (*workload, error) {
	if cfg.workload != "" {
		p.phase("loading workload %s", cfg.workload)
		return loadWorkload(cfg.workload)
	}
	g := cfg.gen
	p.phase("generating the workload: %d messages in %d sessions (seed %d)", g.Messages, g.Sessions, g.Seed)
	return newGenerator(g.Seed).workload(g), nil
}

// dumpGenerated writes the generated workload of c to path (0600: it is
// made of invented text, but it is a conversation store's input all the
// same), replacing the file once complete.
func dumpGenerated(c genConfig, path string) error {
	f, err := safefile.Create("--dump", path, 0o600)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := newGenerator(c.Seed).workload(c).dump(bw, c); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write --dump %s", path)
	}
	if err := bw.Flush(); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write --dump %s", path)
	}
	return f.Commit()
}

func lowerSync(s string) string {
	if s == "FULL" {
		return "full"
	}
	return "normal"
}

// bencher carries what every phase shares.
type bencher struct {
	cfg    benchConfig
	wl     *workload
	dir    string
	p      *progress
	stderr io.Writer

	// importRecs holds the main store's export for the import phase;
	// importMsgs counts their messages.
	importRecs []map[string]any
	importMsgs int

	// db is the PostgreSQL server of the run ("" for SQLite files), prefix
	// the name its schemas start with.
	db, prefix string
	// pgTrace records a PostgreSQL store's statements for the search
	// plans (explainpg.go); nil for SQLite.
	pgTrace *stmtRecorder
}

// location is where the run's store called name lives: a file in the run
// folder, or a schema on the server.
func (b *bencher) location(name string) (string, error) {
	if b.db == "" {
		return storePath(b.dir, name), nil
	}
	return store.Sub(b.db, b.prefix+"_"+name)
}

// remove deletes one of the run's stores, unless --keep.
func (b *bencher) remove(path string) {
	if b.cfg.keep && b.db != "" {
		return
	}
	if err := store.Remove(context.Background(), path); err != nil {
		fmt.Fprintf(b.stderr, "bench: remove a scratch store: %v\n", err)
	}
}

func (b *bencher) open(ctx context.Context, name string) (sessiondb.Store, string, error) {
	path, err := b.location(name)
	if err != nil {
		return nil, "", err
	}
	o := store.Options{Synchronous: b.cfg.synchronous}
	if b.pgTrace != nil {
		o.Tracer = b.pgTrace
	}
	st, err := store.Open(ctx, path, o)
	if err != nil {
		return nil, path, sessiondb.Wrap("", err, "open the %s store", name)
	}
	return st, path, nil
}

func (b *bencher) since(t time.Time) time.Duration { return b.cfg.now().Sub(t) }

// settle runs before every timed phase: it flushes the dirty pages earlier
// phases left in the OS cache, so their write-back does not slow this
// phase's fsyncs (at synchronous=FULL it otherwise dominates).
func (b *bencher) settle() { flushFileSystems() }
