package sessiondb

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// CopyBatch is the most sessions Copy hands to ImportSessions at once,
// and the most an import of a file puts in one transaction.
const CopyBatch = 50

// ImportBatchMessages is how many messages an import of a file gathers
// before it commits them, whatever the number of sessions: a batch of
// long sessions must not hold a file's worth of messages in memory.
const ImportBatchMessages = 5000

// ImportBatchFull reports whether an import batch of sessions sessions
// holding messages messages is to be committed before another is added.
// One transaction per batch instead of one per session: PostgreSQL's
// import of sessions of ten messages went from 2,050–2,400 to
// 2,690–2,840 msgs/s (docs/benchmarks.md).
func ImportBatchFull(sessions, messages int) bool {
	return sessions >= CopyBatch || messages >= ImportBatchMessages
}

// RecordMessages is how many messages an import record carries: a record
// read from JSON ([]any) or one a store exported ([]map[string]any).
func RecordMessages(rec map[string]any) int {
	switch m := rec["messages"].(type) {
	case []any:
		return len(m)
	case []map[string]any:
		return len(m)
	}
	return 0
}

// CopyReport says what Copy did and what it verified.
type CopyReport struct {
	// Sessions is how many sessions the source holds; Copied of them were
	// imported now, Skipped were in the target already (an earlier,
	// interrupted run, or the same id there before).
	Sessions int `json:"sessions"`
	Copied   int `json:"copied"`
	Skipped  int `json:"skipped"`
	// Messages counts the source's messages.
	Messages int64 `json:"messages"`
	// Checksum is the checksum of the source's sessions over what both
	// stores keep (CompareCopies), which the target's copies match.
	Checksum string `json:"checksum"`
	// Dropped names what the target has no place for (a column or table
	// of a newer Hermes its schema lacks) and was not copied, summed over
	// the copied sessions; nil when nothing was.
	Dropped []DroppedField `json:"dropped,omitempty"`
	// Unparented names the source's sessions whose parent is not in the
	// source (deleted with the foreign keys off) or is the session itself:
	// a link no store can hold, so they are copied without it. Nil when
	// there are none.
	Unparented []string `json:"unparented,omitempty"`
}

// CopyOptions tunes Copy.
type CopyOptions struct {
	// Jobs is how many batches are written into the target at once, each
	// in a transaction of its own, while the next is read from the
	// source; 0 is one. A PostgreSQL server inserts each batch's rows on
	// a core of its own; a SQLite file takes one writer at a time.
	Jobs int
	// Progress, when not nil, is called after each batch is written, with
	// the sessions done so far and the total, from one goroutine at a
	// time.
	Progress func(done, total int)
}

// Copy copies every session of from into to, whole: every column of its
// row (its live gateway state too: ImportOptions.KeepLiveState), every
// message row with all its columns (hidden ones with their marks), its
// usage rows by model, and its parent link, through the import service:
// parents before their children, batches cut by ImportBatchFull (at most
// CopyBatch sessions, about ImportBatchMessages messages) per
// ImportSessions call, each session all-or-nothing, up to opts.Jobs
// batches at once (a batch holding a child waits for its parent's batch,
// so that no stop leaves a child in to without its parent; a parent
// placed after its child, in a loop of parents, is linked once it
// commits: ImportLinks). What to has no place for is left
// out and named in the report's Dropped; a parent the source lacks, or
// that is the session itself, is left out and the session named in
// Unparented. Sessions already in to are
// skipped, so a copy that was interrupted is resumed by running it again,
// and running it twice changes nothing.
//
// At the end it verifies the copy: every copied session read back from to
// must equal the source's on what both keep (CompareCopies); a session
// that differs (one that was in to before, with other content) is a
// conflict naming it. A title held in to by another session stops the
// copy with conflict.
func Copy(ctx context.Context, from, to Store, opts CopyOptions) (*CopyReport, error) {
	type node struct {
		id, parent string
	}
	var all []node
	err := EachSession(ctx, from, "", func(s *Session) bool {
		n := node{id: s.ID}
		if s.ParentSessionID != nil {
			n.parent = *s.ParentSessionID
		}
		all = append(all, n)
		return true
	})
	if err != nil {
		return nil, Wrap("", err, "copy: list the source's sessions")
	}
	// EachSession lists newest first; oldest first puts nearly every
	// parent before its children, and the walk below makes sure of it.
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	byID := make(map[string]node, len(all))
	for _, n := range all {
		byID[n.id] = n
	}
	rep := &CopyReport{Sessions: len(all)}
	for _, n := range all {
		if _, ok := byID[n.parent]; n.parent != "" && (!ok || n.parent == n.id) {
			rep.Unparented = append(rep.Unparented, n.id)
		}
	}
	sort.Strings(rep.Unparented)
	// Each session goes after its ancestors: walk up the unplaced ones
	// (marking them, so a cycle in damaged data ends the walk) and place
	// the chain from the top down.
	order := make([]string, 0, len(all))
	placed := make(map[string]bool, len(all))
	for _, n := range all {
		var chain []string
		for cur := n.id; cur != "" && !placed[cur]; {
			x, ok := byID[cur]
			if !ok {
				break // a parent the source lacks: the copy has none either
			}
			placed[cur] = true
			chain = append(chain, cur)
			cur = x.parent
		}
		for i := len(chain) - 1; i >= 0; i-- {
			order = append(order, chain[i])
		}
	}

	// Up to Jobs batches are written at once; mu guards the report, the
	// sessions done and the first failure, which the writers share.
	var (
		mu      sync.Mutex
		writers sync.WaitGroup
		failure error
		done    int
		copied  = map[string]bool{} // imported by this run
	)
	slots := make(chan struct{}, max(opts.Jobs, 1))
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return failure
	}
	// batchOf is the batch each session handed to a writer is in; ended
	// is closed for each batch once its writer is over.
	batchOf := make(map[string]int, len(order))
	var ended []chan struct{}
	// write imports one batch (none when every session of it was deleted
	// since the listing); seen is how many sessions of order it accounts
	// for, the deleted ones included. It begins once the batches holding
	// its sessions' parents are over, and writes nothing once a batch
	// failed: a child committed before its parent, whose batch then fails
	// or is killed, would stay without it for good, since the run that
	// resumes the copy knows nothing of the link it waits for
	// (ImportLinks lives in one process).
	write := func(recs []map[string]any, ids []string, seen int, after []chan struct{}, end chan struct{}) {
		defer writers.Done()
		defer close(end)
		defer func() { <-slots }()
		for _, ch := range after {
			<-ch
		}
		if failed() != nil {
			return
		}
		var res []ImportResult
		var err error
		if len(recs) > 0 {
			res, err = to.ImportSessions(ctx, recs, ImportOptions{KeepLiveState: true})
		}
		mu.Lock()
		defer mu.Unlock()
		for i, r := range res {
			if r.Imported {
				copied[ids[i]] = true
				rep.Copied++
				rep.Dropped = MergeDropped(rep.Dropped, r.Dropped)
			} else {
				rep.Skipped++
			}
		}
		if err != nil {
			failure = cmp.Or(failure, Wrap("", err, "copy"))
			return
		}
		done += seen
		if opts.Progress != nil && failure == nil {
			opts.Progress(done, len(order))
		}
	}
	var recs []map[string]any
	var ids []string // of recs
	msgs, seen := 0, 0
	for i, id := range order {
		if err := failed(); err != nil {
			break
		}
		rec, err := from.ExportSession(ctx, id)
		if err != nil && ErrorCode(err) != ENOTFOUND { // not found: deleted since the listing
			mu.Lock()
			failure = cmp.Or(failure, Wrap("", err, "copy: read session %s", id))
			mu.Unlock()
			break
		}
		if err == nil {
			recs, ids, msgs = append(recs, rec), append(ids, id), msgs+RecordMessages(rec)
		}
		seen++
		// Batches are cut as an import's are (ImportBatchFull), so long
		// sessions never hold more than Jobs+1 batches of messages in
		// memory.
		if ImportBatchFull(len(recs), msgs) || i == len(order)-1 {
			b := len(ended)
			var after []chan struct{}
			deps := map[int]bool{}
			for _, id := range ids {
				batchOf[id] = b
				// A parent placed after its child (a cycle) is linked by
				// ImportLinks instead.
				if p, ok := batchOf[byID[id].parent]; ok && p < b && !deps[p] {
					deps[p] = true
					after = append(after, ended[p])
				}
			}
			ended = append(ended, make(chan struct{}))
			slots <- struct{}{}
			writers.Add(1)
			go write(recs, ids, seen, after, ended[b])
			recs, ids, msgs, seen = nil, nil, 0, 0
		}
	}
	writers.Wait()
	if err := failed(); err != nil {
		if ctx.Err() != nil {
			// Stopped: what a writer or a read cut short made of it ("conn
			// closed") is not the cause.
			return rep, Wrap(CarriedCode(ctx.Err()), ctx.Err(), "copy stopped")
		}
		return rep, err
	}

	c, err := CompareCopies(ctx, from, to, order)
	if err != nil {
		return rep, err
	}
	rep.Messages, rep.Checksum = c.Messages, c.Sum
	if len(c.Differ) > 0 {
		// A session this run imported was not in the target before: it
		// changed in the source since it was read (a session in use).
		why := make([]string, len(c.Differ))
		for i, id := range c.Differ {
			why[i] = id + ": in the target before, with other content"
			if copied[id] {
				why[i] = id + ": changed in the source while it was copied (a session in use)"
			}
		}
		return rep, Errorf(ECONFLICT, "copy: the target's copies differ from the source, %s; delete them from the target and copy again to copy them anew", strings.Join(why, "; "))
	}
	return rep, nil
}

// Comparison is what CompareCopies found.
type Comparison struct {
	// Sum is a SHA-256 over the compared form of every session of the
	// source, in id order.
	Sum string
	// Messages counts the source's messages compared.
	Messages int64
	// Differ lists up to five sessions whose copies differ.
	Differ []string
}

// CompareCopies compares sessions ids as from and to hold them
// (ExportSession, read as JSON as an export file holds it), on what both
// keep: the session columns both rows have, the messages in order with
// the columns both have (but the id, which a copy into a store holding it
// renumbers), and the usage rows where both keep them. Where to cannot
// mark a hidden message, the source's hidden messages are left out (an
// import does not store them); message_count and tool_call_count are
// compared only where hidden messages were kept, an import recomputing
// them otherwise. A session from lacks is not compared (deleted since
// it was listed); one to lacks counts as empty there. A
// parent outside ids, or the session itself, counts as none on the
// source's side: Copy leaves such a link out (CopyReport.Unparented).
func CompareCopies(ctx context.Context, from, to Store, ids []string) (*Comparison, error) {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	in := make(map[string]bool, len(sorted))
	for _, id := range sorted {
		in[id] = true
	}
	c := &Comparison{}
	total := sha256.New()
	// A window of sessions is read at once, both sides of each at once:
	// a server answers one connection while the file answers another.
	// The window bounds what is held in memory.
	var docs [compareWindow][2]map[string]any
	var errs [compareWindow][2]error
	for start := 0; start < len(sorted); start += compareWindow {
		win := sorted[start:min(start+compareWindow, len(sorted))]
		var wg sync.WaitGroup
		for k, id := range win {
			for i, st := range []Store{from, to} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					docs[k][i], errs[k][i] = nil, nil
					rec, err := st.ExportSession(ctx, id)
					if ErrorCode(err) == ENOTFOUND {
						return
					}
					if err != nil {
						errs[k][i] = Wrap("", err, "compare session %s", id)
						return
					}
					if docs[k][i], err = jsonDoc(rec); err != nil {
						errs[k][i] = Wrap(EINTERNAL, err, "compare session %s", id)
					}
					if p, ok := docs[k][i]["parent_session_id"].(string); ok && i == 0 && (p == id || !in[p]) {
						docs[k][i]["parent_session_id"] = nil
					}
				}()
			}
		}
		wg.Wait()
		for k, id := range win {
			if err := cmp.Or(errs[k][0], errs[k][1]); err != nil {
				return nil, err
			}
			if docs[k][0] == nil {
				continue
			}
			a, b, n, err := comparedForms(docs[k][0], docs[k][1])
			if err != nil {
				return nil, Wrap(EINTERNAL, err, "compare session %s", id)
			}
			docs[k] = [2]map[string]any{}
			c.Messages += n
			sum := sha256.Sum256(a)
			fmt.Fprintf(total, "%s %s\n", id, hex.EncodeToString(sum[:]))
			if !bytes.Equal(a, b) && len(c.Differ) < 5 {
				c.Differ = append(c.Differ, id)
			}
		}
	}
	c.Sum = hex.EncodeToString(total.Sum(nil))
	return c, nil
}

// compareWindow is how many sessions CompareCopies reads at once.
const compareWindow = 4

// jsonDoc is rec as JSON decodes it; nil for nil.
func jsonDoc(rec map[string]any) (map[string]any, error) {
	if rec == nil {
		return nil, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	err = json.Unmarshal(b, &doc)
	return doc, err
}

// comparedForms returns the compared forms of a session's two records
// (CompareCopies) and how many messages the source's holds.
func comparedForms(src, dst map[string]any) (a, b []byte, messages int64, err error) {
	sm, dm := objects(src["messages"]), objects(dst["messages"])
	marks := len(dm) > 0 && has(dm[0], "active")
	kept := sm[:0:0]
	hiddenKept := false
	for _, m := range sm {
		hidden := m["active"] == float64(0)
		if hidden && !marks {
			continue
		}
		hiddenKept = hiddenKept || hidden
		kept = append(kept, m)
	}
	skip := map[string]bool{"messages": true, UsageKey: true}
	if !hiddenKept {
		skip["message_count"], skip["tool_call_count"] = true, true
	}
	common := func(x, y map[string]any, skip map[string]bool) []string {
		var keys []string
		for k := range x {
			if _, ok := y[k]; ok && !skip[k] {
				keys = append(keys, k)
			}
		}
		return keys
	}
	var msgKeys []string
	if len(kept) > 0 && len(dm) > 0 {
		msgKeys = common(kept[0], dm[0], map[string]bool{"id": true, "session_id": true})
	}
	su, du := objects(src[UsageKey]), objects(dst[UsageKey])
	var usageKeys []string
	if len(su) > 0 && len(du) > 0 {
		usageKeys = common(su[0], du[0], map[string]bool{"session_id": true})
	}
	_, srcUsage := src[UsageKey]
	_, dstUsage := dst[UsageKey]
	form := func(doc map[string]any, msgs, usage []map[string]any) ([]byte, error) {
		if doc == nil {
			return nil, nil
		}
		out := map[string]any{}
		for _, k := range common(src, dst, skip) {
			out[k] = doc[k]
		}
		out["messages"] = pick(msgs, msgKeys)
		if srcUsage && dstUsage {
			out[UsageKey] = pick(usage, usageKeys)
		}
		return json.Marshal(out) // maps marshal with sorted keys
	}
	if a, err = form(src, kept, su); err != nil {
		return nil, nil, 0, err
	}
	if b, err = form(dst, dm, du); err != nil {
		return nil, nil, 0, err
	}
	return a, b, int64(len(kept)), nil
}

// objects is a decoded JSON list of objects.
func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, m)
	}
	return out
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// pick is each of rows with only keys.
func pick(rows []map[string]any, keys []string) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		o := make(map[string]any, len(keys))
		for _, k := range keys {
			o[k] = r[k]
		}
		out[i] = o
	}
	return out
}
