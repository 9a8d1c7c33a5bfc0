package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
)

const (
	// searchLimit, searchPasses and getMessagesRuns are fixed by the shared
	// README so that implementations compare.
	searchLimit     = 20
	searchPasses    = 3
	getMessagesRuns = 20

	// groupCommitGoroutines append at once in the group-commit phase, each
	// to its own session.
	groupCommitGoroutines      = 16
	defaultGroupCommitMessages = 4000
)

// searchKinds are the query kinds the README reports p50 for.
var searchKinds = [...]string{"word", "two_words", "phrase", "prefix", "or"}

// mainStore runs append, get_messages and search on one fresh store, keeps
// the store's export for the import phase, and records db_bytes.
func (b *bencher) mainStore(ctx context.Context, res *benchResult) (err error) {
	st, path, err := b.open(ctx, "state")
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			st.Close()
		}
	}()
	if m, ok := st.(sessiondb.SQLiteMaintainer); ok {
		if res.SQLiteVersion, err = m.SQLiteVersion(ctx); err != nil {
			return sessiondb.Wrap("", err, "read the SQLite version")
		}
	}
	if err := b.createSessions(ctx, st); err != nil {
		return err
	}
	if err := b.appendPhase(ctx, st, res); err != nil {
		return err
	}
	if err := b.getMessagesPhase(ctx, st, res); err != nil {
		return err
	}
	if err := b.searchPhase(ctx, st, path, res); err != nil {
		return err
	}
	if err := b.exportForImport(ctx, st); err != nil {
		return err
	}
	if b.cfg.serve {
		if err := b.servePhase(ctx, st, path, res); err != nil {
			return err
		}
	}
	closed = true
	if err := st.Close(); err != nil {
		return sessiondb.Wrap("", err, "close the main store")
	}
	if res.DBBytes, err = store.Size(ctx, path); err != nil {
		return sessiondb.Wrap("", err, "size of the main store")
	}
	if b.db != "" { // the run folder, with the files, goes as a whole
		b.remove(path)
	}
	return nil
}

func (b *bencher) createSessions(ctx context.Context, st sessiondb.Store) error {
	for _, s := range b.wl.sessions {
		if _, err := st.CreateSession(ctx, sessiondb.NewSession{ID: s.ID, Source: s.Source, Model: s.Model}); err != nil {
			return sessiondb.Wrap("", err, "create session %s", s.ID)
		}
	}
	return nil
}

// appendChunk bounds the messages appended in one go before, on
// PostgreSQL, the bare loop appends the same ones: the two alternate, so
// the machine's load falls on both alike.
const appendChunk = 1000

// appendPhase appends every message record one call at a time, in order,
// and times the whole run and each tenth of it. On PostgreSQL the bare
// loop (rawPG, on a schema of its own the store made) appends the same
// messages right after each chunk of ours, and its rate is raw.append.
func (b *bencher) appendPhase(ctx context.Context, st sessiondb.Store, res *benchResult) error {
	msgs := make([]sessiondb.NewMessage, len(b.wl.messages))
	for i := range b.wl.messages {
		msgs[i] = b.wl.messages[i].newMessage()
	}
	n := len(msgs)
	var raw *rawPG
	if b.db != "" {
		var path string
		var err error
		if raw, path, err = b.openRawPGStore(ctx, "raw"); err != nil {
			return err
		}
		defer b.remove(path)
		defer raw.close()
		b.p.phase("append: %d messages, one call at a time, each %d beside the bare loop's", n, appendChunk)
	} else {
		b.p.phase("append: %d messages, one call at a time", n)
	}
	idMismatch := 0
	bar := b.p.counter("append", n, "messages")
	b.settle()
	var ours, bare [10]time.Duration
	for d := range 10 {
		for lo, hi := d*n/10, (d+1)*n/10; lo < hi; lo += appendChunk {
			end := min(lo+appendChunk, hi)
			t := b.cfg.now()
			for i := lo; i < end; i++ {
				id, err := st.AppendMessage(ctx, msgs[i])
				if err != nil {
					return sessiondb.Wrap("", err, "append message seq %d", b.wl.messages[i].Seq)
				}
				if id != b.wl.messages[i].Seq+1 {
					idMismatch++
				}
				bar.Set(int64(i + 1))
			}
			ours[d] += b.since(t)
			if raw == nil {
				continue
			}
			t = b.cfg.now()
			for i := lo; i < end; i++ {
				if err := raw.append(ctx, &msgs[i], b.cfg.now); err != nil {
					return sessiondb.Wrap("", err, "bare loop seq %d", b.wl.messages[i].Seq)
				}
			}
			bare[d] += b.since(t)
		}
	}
	total, byDecile := deciles(n, ours)
	bar.Done()
	b.p.done("append", n, total)
	if idMismatch > 0 {
		// Search ids are compared across implementations on the promise
		// that id = seq + 1 in a fresh store.
		fmt.Fprintf(b.stderr, "bench: warning: %d appended ids differ from seq+1; per-query ids will not line up with other implementations\n", idMismatch)
	}
	res.Append = appendResult{
		Messages:         n,
		Seconds:          round(total.Seconds(), 3),
		MsgsPerS:         rate(n, total),
		MsgsPerSByDecile: byDecile,
	}
	if raw != nil {
		rawTotal, rawByDecile := deciles(n, bare)
		res.Raw = &rawResult{Includes: rawPGIncludes, Append: appendResult{Messages: n, Seconds: round(rawTotal.Seconds(), 3),
			MsgsPerS: rate(n, rawTotal), MsgsPerSByDecile: rawByDecile}}
		b.p.phase("append: %.0f msgs/s, the bare loop beside it %.0f", res.Append.MsgsPerS, res.Raw.Append.MsgsPerS)
	}
	return nil
}

// deciles returns the total of the tenths' times and the rate of each
// tenth of n steps; a tenth with no steps (n < 10) has rate 0.
func deciles(n int, took [10]time.Duration) (time.Duration, []float64) {
	var total time.Duration
	rates := make([]float64, 10)
	for d, t := range took {
		total += t
		rates[d] = rate((d+1)*n/10-d*n/10, t)
	}
	return total, rates
}

// openRawPGStore makes the bare loop's schema through the store (so its
// tables and indexes are the store's), with the workload's sessions, and
// connects the bare loop to it.
func (b *bencher) openRawPGStore(ctx context.Context, name string) (*rawPG, string, error) {
	st, path, err := b.open(ctx, name)
	if err != nil {
		return nil, "", err
	}
	err = b.createSessions(ctx, st)
	cli.CloseInto(&err, st, "close the "+name+" store")
	if err == nil {
		var raw *rawPG
		if raw, err = openRawPG(ctx, path); err == nil {
			return raw, path, nil
		}
	}
	b.remove(path)
	return nil, "", err
}

// getMessagesPhase reads the long session back: one warm-up, then timed runs.
func (b *bencher) getMessagesPhase(ctx context.Context, st sessiondb.Store, res *benchResult) error {
	if b.wl.getMessages == "" {
		return nil
	}
	b.p.phase("get_messages: session %s, %d timed runs", b.wl.getMessages, getMessagesRuns)
	rows, err := st.GetMessages(ctx, b.wl.getMessages)
	if err != nil {
		return sessiondb.Wrap("", err, "get messages of %s", b.wl.getMessages)
	}
	res.GetMessages.Rows = len(rows)
	b.settle()
	samples := make([]float64, 0, getMessagesRuns)
	for range getMessagesRuns {
		t := b.cfg.now()
		if _, err := st.GetMessages(ctx, b.wl.getMessages); err != nil {
			return sessiondb.Wrap("", err, "get messages of %s", b.wl.getMessages)
		}
		samples = append(samples, ms(b.since(t)))
	}
	res.GetMessages.P50MS = round(percentile(samples, 0.50), 3)
	return nil
}

// searchPhase runs every query once to warm up, then searchPasses timed
// passes. Overall and per-kind percentiles are taken over all samples
// (queries x passes), so a query that is slow only sometimes still shows;
// each per_query entry reports the median of its own passes.
func (b *bencher) searchPhase(ctx context.Context, st sessiondb.Store, path string, res *benchResult) error {
	qs := b.wl.queries
	b.p.phase("search: %d queries, 1 warm-up + %d timed passes", len(qs), searchPasses)
	res.Search.PerQuery = make([]queryResult, len(qs))
	res.Search.P50MSByKind = map[string]float64{}
	for _, k := range searchKinds {
		res.Search.P50MSByKind[k] = 0
	}
	filter := sessiondb.SearchFilter{Limit: searchLimit}
	for i, q := range qs {
		hits, err := st.SearchMessages(ctx, q.Q, filter)
		if err != nil {
			return sessiondb.Wrap("", err, "search %q", q.Q)
		}
		ids := make([]int64, len(hits))
		for j, h := range hits {
			ids[j] = h.ID
		}
		res.Search.PerQuery[i] = queryResult{Idx: q.Idx, Kind: q.Kind, Q: q.Q, Hits: len(hits), IDs: ids}
		if len(hits) == 0 {
			res.Search.ZeroHitQueries++
		}
	}
	floor, err := b.openSearchFloor(ctx, path)
	if err != nil {
		return err
	}
	if floor != nil {
		defer floor.Close()
	}
	bar := b.p.counter("search", searchPasses*len(qs), "queries")
	b.settle()
	perQuery := make([][]float64, len(qs))
	var all, floors []float64
	byKind := map[string][]float64{}
	for pass := range searchPasses {
		for i, q := range qs {
			t := b.cfg.now()
			if _, err := st.SearchMessages(ctx, q.Q, filter); err != nil {
				return sessiondb.Wrap("", err, "search %q", q.Q)
			}
			s := ms(b.since(t))
			perQuery[i] = append(perQuery[i], s)
			all = append(all, s)
			byKind[q.Kind] = append(byKind[q.Kind], s)
			if floor != nil {
				t := b.cfg.now()
				if _, err := floor.run(ctx, q.Q); err != nil {
					return err
				}
				floors = append(floors, ms(b.since(t)))
			}
			bar.Set(int64(pass*len(qs) + i + 1))
		}
	}
	bar.Done()
	for i := range qs {
		res.Search.PerQuery[i].MS = round(percentile(perQuery[i], 0.5), 3)
	}
	res.Search.P50MS = round(percentile(all, 0.50), 3)
	res.Search.P95MS = round(percentile(all, 0.95), 3)
	res.Search.MaxMS = round(percentile(all, 1), 3)
	for k, s := range byKind {
		res.Search.P50MSByKind[k] = round(percentile(s, 0.5), 3)
	}
	if res.Search.Plans, err = b.searchPlans(ctx, st, path); err != nil {
		return err
	}
	if len(floors) > 0 {
		res.Search.FloorIncludes = searchFloorIncludes
		res.Search.FloorP50MS = round(percentile(floors, 0.50), 3)
		res.Search.FloorP95MS = round(percentile(floors, 0.95), 3)
		if res.Search.FloorP50MS > 0 {
			res.Search.RatioVsFloor = round(res.Search.P50MS/res.Search.FloorP50MS, 3)
		}
	}
	b.p.phase("search: p50 %.2f ms, p95 %.2f ms, %d queries without hits", res.Search.P50MS, res.Search.P95MS, res.Search.ZeroHitQueries)
	return nil
}

// exportForImport keeps every session of the main store in the form the
// JSONL export file holds (decoded back from JSON), which is what the bulk
// import path reads.
func (b *bencher) exportForImport(ctx context.Context, st sessiondb.Store) error {
	b.p.phase("export: reading sessions back for the import phase")
	b.importRecs = b.importRecs[:0]
	b.importMsgs = 0
	err := st.ExportAll(ctx, "", func(rec map[string]any) error {
		raw, err := json.Marshal(rec)
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "encode exported session")
		}
		var back map[string]any
		if err := json.Unmarshal(raw, &back); err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "decode exported session")
		}
		b.importMsgs += sessiondb.RecordMessages(back)
		b.importRecs = append(b.importRecs, back)
		return nil
	})
	if err != nil {
		return sessiondb.Wrap("", err, "export sessions")
	}
	if b.importMsgs != len(b.wl.messages) {
		return sessiondb.Errorf(sessiondb.EINTERNAL, "export returned %d messages, %d were appended", b.importMsgs, len(b.wl.messages))
	}
	return nil
}

// importPhase imports the exported sessions into a fresh store.
func (b *bencher) importPhase(ctx context.Context, res *benchResult) error {
	st, path, err := b.open(ctx, "import")
	if err != nil {
		return err
	}
	defer b.remove(path)
	defer st.Close()
	b.p.phase("import: %d sessions, %d messages", len(b.importRecs), b.importMsgs)
	bar := b.p.counter("import", len(b.importRecs), "sessions")
	b.settle()
	start := b.cfg.now()
	// In batches, as `sessiondb import` commits a file, and as many at
	// once as it writes (store.ImportJobs).
	var batches [][2]int
	for i := 0; i < len(b.importRecs); {
		j, msgs := i, 0
		for j < len(b.importRecs) && !sessiondb.ImportBatchFull(j-i, msgs) {
			msgs += sessiondb.RecordMessages(b.importRecs[j])
			j++
		}
		batches = append(batches, [2]int{i, j})
		i = j
	}
	next := make(chan [2]int)
	errs := make(chan error, store.ImportJobs(b.db))
	var imported atomic.Int64
	for range cap(errs) {
		go func() {
			var failed error
			for r := range next {
				if failed != nil {
					continue
				}
				if _, err := st.ImportSessions(ctx, b.importRecs[r[0]:r[1]], sessiondb.ImportOptions{}); err != nil {
					failed = sessiondb.Wrap("", err, "import sessions %v to %v", b.importRecs[r[0]]["id"], b.importRecs[r[1]-1]["id"])
					continue
				}
				bar.Set(imported.Add(int64(r[1] - r[0])))
			}
			errs <- failed
		}()
	}
	for _, r := range batches {
		next <- r
	}
	close(next)
	var failed error
	for range cap(errs) {
		failed = cmp.Or(failed, <-errs)
	}
	if failed != nil {
		return failed
	}
	took := b.since(start)
	bar.Done()
	b.p.done("import", b.importMsgs, took)
	res.Import.MsgsPerS = rate(b.importMsgs, took)
	n, err := st.MessageCount(ctx, "")
	if err != nil {
		return sessiondb.Wrap("", err, "count imported messages")
	}
	if n != int64(b.importMsgs) {
		return sessiondb.Errorf(sessiondb.EINTERNAL, "import stored %d messages, expected %d", n, b.importMsgs)
	}
	b.importRecs = nil // let the memory go before the next phases
	return nil
}

// groupCommitPhase appends the first groupCommitMessages workload messages
// spread round-robin over 16 fresh sessions: once from one goroutine, one
// call at a time, and once from 16 goroutines (each one call at a time to
// its own session), each run on its own fresh store.
func (b *bencher) groupCommitPhase(ctx context.Context, res *benchResult) error {
	n := min(b.cfg.groupCommitMessages, len(b.wl.messages))
	if n == 0 {
		return nil
	}
	g := groupCommitGoroutines
	sessions := make([]string, g)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("groupcommit_%02d", i)
	}
	msgs := make([]sessiondb.NewMessage, n)
	for i := range msgs {
		msgs[i] = b.wl.messages[i].newMessage()
		msgs[i].SessionID = sessions[i%g]
	}
	run := func(name string, concurrent bool) (time.Duration, error) {
		st, path, err := b.open(ctx, name)
		if err != nil {
			return 0, err
		}
		defer b.remove(path)
		defer st.Close()
		for _, s := range sessions {
			if _, err := st.CreateSession(ctx, sessiondb.NewSession{ID: s, Source: "cli"}); err != nil {
				return 0, sessiondb.Wrap("", err, "create session %s", s)
			}
		}
		b.settle()
		start := b.cfg.now()
		if !concurrent {
			for i := range msgs {
				if _, err := st.AppendMessage(ctx, msgs[i]); err != nil {
					return 0, sessiondb.Wrap("", err, "append (serial) message %d", i)
				}
			}
		} else {
			var wg sync.WaitGroup
			errs := make([]error, g)
			for w := range g {
				wg.Go(func() {
					for i := w; i < n; i += g {
						if _, err := st.AppendMessage(ctx, msgs[i]); err != nil {
							errs[w] = sessiondb.Wrap("", err, "append (goroutine %d) message %d", w, i)
							return
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return 0, err
				}
			}
		}
		took := b.since(start)
		got, err := st.MessageCount(ctx, "")
		if err != nil {
			return 0, sessiondb.Wrap("", err, "count messages")
		}
		if got != int64(n) {
			return 0, sessiondb.Errorf(sessiondb.EINTERNAL, "group commit %s run stored %d messages, expected %d", name, got, n)
		}
		return took, nil
	}
	b.p.phase("group commit: %d messages over %d sessions, serial", n, g)
	serial, err := run("serial", false)
	if err != nil {
		return err
	}
	b.p.phase("group commit: %d messages from %d goroutines", n, g)
	conc, err := run("groupcommit", true)
	if err != nil {
		return err
	}
	res.GroupCommit = groupCommitResult{
		Goroutines: g,
		Messages:   n,
		MsgsPerS:   rate(n, conc),
		SerialPerS: rate(n, serial),
	}
	if res.GroupCommit.SerialPerS > 0 {
		res.GroupCommit.RatioVsSerial = round(res.GroupCommit.MsgsPerS/res.GroupCommit.SerialPerS, 3)
	}
	b.p.phase("group commit: %.0f msgs/s vs %.0f serial (x%.2f)", res.GroupCommit.MsgsPerS, res.GroupCommit.SerialPerS, res.GroupCommit.RatioVsSerial)
	return nil
}

// decileTimer times a run of n steps as a whole and in tenths.
type decileTimer struct {
	now    func() time.Time
	bounds [11]int // bounds[d] is the first step of decile d
	marks  [11]time.Time
	next   int // the next boundary to mark
}

func newDecileTimer(n int, now func() time.Time) *decileTimer {
	t := &decileTimer{now: now}
	for d := range t.bounds {
		t.bounds[d] = d * n / 10
	}
	t.tick(0)
	return t
}

// tick records that done steps are complete. It marks every boundary
// reached, several at once when n < 10 makes tenths empty.
func (t *decileTimer) tick(done int) {
	if t.next > 10 || done < t.bounds[t.next] {
		return
	}
	now := t.now()
	for t.next <= 10 && done >= t.bounds[t.next] {
		t.marks[t.next] = now
		t.next++
	}
}

// finish returns the total time and the rate of each tenth; a tenth with
// no steps (n < 10) has rate 0.
func (t *decileTimer) finish() (time.Duration, []float64) {
	for ; t.next <= 10; t.next++ {
		t.marks[t.next] = t.now()
	}
	rates := make([]float64, 10)
	for d := range rates {
		rates[d] = rate(t.bounds[d+1]-t.bounds[d], t.marks[d+1].Sub(t.marks[d]))
	}
	return t.marks[10].Sub(t.marks[0]), rates
}

// percentile returns the nearest-rank p-quantile of samples (p in [0,1]);
// 0 for no samples. samples is not modified.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	k = max(0, min(k, len(s)-1))
	return s[k]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rate returns n per second of d, rounded to 0.1; 0 when d is not positive.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round(float64(n)/d.Seconds(), 1)
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
