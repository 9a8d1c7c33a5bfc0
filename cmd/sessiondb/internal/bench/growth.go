package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

// The growth benchmark builds one store in steps and measures it at each:
// how the figures of a 100,000-message store hold as it grows a hundredfold.
// The store grows the way a user's does, in sessions of the same shape
// (about 100 messages each, a tenth of them continued after compression),
// imported in bulk between the steps. One session, the first, is long
// (20,000 messages by default) and is read page by page at every step.

// growthConfig is one growth run's settings.
type growthConfig struct {
	steps       []int // messages at each step, increasing
	sessions    int   // sessions at the last step; 0: one per 100 messages
	longSession int   // messages of session 0; -1: the default
	seed        uint64
	store       string // keep and continue this file; "" for a scratch one
	appends     int    // messages appended one call at a time per round
	rounds      int    // append rounds per step (and per baseline)
	// baseline is the size in messages of the fresh store the append
	// rounds alternate with (0: none; -1: the first step's, at most
	// maxBaseline), so a step's rate is set against one taken in the
	// same minutes on the same machine.
	baseline int
	// readCommands runs the read commands as child processes of the
	// sessiondb binary, for their peak memory.
	readCommands bool
	exe          string // the binary to run them with; "" is os.Executable
	// searchWindow and searchRecent are the store's messages window and
	// recent index size (open.Options' SearchWindowMessages and
	// SearchRecentMessages): 0 is the library's default.
	searchWindow, searchRecent int
}

func defaultGrowthConfig() growthConfig {
	return growthConfig{steps: []int{100_000, 1_000_000, 10_000_000}, longSession: -1, appends: 1000, rounds: 3, baseline: -1, readCommands: true}
}

const (
	defaultLongSession = 20_000
	// maxBaseline bounds the default baseline store of the append rounds.
	maxBaseline = 100_000
	// messagesPerSession sizes the default session count.
	messagesPerSession = 100
	// growthBase is when the first generated session starts (2024-01-01
	// UTC); each next one starts sessionSpacing later and lasts
	// sessionLength, so a continuation starts after its root ended.
	growthBase     = 1704067200.0
	sessionSpacing = 600.0
	sessionLength  = 540.0
	// importBatch is how many sessions one bulk import call carries.
	importBatch = 100
	// listRuns and pageRuns are the timed runs of each listing and page
	// read, after one warm-up.
	listRuns   = 10
	pageRuns   = 20
	listLimit  = 20
	pageLimit  = 50
	liveAgents = 10 // sessions the append phase spreads its messages over
	// exportMessages bounds the export phase: it stops after the session
	// that reaches it.
	exportMessages = 100_000
	// listSource is the source the filtered listings keep (a fifth of
	// the sessions).
	listSource = "telegram"
)

// runGrowthCommand checks the flags of `bench --growth` and runs it,
// printing one JSON line per step on stdout.
func runGrowthCommand(cmd *cobra.Command, f *cli.Factory, cfg benchConfig, g growthConfig, steps string) error {
	fl := cmd.Flags()
	for _, name := range []string{"workload", "dump", "messages", "procs", "proc-messages", "include-raw", "scaling", "keep"} {
		if fl.Changed(name) {
			return sessiondb.Errorf(sessiondb.EINVALID, "--%s does not apply to --growth", name)
		}
	}
	if f.DB != "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "--growth measures SQLite files: use --store FILE, not --db")
	}
	if steps != "" {
		g.steps = nil
		for _, s := range strings.Split(steps, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(s, "_", "")))
			if err != nil || n < 1 {
				return sessiondb.Errorf(sessiondb.EINVALID, "--steps %q: want positive message counts, comma-separated", steps)
			}
			g.steps = append(g.steps, n)
		}
	}
	for i := 1; i < len(g.steps); i++ {
		if g.steps[i] <= g.steps[i-1] {
			return sessiondb.Errorf(sessiondb.EINVALID, "--steps %v: each step must hold more messages than the one before", g.steps)
		}
	}
	last := g.steps[len(g.steps)-1]
	if fl.Changed("sessions") {
		g.sessions = cfg.gen.Sessions
	} else {
		g.sessions = max(1, last/messagesPerSession)
	}
	if fl.Changed("long-session") {
		g.longSession = cfg.gen.LongSession
	} else {
		g.longSession = min(defaultLongSession, g.steps[0]/2)
	}
	g.seed = cfg.gen.Seed
	if g.appends < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--append-messages %d: want 0 or more", g.appends)
	}
	if g.rounds < 1 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--append-rounds %d: want 1 or more", g.rounds)
	}
	if g.searchWindow < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--search-window %d: want 0 (the default) or a message count", g.searchWindow)
	}
	if g.searchRecent < 0 {
		return sessiondb.Errorf(sessiondb.EINVALID, "--search-recent %d: want 0 (the default) or a message count", g.searchRecent)
	}
	switch {
	case !fl.Changed("append-baseline"):
		g.baseline = min(g.steps[0], maxBaseline)
	case g.baseline < 0:
		return sessiondb.Errorf(sessiondb.EINVALID, "--append-baseline %d: want 0 (none) or a message count", g.baseline)
	case g.baseline > 0 && g.baseline < 2*messagesPerSession:
		return sessiondb.Errorf(sessiondb.EINVALID, "--append-baseline %d: want 0 (none) or at least %d messages", g.baseline, 2*messagesPerSession)
	}
	switch {
	case g.sessions < 2:
		return sessiondb.Errorf(sessiondb.EINVALID, "--sessions %d: --growth needs at least 2", g.sessions)
	case g.longSession < 1 || g.longSession > g.steps[0]:
		return sessiondb.Errorf(sessiondb.EINVALID, "--long-session %d: want 1 to the first step (%d)", g.longSession, g.steps[0])
	case last-g.longSession < g.sessions-1:
		return sessiondb.Errorf(sessiondb.EINVALID, "--sessions %d: more sessions than the last step's %d messages can fill", g.sessions, last)
	}
	w := &jsonLines{w: f.Out}
	return runGrowth(cmd.Context(), f.Err, cfg, g, w.write)
}

// jsonLines writes one compact JSON object a line.
type jsonLines struct{ w io.Writer }

func (j *jsonLines) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "encode step")
	}
	if _, err := fmt.Fprintf(j.w, "%s\n", b); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write output")
	}
	return nil
}

// growthPlan is the generated store: every session's size, and the number
// of sessions each step holds.
type growthPlan struct {
	gen   *generator
	sizes []int
	// upto[k] is how many sessions (0 to upto[k]-1) step k holds; its
	// messages are cum[upto[k]].
	upto []int
	cum  []int64
}

func newGrowthPlan(g growthConfig) *growthPlan {
	p := &growthPlan{gen: newGenerator(g.seed), sizes: make([]int, g.sessions), cum: make([]int64, g.sessions+1)}
	last := g.steps[len(g.steps)-1]
	p.sizes[0] = g.longSession
	avg := float64(last-g.longSession) / float64(g.sessions-1)
	for i := 1; i < g.sessions; i++ {
		// Sizes spread over avg/2 to 3avg/2, drawn from the session's own
		// stream so they need no other session.
		tg := p.gen.stream(sessionStream(i))
		p.sizes[i] = max(1, int(math.Round(avg*(0.5+tg.rng.Float64()))))
	}
	for i, n := range p.sizes {
		p.cum[i+1] = p.cum[i] + int64(n)
	}
	for _, step := range g.steps {
		n := sort.Search(g.sessions+1, func(n int) bool { return p.cum[n] >= int64(step) })
		p.upto = append(p.upto, min(n, g.sessions))
	}
	return p
}

// growthID is the id of generated session i.
func growthID(i int) string { return fmt.Sprintf("growth_%06d", i) }

// parentOf returns the session generated session i continues after
// compression, or -1: every tenth session (i%10 == 1) is compressed into
// the next, and every thirtieth chain has a second hop.
func parentOf(i int) int {
	switch {
	case i >= 2 && (i-1)%10 == 1:
		return i - 1
	case i >= 3 && (i-2)%30 == 1:
		return i - 1
	}
	return -1
}

func compressedAt(i, sessions int) bool {
	return i+1 < sessions && (i%10 == 1 || (i >= 2 && (i-1)%30 == 1))
}

// record makes generated session i as an import record: its columns,
// token counters and messages with their timestamps.
func (p *growthPlan) record(i int) map[string]any {
	tg := p.gen.stream(sessionStream(i))
	tg.rng.Float64() // the size draw (newGrowthPlan)
	src, model := pick(tg, sessionSources), pick(tg, sessionModels)
	n := p.sizes[i]
	started := growthBase + float64(i)*sessionSpacing
	msgs := tg.script(growthID(i), n)
	out := make([]any, len(msgs))
	step := (sessionLength - 40) / float64(n)
	var in, outTok int64
	for j, m := range msgs {
		r := map[string]any{"role": m.Role, "content": *m.Content, "timestamp": started + 1 + float64(j)*step}
		if m.ToolCalls != nil {
			b, _ := json.Marshal(m.ToolCalls)
			r["tool_calls"] = string(b)
		}
		if m.ToolCallID != nil {
			r["tool_call_id"], r["tool_name"] = *m.ToolCallID, *m.ToolName
		}
		out[j] = r
		tokens := int64(len(*m.Content) / 4)
		if m.Role == "assistant" {
			outTok += tokens
		} else {
			in += tokens * int64(j+1) // every call resends the context
		}
	}
	rec := map[string]any{
		"id": growthID(i), "source": src, "model": model, "started_at": started, "messages": out,
		"input_tokens": float64(in), "output_tokens": float64(outTok),
		"estimated_cost_usd": float64(in)*3e-6 + float64(outTok)*15e-6,
		"title":              fmt.Sprintf("growth session %d", i),
	}
	if i > 0 { // the long session is still going
		rec["ended_at"], rec["end_reason"] = started+sessionLength, "user_exit"
		if compressedAt(i, len(p.sizes)) {
			rec["end_reason"] = "compression"
			rec["title"] = nil // a continuation carries the title on
		}
	}
	if par := parentOf(i); par >= 0 {
		rec["parent_session_id"] = growthID(par)
		rec["title"] = fmt.Sprintf("growth session %d #%d", par, 2)
	}
	return rec
}

// growthStep is one step's figures: one JSON line.
type growthStep struct {
	Step          int     `json:"step"`
	Impl          string  `json:"impl"`
	Driver        string  `json:"driver"`
	SQLiteVersion string  `json:"sqlite_version"`
	GoVersion     string  `json:"go_version"`
	Synchronous   string  `json:"synchronous"`
	Messages      int64   `json:"messages"`
	Sessions      int64   `json:"sessions"`
	LongSession   int64   `json:"long_session_messages"`
	DBBytes       int64   `json:"db_bytes"`
	ImportedMsgs  int     `json:"imported_messages"`
	ImportPerS    float64 `json:"import_msgs_per_s"`

	Append     growthAppend            `json:"append"`
	Search     growthSearch            `json:"search"`
	List       map[string]timing       `json:"list"`
	Transcript map[string]timing       `json:"transcript"`
	Stats      timing                  `json:"stats"`
	Prune      growthPrune             `json:"prune"`
	Export     growthExport            `json:"export"`
	Hermes     map[string]timing       `json:"hermes_v6"`
	Commands   map[string]commandUsage `json:"read_commands,omitempty"`
	// ReadPeakMB is the largest peak resident memory of the read
	// commands; PeakMB this process's own.
	ReadPeakMB float64 `json:"read_peak_mb,omitempty"`
	PeakMB     float64 `json:"peak_mb"`
	Seconds    float64 `json:"seconds"`
	// LoadAverage is the machine's 1-minute load average when the step
	// ended (Linux; absent elsewhere): figures from a busy machine are
	// not a quiet one's.
	LoadAverage *float64 `json:"load_average,omitempty"`

	// listed holds the step's listings once counted (see listings).
	listed []listing
}

// growthAppend is the append rounds of a step: MsgsPerS is the median of
// the rounds' rates (RoundsMsgsPerS), the latencies are over every call.
type growthAppend struct {
	Messages       int       `json:"messages"` // in each round
	Rounds         int       `json:"rounds"`
	MsgsPerS       float64   `json:"msgs_per_s"`
	RoundsMsgsPerS []float64 `json:"rounds_msgs_per_s"`
	P50MS          float64   `json:"p50_ms"`
	P99MS          float64   `json:"p99_ms"`
	MaxMS          float64   `json:"max_ms"`
	// RatioVsFirst is msgs_per_s over the first step's.
	RatioVsFirst float64 `json:"ratio_vs_first_step"`
	// Baseline is the same rounds on the baseline store, each run next to
	// one of the step's (alternating which goes first); RatioVsBaseline
	// is msgs_per_s over its msgs_per_s.
	Baseline        *growthBaseline `json:"baseline,omitempty"`
	RatioVsBaseline float64         `json:"ratio_vs_baseline,omitempty"`
}

// growthBaseline is the baseline store's side of the append rounds.
type growthBaseline struct {
	Messages       int64     `json:"store_messages"`
	MsgsPerS       float64   `json:"msgs_per_s"`
	RoundsMsgsPerS []float64 `json:"rounds_msgs_per_s"`
	P50MS          float64   `json:"p50_ms"`
	P99MS          float64   `json:"p99_ms"`
}

type growthSearch struct {
	P50MS          float64            `json:"p50_ms"`
	P95MS          float64            `json:"p95_ms"`
	MaxMS          float64            `json:"max_ms"`
	P50MSByKind    map[string]float64 `json:"p50_ms_by_kind"`
	P95MSByKind    map[string]float64 `json:"p95_ms_by_kind"`
	ZeroHitQueries int                `json:"zero_hit_queries"`
	// FirstMS is the warm-up's first query, which on a store beyond the
	// messages window brings the recent index up to date after the
	// step's imports and appends (on a new step: builds it again).
	FirstMS float64 `json:"first_ms"`
	// AfterAppendsMS is one query after AfterAppends more messages were
	// appended one call at a time: the cost a search pays for the
	// appends since the last one.
	AfterAppends   int     `json:"after_appends,omitempty"`
	AfterAppendsMS float64 `json:"after_appends_ms,omitempty"`
	// Slowest are the queries with the highest median, slowest first.
	Slowest []slowQuery `json:"slowest"`
}

// slowQuery is one query's timed passes.
type slowQuery struct {
	Kind  string  `json:"kind"`
	Q     string  `json:"q"`
	P50MS float64 `json:"p50_ms"`
	MaxMS float64 `json:"max_ms"`
}

// slowestShown is how many queries growthSearch.Slowest lists.
const slowestShown = 8

// timing is the median and the slowest of a read's timed runs, and what
// it returned (rows).
type timing struct {
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms,omitempty"`
	MaxMS float64 `json:"max_ms"`
	Rows  int     `json:"rows"`
}

type growthPrune struct {
	Sessions int     `json:"sessions"`
	Messages int64   `json:"messages"`
	MS       float64 `json:"ms"`
}

type growthExport struct {
	Sessions int     `json:"sessions"`
	Messages int     `json:"messages"`
	MsgsPerS float64 `json:"msgs_per_s"`
	MBPerS   float64 `json:"mb_per_s"`
}

// commandUsage is one read command run as a child process.
type commandUsage struct {
	Args   []string `json:"args"`
	MS     float64  `json:"ms"`
	PeakMB float64  `json:"peak_mb"`
}

// grower carries one growth run.
type grower struct {
	cfg    benchConfig
	g      growthConfig
	plan   *growthPlan
	path   string
	st     sessiondb.Store
	p      *progress
	stderr io.Writer

	queries     []wlQuery
	firstAppend float64
	have        map[int]bool // generated sessions in the store
	base        *grower      // the baseline store's grower; nil without one
}

func (gr *grower) since(t time.Time) time.Duration { return gr.cfg.now().Sub(t) }

// runGrowth builds the store step by step and emits each step's figures.
func runGrowth(ctx context.Context, stderr io.Writer, cfg benchConfig, g growthConfig, emit func(any) error) error {
	p := newProgress(stderr, cfg.quiet, cfg.now)
	gr := &grower{cfg: cfg, g: g, p: p, stderr: stderr, plan: newGrowthPlan(g)}
	var dir string
	if g.store == "" || g.baseline > 0 {
		if cfg.dir != "" {
			if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
				return sessiondb.Wrap(sessiondb.EINVALID, err, "--dir %s", cfg.dir)
			}
		}
		var err error
		if dir, err = os.MkdirTemp(cfg.dir, "sessiondb-growth-*"); err != nil {
			return sessiondb.Wrap(sessiondb.EINVALID, err, "make the run folder")
		}
		defer os.RemoveAll(dir)
	}
	gr.path = g.store
	if gr.path == "" {
		gr.path = filepath.Join(dir, "state.db")
	}
	if err := gr.open(ctx); err != nil {
		return err
	}
	defer func() { gr.st.Close() }()
	if g.baseline > 0 {
		base, err := gr.baselineStore(ctx, filepath.Join(dir, "baseline.db"))
		if base != nil {
			defer base.st.Close()
		}
		if err != nil {
			return err
		}
		gr.base = base
	}
	// The phrase queries are lifted from the first sessions' text.
	var sample []wlMessage
	for i := 1; i < min(21, g.sessions); i++ {
		_, msgs := gr.plan.gen.session(i, 20, "q")
		sample = append(sample, msgs...)
	}
	gr.queries = gr.plan.gen.queries(sample)
	for k := range g.steps {
		start := cfg.now()
		res, err := gr.step(ctx, k)
		if err != nil {
			return err
		}
		res.Seconds = round(gr.since(start).Seconds(), 1)
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

func (gr *grower) open(ctx context.Context) error {
	st, err := store.Open(ctx, gr.path, store.Options{Synchronous: gr.cfg.synchronous, SearchWindowMessages: gr.g.searchWindow, SearchRecentMessages: gr.g.searchRecent})
	if err != nil {
		return sessiondb.Wrap("", err, "open the growth store %s", gr.path)
	}
	gr.st = st
	if gr.have == nil {
		gr.have = map[int]bool{}
		// A kept store continues: the generated sessions it holds are not
		// imported again (those a prune removed are).
		page := sessiondb.SessionQuery{IncludeChildren: true, IncludeArchived: true, Text: "growth_", Limit: sessiondb.MaxSessionPage}
		for {
			res, err := st.ListSessions(ctx, page)
			if err != nil {
				return sessiondb.Wrap("", err, "list the store's generated sessions")
			}
			for _, s := range res.Sessions {
				if n, ok := strings.CutPrefix(s.ID, "growth_"); ok {
					if i, err := strconv.Atoi(n); err == nil {
						gr.have[i] = true
					}
				}
			}
			if res.Next == "" {
				break
			}
			page.After = res.Next
		}
	}
	return nil
}

// step grows the store to step k and measures it.
func (gr *grower) step(ctx context.Context, k int) (*growthStep, error) {
	res := &growthStep{Step: k + 1, Impl: "sessiondb", Driver: store.Driver, GoVersion: runtime.Version(), Synchronous: lowerSync(gr.cfg.synchronous)}
	if m, ok := gr.st.(sessiondb.SQLiteMaintainer); ok {
		v, err := m.SQLiteVersion(ctx)
		if err != nil {
			return nil, err
		}
		res.SQLiteVersion = v
	}
	if err := gr.grow(ctx, k, res); err != nil {
		return nil, err
	}
	var err error
	if res.Messages, err = gr.st.MessageCount(ctx, ""); err != nil {
		return nil, err
	}
	if res.Sessions, err = gr.st.SessionCount(ctx, ""); err != nil {
		return nil, err
	}
	if res.LongSession, err = gr.st.MessageCount(ctx, growthID(0)); err != nil {
		return nil, err
	}
	gr.p.phase("step %d: %d messages in %d sessions", k+1, res.Messages, res.Sessions)
	for _, phase := range []func(context.Context, *growthStep) error{
		gr.appendPhase, gr.searchPhase, gr.listPhase, gr.transcriptPhase, gr.statsPhase, gr.hermesPhase, gr.exportPhase,
	} {
		if err := phase(ctx, res); err != nil {
			return nil, err
		}
	}
	if gr.g.readCommands {
		if err := gr.commandsPhase(ctx, res); err != nil {
			return nil, err
		}
	}
	// Prune last: it removes the oldest sessions, which the next step's
	// import puts back.
	if err := gr.prunePhase(ctx, res); err != nil {
		return nil, err
	}
	if res.DBBytes, err = store.Size(ctx, gr.path); err != nil {
		return nil, err
	}
	res.PeakMB = selfPeakMB()
	res.LoadAverage = loadAverage()
	return res, nil
}

// grow imports the generated sessions step k holds that the store lacks,
// in batches, generating the next batch while one is imported.
func (gr *grower) grow(ctx context.Context, k int, res *growthStep) error {
	var todo []int
	for i := 0; i < gr.plan.upto[k]; i++ {
		if !gr.have[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var msgs int64
	for _, i := range todo {
		msgs += int64(gr.plan.sizes[i])
	}
	gr.p.phase("step %d: importing %d sessions, %d messages", k+1, len(todo), msgs)
	bar := gr.p.counter(fmt.Sprintf("import to step %d", k+1), int(msgs), "messages")
	type batch struct {
		ids  []int
		recs []map[string]any
		msgs int
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch, 2)
	go func() {
		defer close(batches)
		for len(todo) > 0 {
			n := min(importBatch, len(todo))
			b := batch{ids: todo[:n]}
			for _, i := range b.ids {
				b.recs = append(b.recs, gr.plan.record(i))
				b.msgs += gr.plan.sizes[i]
			}
			todo = todo[n:]
			select {
			case batches <- b:
			case <-gctx.Done():
				return
			}
		}
	}()
	start := gr.cfg.now()
	done := 0
	for b := range batches {
		if _, err := gr.st.ImportSessions(ctx, b.recs, sessiondb.ImportOptions{}); err != nil {
			return sessiondb.Wrap("", err, "import generated sessions")
		}
		for _, i := range b.ids {
			gr.have[i] = true
		}
		done += b.msgs
		bar.Set(int64(done))
	}
	took := gr.since(start)
	bar.Done()
	if err := ctx.Err(); err != nil {
		return err
	}
	gr.p.done("import", done, took)
	res.ImportedMsgs, res.ImportPerS = done, rate(done, took)
	return nil
}

// baselineStore builds the baseline store at path: a fresh store of
// g.baseline generated messages, made as a growth run of that one step
// would make it, whose append rounds run beside each step's.
func (gr *grower) baselineStore(ctx context.Context, path string) (*grower, error) {
	bg := gr.g
	bg.steps, bg.store, bg.readCommands = []int{gr.g.baseline}, path, false
	bg.sessions = max(2, bg.baseline/messagesPerSession)
	bg.longSession = min(defaultLongSession, bg.baseline/2)
	base := &grower{cfg: gr.cfg, g: bg, p: gr.p, stderr: gr.stderr, plan: newGrowthPlan(bg), path: path}
	if err := base.open(ctx); err != nil {
		return nil, err
	}
	gr.p.phase("baseline: a fresh store of %d messages for the append rounds", bg.baseline)
	if err := base.grow(ctx, 0, &growthStep{}); err != nil {
		return base, err
	}
	return base, nil
}

// appendPhase appends messages one call at a time in rounds, each to
// sessions of its own spread over liveAgents, timing each call. With a
// baseline store, each round on the step's store is paired with the same
// round on the baseline (alternating which goes first, so a drift in the
// machine's load falls on both), and the step's rate is also given over
// the baseline's.
func (gr *grower) appendPhase(ctx context.Context, res *growthStep) error {
	n := gr.g.appends
	if n == 0 {
		return nil
	}
	tg := gr.plan.gen.stream(liveStream(1000 + res.Step))
	msgs := tg.script("live", n*gr.g.rounds)
	gr.p.phase("append: %d rounds of %d messages one call at a time", gr.g.rounds, n)
	var mine, base appendRounds
	for r := range gr.g.rounds {
		round := msgs[r*n : (r+1)*n]
		if gr.base != nil && r%2 == 0 {
			if err := base.run(ctx, gr.base, res.Step, round); err != nil {
				return err
			}
		}
		if err := mine.run(ctx, gr, res.Step, round); err != nil {
			return err
		}
		if gr.base != nil && r%2 == 1 {
			if err := base.run(ctx, gr.base, res.Step, round); err != nil {
				return err
			}
		}
	}
	res.Append = growthAppend{Messages: n, Rounds: gr.g.rounds, MsgsPerS: mine.rate(), RoundsMsgsPerS: mine.rates,
		P50MS: round(percentile(mine.samples, 0.5), 3), P99MS: round(percentile(mine.samples, 0.99), 3), MaxMS: round(percentile(mine.samples, 1), 3)}
	if gr.firstAppend == 0 {
		gr.firstAppend = res.Append.MsgsPerS
	}
	if gr.firstAppend > 0 {
		res.Append.RatioVsFirst = round(res.Append.MsgsPerS/gr.firstAppend, 3)
	}
	if gr.base != nil {
		held, err := gr.base.st.MessageCount(ctx, "")
		if err != nil {
			return err
		}
		res.Append.Baseline = &growthBaseline{Messages: held, MsgsPerS: base.rate(), RoundsMsgsPerS: base.rates,
			P50MS: round(percentile(base.samples, 0.5), 3), P99MS: round(percentile(base.samples, 0.99), 3)}
		if b := base.rate(); b > 0 {
			res.Append.RatioVsBaseline = round(res.Append.MsgsPerS/b, 3)
		}
	}
	return nil
}

// appendRounds gathers one store's append rounds.
type appendRounds struct {
	rates   []float64
	samples []float64
}

// rate is the median round's rate.
func (a *appendRounds) rate() float64 { return percentile(a.rates, 0.5) }

// run appends msgs one call at a time to gr's store, to sessions it makes
// for the round, and records the round.
func (a *appendRounds) run(ctx context.Context, gr *grower, step int, msgs []wlMessage) error {
	sids := make([]string, liveAgents)
	for i := range sids {
		sids[i] = fmt.Sprintf("live_s%d_r%d_%d_%d", step, len(a.rates), i, gr.cfg.now().UnixNano())
		if _, err := gr.st.CreateSession(ctx, sessiondb.NewSession{ID: sids[i], Source: "cli", Model: "openai/gpt-5"}); err != nil {
			return err
		}
	}
	bar := gr.p.counter("append", len(msgs), "messages")
	flushFileSystems()
	start := gr.cfg.now()
	for i := range msgs {
		m := msgs[i].newMessage()
		m.SessionID = sids[i%liveAgents]
		t := gr.cfg.now()
		if _, err := gr.st.AppendMessage(ctx, m); err != nil {
			return sessiondb.Wrap("", err, "append")
		}
		a.samples = append(a.samples, ms(gr.since(t)))
		bar.Set(int64(i + 1))
	}
	a.rates = append(a.rates, rate(len(msgs), gr.since(start)))
	bar.Done()
	return nil
}

// searchPhase runs the 50 queries: a warm-up pass, then searchPasses.
func (gr *grower) searchPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("search: %d queries, %d passes", len(gr.queries), searchPasses)
	filter := sessiondb.SearchFilter{Limit: searchLimit}
	byKind := map[string][]float64{}
	byQuery := make([][]float64, len(gr.queries))
	var all []float64
	for pass := 0; pass <= searchPasses; pass++ {
		for i, q := range gr.queries {
			t := gr.cfg.now()
			hits, err := gr.st.SearchMessages(ctx, q.Q, filter)
			if err != nil {
				return sessiondb.Wrap("", err, "search %q", q.Q)
			}
			d := ms(gr.since(t))
			if pass == 0 {
				if i == 0 {
					res.Search.FirstMS = round(d, 3)
				}
				if len(hits) == 0 {
					res.Search.ZeroHitQueries++
				}
				continue
			}
			all = append(all, d)
			byKind[q.Kind] = append(byKind[q.Kind], d)
			byQuery[i] = append(byQuery[i], d)
		}
	}
	for i, ds := range byQuery {
		if len(ds) > 0 {
			res.Search.Slowest = append(res.Search.Slowest, slowQuery{gr.queries[i].Kind, gr.queries[i].Q, round(percentile(ds, 0.5), 3), round(percentile(ds, 1), 3)})
		}
	}
	slices.SortFunc(res.Search.Slowest, func(a, b slowQuery) int { return cmp.Compare(b.P50MS, a.P50MS) })
	res.Search.Slowest = res.Search.Slowest[:min(slowestShown, len(res.Search.Slowest))]
	res.Search.P50MS, res.Search.P95MS, res.Search.MaxMS = round(percentile(all, 0.5), 3), round(percentile(all, 0.95), 3), round(percentile(all, 1), 3)
	res.Search.P50MSByKind, res.Search.P95MSByKind = map[string]float64{}, map[string]float64{}
	for k, s := range byKind {
		res.Search.P50MSByKind[k] = round(percentile(s, 0.5), 3)
		res.Search.P95MSByKind[k] = round(percentile(s, 0.95), 3)
	}
	if n := gr.g.appends; n > 0 && len(gr.queries) > 0 {
		tg := gr.plan.gen.stream(liveStream(2000 + res.Step))
		var more appendRounds
		if err := more.run(ctx, gr, res.Step, tg.script("live", n)); err != nil {
			return err
		}
		t := gr.cfg.now()
		if _, err := gr.st.SearchMessages(ctx, gr.queries[0].Q, filter); err != nil {
			return sessiondb.Wrap("", err, "search %q", gr.queries[0].Q)
		}
		res.Search.AfterAppends, res.Search.AfterAppendsMS = n, round(ms(gr.since(t)), 3)
	}
	return nil
}

// timed runs read once to warm up and then runs times, and returns the
// median and slowest run and the rows the last run returned.
func (gr *grower) timed(runs int, read func() (int, error)) (timing, error) {
	if _, err := read(); err != nil {
		return timing{}, err
	}
	samples := make([]float64, runs)
	rows := 0
	for i := range samples {
		t := gr.cfg.now()
		n, err := read()
		if err != nil {
			return timing{}, err
		}
		samples[i], rows = ms(gr.since(t)), n
	}
	return timing{P50MS: round(percentile(samples, 0.5), 3), MaxMS: round(percentile(samples, 1), 3), Rows: rows}, nil
}

// timeKeyset times the keyset page q (ListSessions).
func (gr *grower) timeKeyset(ctx context.Context, q sessiondb.SessionQuery) (timing, error) {
	return gr.timed(listRuns, func() (int, error) {
		p, err := gr.st.ListSessions(ctx, q)
		if err != nil {
			return 0, err
		}
		return len(p.Sessions), nil
	})
}

// listPhase times the session listings: keyset (ListSessions) newest first
// and by last activity, and Hermes' offset form (ListSessionsRich, which
// projects compression tips), each on the first page and a deep one (the
// middle of the listing), with and without a source filter.
func (gr *grower) listPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("session listings")
	res.List = map[string]timing{}
	ls, err := gr.listings(ctx, res)
	if err != nil {
		return err
	}
	for _, l := range ls {
		src, suffix, deep := l.source, l.suffix, l.total/2
		for _, sort := range []sessiondb.SessionSort{sessiondb.SortStarted, sessiondb.SortLastActive} {
			name := "keyset"
			if sort == sessiondb.SortLastActive {
				name = "last_active"
			}
			q := sessiondb.SessionQuery{Source: src, Sort: sort, Limit: listLimit}
			first, err := gr.timeKeyset(ctx, q)
			if err != nil {
				return sessiondb.Wrap("", err, "list sessions")
			}
			res.List[name+suffix+"_first"] = first
			// The cursor of the row just before the deep page, as the
			// previous page would have returned it.
			cursor, err := gr.cursorAt(ctx, q, deep)
			if err != nil {
				return err
			}
			dq := q
			dq.After = cursor
			t, err := gr.timeKeyset(ctx, dq)
			if err != nil {
				return sessiondb.Wrap("", err, "list sessions (deep page)")
			}
			res.List[name+suffix+"_deep"] = t
		}
		for _, at := range []struct {
			name   string
			offset int
		}{{"_first", 0}, {"_deep", deep}} {
			f := sessiondb.RichFilter{Source: src, Limit: listLimit, Offset: at.offset}
			t, err := gr.timed(listRuns, func() (int, error) {
				rows, err := gr.st.ListSessionsRich(ctx, f)
				return len(rows), err
			})
			if err != nil {
				return sessiondb.Wrap("", err, "list sessions (offset)")
			}
			res.List["offset"+suffix+at.name] = t
		}
	}
	return nil
}

// listing is one listing the list phases time: every session, or those
// of listSource; suffix marks the figures of the second.
type listing struct {
	source, suffix string
	total          int // the sessions a default listing shows
}

// listings returns the step's two listings, paging through each to count
// it only on the first call: listPhase and hermesPhase both need the
// counts, and only the append phase, before either, writes.
func (gr *grower) listings(ctx context.Context, res *growthStep) ([]listing, error) {
	if res.listed != nil {
		return res.listed, nil
	}
	for _, l := range []listing{{}, {source: listSource, suffix: "_source"}} {
		var err error
		if l.total, err = gr.topLevel(ctx, l.source); err != nil {
			return nil, err
		}
		res.listed = append(res.listed, l)
	}
	return res.listed, nil
}

// topLevel counts the sessions a default listing shows.
func (gr *grower) topLevel(ctx context.Context, source string) (int, error) {
	n := 0
	q := sessiondb.SessionQuery{Source: source, Limit: sessiondb.MaxSessionPage}
	for {
		p, err := gr.st.ListSessions(ctx, q)
		if err != nil {
			return 0, sessiondb.Wrap("", err, "count listed sessions")
		}
		n += len(p.Sessions)
		if p.Next == "" {
			return n, nil
		}
		q.After = p.Next
	}
}

// cursorAt returns the cursor that lists q from its row number pos on,
// found by paging through q (untimed).
func (gr *grower) cursorAt(ctx context.Context, q sessiondb.SessionQuery, pos int) (string, error) {
	q.Limit = sessiondb.MaxSessionPage
	seen := 0
	for seen < pos {
		q.Limit = min(sessiondb.MaxSessionPage, pos-seen)
		p, err := gr.st.ListSessions(ctx, q)
		if err != nil {
			return "", sessiondb.Wrap("", err, "page to the deep listing")
		}
		seen += len(p.Sessions)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	return q.After, nil
}

// transcriptPhase reads the long session: its first and last page and,
// whole, as GetMessages returns it.
func (gr *grower) transcriptPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("long session: pages and whole")
	res.Transcript = map[string]timing{}
	id := growthID(0)
	for _, pg := range []struct {
		name string
		p    sessiondb.Page
	}{{"first_page", sessiondb.Page{Limit: pageLimit, FromStart: true}}, {"last_page", sessiondb.Page{Limit: pageLimit}}} {
		t, err := gr.timed(pageRuns, func() (int, error) {
			p, err := gr.st.GetMessagesPage(ctx, id, pg.p)
			if err != nil {
				return 0, err
			}
			return len(p.Messages), nil
		})
		if err != nil {
			return sessiondb.Wrap("", err, "read a page of the long session")
		}
		res.Transcript[pg.name] = t
	}
	t, err := gr.timed(3, func() (int, error) {
		m, err := gr.st.GetMessages(ctx, id)
		return len(m), err
	})
	if err != nil {
		return sessiondb.Wrap("", err, "read the long session")
	}
	res.Transcript["get_messages"] = t
	return nil
}

func (gr *grower) statsPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("stats")
	t, err := gr.timed(3, func() (int, error) {
		r, err := gr.st.Usage(ctx, sessiondb.UsageFilter{})
		if err != nil {
			return 0, err
		}
		return len(r.ByDay), nil
	})
	if err != nil {
		return sessiondb.Wrap("", err, "stats")
	}
	res.Stats = t
	return nil
}

// exportPhase exports sessions newest first, as `sessiondb export` encodes
// them, until exportMessages messages have gone out.
func (gr *grower) exportPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("export: up to %d messages", exportMessages)
	cw := &countingWriter{}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	errEnough := errors.New("enough")
	sessions, msgs := 0, 0
	start := gr.cfg.now()
	err := gr.st.ExportAll(ctx, "", func(rec map[string]any) error {
		if err := enc.Encode(rec); err != nil {
			return err
		}
		sessions++
		if m, ok := rec["messages"].([]map[string]any); ok {
			msgs += len(m)
		}
		if msgs >= exportMessages {
			return errEnough
		}
		return nil
	})
	took := gr.since(start)
	if err != nil && !errors.Is(err, errEnough) {
		return sessiondb.Wrap("", err, "export")
	}
	res.Export = growthExport{Sessions: sessions, Messages: msgs, MsgsPerS: rate(msgs, took),
		MBPerS: round(float64(cw.n)/(1<<20)/took.Seconds(), 1)}
	return nil
}

// loadAverage reads the 1-minute load average from /proc/loadavg; nil
// where there is none.
func loadAverage() *float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return nil
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nil
	}
	return &v
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// prunePhase prunes the oldest 1% of the ended sessions: the age cutoff is
// the start of the session at that rank.
func (gr *grower) prunePhase(ctx context.Context, res *growthStep) error {
	n := int(res.Sessions / 100)
	if n == 0 {
		return nil
	}
	// Ascending by start, the first row is the long session (the oldest,
	// never ended); rows 1 to n go. The cutoff lies halfway between the
	// starts of rows n and n+1, clear of the clock moving on meanwhile.
	q := sessiondb.SessionQuery{IncludeChildren: true, IncludeArchived: true, Ascending: true}
	cursor, err := gr.cursorAt(ctx, q, n)
	if err != nil {
		return err
	}
	q.After, q.Limit = cursor, 2
	p, err := gr.st.ListSessions(ctx, q)
	if err != nil {
		return err
	}
	if len(p.Sessions) < 2 {
		return nil
	}
	cutoff := (p.Sessions[0].StartedAt + p.Sessions[1].StartedAt) / 2
	days := (sessiondb.EpochSeconds(gr.cfg.now()) - cutoff) / 86400
	before, err := gr.st.MessageCount(ctx, "")
	if err != nil {
		return err
	}
	gr.p.phase("prune: the %d oldest sessions", n)
	flushFileSystems()
	start := gr.cfg.now()
	pruned, err := gr.st.PruneSessions(ctx, days, "")
	if err != nil {
		return sessiondb.Wrap("", err, "prune")
	}
	res.Prune.MS = round(ms(gr.since(start)), 1)
	after, err := gr.st.MessageCount(ctx, "")
	if err != nil {
		return err
	}
	res.Prune.Sessions, res.Prune.Messages = pruned, before-after
	// The pruned sessions are imported again by the next step.
	for i := range gr.have {
		if i > 0 && growthBase+float64(i)*sessionSpacing < cutoff {
			delete(gr.have, i)
		}
	}
	return nil
}
