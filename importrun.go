package sessiondb

import (
	"context"
	"fmt"
	"sync"
)

// ImportLinks remembers, for one store, the sessions imported before
// their parent, so that the parent's import, later through the same store,
// links them (exports list children before their parents). Its zero value
// is ready. Imports through it may run at once: each transaction links the
// waiting children it sees, and once it commits (apply) the links a
// concurrent import left to it are made in a second transaction.
type ImportLinks struct {
	mu      sync.Mutex
	pending map[string][]string // parent id: children waiting for it
	// recent holds the ids imported while another import was running,
	// with the count of applies that recorded them: a running import
	// that began before may have missed them (its child waits for one).
	// Only what an import still running may have missed is kept, so the
	// links hold no more than a few batches' ids, however much a store
	// imports in its life.
	recent  map[string]uint64
	applied uint64         // batches applied so far
	running map[uint64]int // imports running, by the applied count they began at
}

// PreparedSession is one record an import has validated and converted,
// ready to insert.
type PreparedSession interface {
	// SessionID is the record's id.
	SessionID() string
	// DroppedFields names what the store has no place for, reported
	// when the session is imported (ImportResult.Dropped).
	DroppedFields() []DroppedField
}

// SessionImporter is a backend's side of ImportOne and ImportBatch.
type SessionImporter[P PreparedSession] interface {
	// Prepare validates and converts one record (SessionRecord.Validate,
	// ImportValue) without touching the store.
	Prepare(rec map[string]any, opts ImportOptions) (P, error)
	// Write runs fn in one write transaction, retried as the backend
	// retries (fn may run more than once); its errors carry codes and
	// what names the operation.
	Write(ctx context.Context, what string, fn func(ImportTx[P]) error) error
}

// ImportTx is one import transaction of a backend.
type ImportTx[P PreparedSession] interface {
	// Insert inserts p with its messages, linked to the parent it names
	// when that parent is in the store, and reports false (nothing
	// changed) when its id is taken. missingParent is the parent it
	// names but could not link to, "" when none.
	Insert(p P) (inserted bool, missingParent string, err error)
	// LinkChild makes parent the parent of child, where child has none
	// and parent is in the store.
	LinkChild(parent, child string) error
	// Alone runs fn, in a transaction nested in this one, so that its
	// failure undoes fn's writes only. failed is
	// fn's error, with its code, naming the session id; fatal an error
	// after which the transaction cannot go on (it is gone, or must be
	// retried whole).
	Alone(id string, fn func(ImportTx[P]) error) (failed, fatal error)
}

// BulkImportTx is an ImportTx that can insert a whole batch in a few
// statements, where Insert takes a few a session: a server's, where each
// statement is a round trip.
type BulkImportTx[P PreparedSession] interface {
	// InsertAll inserts ps as Insert would one after another, all or
	// nothing, in a transaction nested in this one: each is then called
	// once for each of ps in order, with that transaction, whether the
	// session was inserted (false: its id was taken) and the parent it
	// names but could not link to; an error from each undoes it all.
	// done false means nothing was written, and the caller inserts them
	// one at a time, which names what failed: the batch cannot go in
	// whole (a message without its id or with a taken one, a title
	// taken, ...). fatal is as Alone's.
	InsertAll(ps []P, each func(tx ImportTx[P], i int, inserted bool, missingParent string) error) (done bool, fatal error)
}

// linkBatch is the changes one import transaction makes to the links,
// kept apart until it commits.
type linkBatch struct {
	done    []string    // parents now imported
	waiting [][2]string // {parent, child}
	byBatch map[string][]string
	linked  map[[2]string]bool // {parent, child} of pending, linked here
}

func newLinkBatch() linkBatch {
	return linkBatch{byBatch: map[string][]string{}, linked: map[[2]string]bool{}}
}

// insertLinked inserts p in tx and links the children waiting for it,
// from earlier imports through the store or earlier in the batch; what
// changes in the links is recorded in batch.
func insertLinked[P PreparedSession](l *ImportLinks, tx ImportTx[P], batch *linkBatch, p P) (bool, error) {
	ok, missingParent, err := tx.Insert(p)
	if err != nil || !ok {
		return false, err
	}
	return true, linkInserted(l, tx, batch, p.SessionID(), missingParent)
}

// linkInserted links to id, just inserted in tx, the children waiting for
// it, and records that id waits for missingParent when it names one.
func linkInserted[P PreparedSession](l *ImportLinks, tx ImportTx[P], batch *linkBatch, id, missingParent string) error {
	l.mu.Lock()
	pending := append([]string(nil), l.pending[id]...)
	l.mu.Unlock()
	for _, c := range pending {
		if err := tx.LinkChild(id, c); err != nil {
			return err
		}
		batch.linked[[2]string{id, c}] = true
	}
	for _, c := range batch.byBatch[id] {
		if err := tx.LinkChild(id, c); err != nil {
			return err
		}
	}
	batch.done = append(batch.done, id)
	if missingParent != "" {
		batch.waiting = append(batch.waiting, [2]string{missingParent, id})
		batch.byBatch[missingParent] = append(batch.byBatch[missingParent], id)
	}
	return nil
}

// begin notes that an import begins; end, given what begin returned,
// that it is over.
func (l *ImportLinks) begin() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.pending, l.recent, l.running = map[string][]string{}, map[string]uint64{}, map[uint64]int{}
	}
	l.running[l.applied]++
	return l.applied
}

func (l *ImportLinks) end(began uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[began]--; l.running[began] == 0 {
		delete(l.running, began)
	}
	// An id recorded at or before the count the oldest running import
	// began at was committed before that import began: it saw it.
	oldest := l.applied
	for n := range l.running {
		oldest = min(oldest, n)
	}
	for id, n := range l.recent {
		if n <= oldest {
			delete(l.recent, id)
		}
	}
}

// apply keeps the links of a committed batch and returns the {parent,
// child} links left to make: those an import running at the same time
// made known after this one looked (a child waiting for a parent imported
// here, or a parent of a child imported here that committed first).
func (l *ImportLinks) apply(b *linkBatch) (left [][2]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applied++
	here := make(map[string]bool, len(b.done))
	for _, id := range b.done {
		here[id], l.recent[id] = true, l.applied
		for _, c := range l.pending[id] {
			if !b.linked[[2]string{id, c}] {
				left = append(left, [2]string{id, c})
			}
		}
		delete(l.pending, id)
	}
	for _, w := range b.waiting {
		switch {
		case here[w[0]]:
			// its parent came later in the batch, which linked it
		case l.recent[w[0]] > 0:
			left = append(left, w)
		default:
			l.pending[w[0]] = append(l.pending[w[0]], w[1])
		}
	}
	return left
}

// commitLinks applies a committed batch to l, and makes in one more
// transaction the links it leaves.
func commitLinks[P PreparedSession](ctx context.Context, l *ImportLinks, b SessionImporter[P], batch *linkBatch) error {
	left := l.apply(batch)
	if len(left) == 0 {
		return nil
	}
	return b.Write(ctx, fmt.Sprintf("link %d imported sessions to their parents", len(left)), func(tx ImportTx[P]) error {
		for _, w := range left {
			if err := tx.LinkChild(w[0], w[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// result is what importing p did.
func result[P PreparedSession](p P, imported bool) ImportResult {
	if !imported {
		return ImportResult{}
	}
	return ImportResult{Imported: true, Dropped: p.DroppedFields()}
}

// ImportOne is ImportService.ImportSession over backend b: rec is
// prepared, then inserted in one transaction; a taken id is skipped
// (not imported, no error). The links l keeps change only once it
// commits.
func ImportOne[P PreparedSession](ctx context.Context, l *ImportLinks, b SessionImporter[P], rec map[string]any, opts ImportOptions) (ImportResult, error) {
	p, err := b.Prepare(rec, opts)
	if err != nil {
		return ImportResult{}, err
	}
	defer l.end(l.begin())
	var batch linkBatch
	imported := false
	err = b.Write(ctx, "import session "+p.SessionID(), func(tx ImportTx[P]) error {
		batch = newLinkBatch()
		var err error
		imported, err = insertLinked(l, tx, &batch, p)
		return err
	})
	if err != nil {
		return ImportResult{}, err
	}
	return result(p, imported), commitLinks(ctx, l, b, &batch)
}

// ImportBatch is ImportService.ImportSessions over backend b: the records
// are prepared, stopping at the first that fails, and those before it
// inserted in one transaction, each all-or-nothing (ImportTx.Alone). The
// insertions stop at the first session that fails: the sessions before it
// are committed, results holds one entry for each of them, and the error
// names the failing one (a failed preparation comes after them).
func ImportBatch[P PreparedSession](ctx context.Context, l *ImportLinks, b SessionImporter[P], recs []map[string]any, opts ImportOptions) (results []ImportResult, err error) {
	prepared := make([]P, 0, len(recs))
	var prepErr error
	for _, rec := range recs {
		p, err := b.Prepare(rec, opts)
		if err != nil {
			prepErr = err
			break
		}
		prepared = append(prepared, p)
	}
	var batch linkBatch
	var insertErr error
	if len(prepared) > 0 {
		defer l.end(l.begin())
		err = b.Write(ctx, fmt.Sprintf("import %d sessions", len(prepared)), func(tx ImportTx[P]) error {
			batch, results, insertErr = newLinkBatch(), results[:0], nil
			if bulk, ok := tx.(BulkImportTx[P]); ok && len(prepared) > 1 {
				done, fatal := bulk.InsertAll(prepared, func(tx ImportTx[P], i int, inserted bool, missingParent string) error {
					results = append(results, result(prepared[i], inserted))
					if !inserted {
						return nil
					}
					return linkInserted(l, tx, &batch, prepared[i].SessionID(), missingParent)
				})
				if fatal != nil || done {
					return fatal
				}
				batch, results = newLinkBatch(), results[:0]
			}
			for _, p := range prepared {
				var ok bool
				failed, fatal := tx.Alone(p.SessionID(), func(tx ImportTx[P]) error {
					var err error
					ok, err = insertLinked(l, tx, &batch, p)
					return err
				})
				if fatal != nil {
					return fatal
				}
				if failed != nil {
					insertErr = failed
					return nil // keep the sessions before it
				}
				results = append(results, result(p, ok))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := commitLinks(ctx, l, b, &batch); err != nil {
			return results, err
		}
	}
	if insertErr != nil {
		return results, insertErr
	}
	return results, prepErr
}
