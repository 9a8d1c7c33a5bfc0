package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb"
)

// DefaultWriteBudget is how long a write waits for SQLite's write lock before
// it fails with code busy.
const DefaultWriteBudget = 20 * time.Second

// maxBusyWait caps the busy handler's wait inside one BEGIN IMMEDIATE, so
// that our retry loop, not SQLite, owns the deadline and the jitter.
const maxBusyWait = 250 * time.Millisecond

// Writer owns the one connection through which a process writes a file.
//
// Every write runs in a BEGIN IMMEDIATE transaction: the write lock is taken
// up front, so a transaction never fails half-way for want of it. Waiting for
// the lock is bounded by a time budget with jittered retries, never by an
// attempt count, and the connection is released while sleeping so other
// goroutines are not held up behind a sleeper.
//
// Writes arriving together from many goroutines share one transaction and
// one commit (group commit): whichever caller gets the connection runs every
// pending write, each inside its own savepoint, so one write's failure
// undoes only that write. Each call returns after the commit that holds its
// own changes, or with the error that lost them. When a write makes SQLite
// abandon the whole transaction (RAISE(ROLLBACK), a full disk, an I/O
// error, an interrupt), every write of the group fails with that error and
// no statement runs after it: outside the transaction it would be committed
// on its own.
type Writer struct {
	// Budget bounds the wait for the write lock; 0 means DefaultWriteBudget.
	// A context deadline can shorten it.
	Budget time.Duration
	// Now reads the clock for the budget; nil means time.Now.
	Now func() time.Time
	// Yield makes the wait for the write lock begin at 1 ms instead of
	// 20 µs (busy.go, the yielding schedule): for a file several
	// processes append to, where a waiter that took the lock at every gap
	// between another process's transactions made the lock change hands at
	// nearly every commit. Set it before the first write.
	Yield bool
	// OnCommit, when set, is called after each successful commit with the
	// number of writes it held, on the committing goroutine but after the
	// connection is released. It must not block.
	OnCommit func(writes int)

	conn *sql.Conn
	sem  chan struct{} // one slot: the right to use conn
	// connect, when set, gives conn for one batch of writes (see
	// NewBatchWriter), and release ends it. Guarded by sem.
	connect func(ctx context.Context) (*sql.Conn, func() error, error)
	release func() error

	mu      sync.Mutex // guards pending and call.taken
	pending []*call
	// callers counts the calls inside Do; lastBatch is how many writes the
	// last transaction held (guarded by sem).
	callers   atomic.Int32
	lastBatch int

	// Guarded by sem.
	stmts  map[string]*sql.Stmt
	busyMS int
	hooked bool // the rollback hook is registered
	// lost is the statement error that came with a forced rollback (see
	// rolledBack); nil until one is seen.
	lost error

	// rolledBack is set by SQLite's rollback hook when the open transaction
	// ends in a rollback, ours or one an error forced. The hook runs inside
	// a statement of the goroutine holding sem; the atomic keeps that plain
	// to the race detector whatever the driver's callback path.
	rolledBack atomic.Bool
}

type call struct {
	ctx   context.Context
	fn    func(*Tx) error
	done  chan struct{}
	err   error
	taken bool
}

// NewWriter returns a Writer over conn. The Writer owns conn from now on:
// nothing else may use it, and Close closes it.
func NewWriter(conn *sql.Conn) *Writer {
	return &Writer{conn: conn, sem: make(chan struct{}, 1), stmts: map[string]*sql.Stmt{}, busyMS: -1}
}

// NewBatchWriter returns a Writer that holds a connection only while it
// writes: for each batch of writes (one transaction: the writes waiting
// when the lock was taken, grouped as Do describes) connect opens one, and
// the release it returns is called once the batch has committed or failed,
// before the next batch connects. Writes that arrive while a batch
// connects join it. For files a process must not keep open between writes
// (a mailbox's inbound.db, which its reader in a container sees afresh only
// after the writer closes it). Close has nothing to close.
func NewBatchWriter(connect func(ctx context.Context) (conn *sql.Conn, release func() error, err error)) *Writer {
	return &Writer{connect: connect, sem: make(chan struct{}, 1), stmts: map[string]*sql.Stmt{}, busyMS: -1}
}

// Close closes the cached statements and the connection, after any write in
// progress.
func (w *Writer) Close() error {
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	if w.connect != nil {
		return nil
	}
	return w.closeConn()
}

// closeConn closes the cached statements and conn. Guarded by sem.
func (w *Writer) closeConn() error {
	for _, s := range w.stmts {
		s.Close()
	}
	clear(w.stmts)
	if w.hooked {
		// modernc keeps hooks in a table keyed by the connection's handle,
		// which a later connection may reuse.
		w.conn.Raw(func(dc any) error { return onRollback(dc, nil) })
		w.hooked = false
	}
	w.busyMS = -1
	return w.conn.Close()
}

// open gives a batch writer its connection for this hold of sem; a no-op
// for a Writer over one connection.
func (w *Writer) open(ctx context.Context) error {
	if w.connect == nil {
		return nil
	}
	conn, release, err := w.connect(ctx)
	if err != nil {
		return err
	}
	w.conn, w.release = conn, release
	return nil
}

// end closes a batch writer's connection before sem is given back; a no-op
// for a Writer over one connection.
func (w *Writer) end() error {
	if w.connect == nil || w.conn == nil {
		return nil
	}
	err := w.closeConn()
	if rerr := w.release(); err == nil {
		err = rerr
	}
	w.conn, w.release = nil, nil
	return err
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Do runs fn in a write transaction, possibly together with other callers'
// writes in one commit. fn must do only database work through tx; its error
// rolls back its own changes and is returned. Once fn has started, ctx no
// longer cancels it: a started transaction always finishes, so the
// connection is never left half-way.
func (w *Writer) Do(ctx context.Context, fn func(tx *Tx) error) error {
	w.callers.Add(1)
	defer w.callers.Add(-1)
	c := &call{ctx: ctx, fn: fn, done: make(chan struct{})}
	w.mu.Lock()
	w.pending = append(w.pending, c)
	w.mu.Unlock()

	start := w.now()
	budget := w.Budget
	if budget <= 0 {
		budget = DefaultWriteBudget
	}
	deadline := start.Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	attempts := 0
	for {
		select {
		case <-c.done:
			return c.err
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			if w.withdraw(c) {
				return Wrap(ctx.Err(), "write abandoned while waiting for the connection")
			}
			<-c.done
			return c.err
		}
		select {
		case <-c.done: // another caller committed our write while we waited
			<-w.sem
			return c.err
		default:
		}
		attempts++
		if err := w.open(ctx); err != nil {
			<-w.sem
			if w.withdraw(c) {
				return err
			}
			<-c.done
			return c.err
		}
		err := w.begin(deadline)
		if err != nil {
			w.end()
			<-w.sem
			elapsed := w.now().Sub(start)
			if !IsBusy(err) {
				if w.withdraw(c) {
					return Wrap(err, "begin write transaction")
				}
				<-c.done
				return c.err
			}
			remaining := deadline.Sub(w.now())
			if remaining <= 0 {
				if w.withdraw(c) {
					return sessiondb.Errorf(sessiondb.EBUSY, "database is locked by another writer: gave up after %d attempts in %s: %w",
						attempts, elapsed.Round(time.Millisecond), err)
				}
				<-c.done
				return c.err
			}
			pause := jitter(elapsed)
			if pause > remaining {
				pause = remaining
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.done:
				t.Stop()
				return c.err
			case <-ctx.Done():
				t.Stop()
				if w.withdraw(c) {
					return Wrap(ctx.Err(), "write abandoned while waiting for the lock")
				}
				<-c.done
				return c.err
			}
			continue
		}
		// Callers woken by the previous commit are about to queue their
		// next writes, and others may be on their way in; yielding once
		// lets them in so they share this commit instead of each starting
		// the next one. A lone caller does not yield: on a busy machine
		// the yield can cost it a scheduler turn, half a millisecond or
		// more, for nobody. A batch writer always yields: its writes
		// come from independent operations, and its connect is already
		// the window they join in.
		if w.connect != nil || w.callers.Load() > 1 || w.lastBatch > 1 {
			runtime.Gosched()
		}
		batch := w.take()
		w.lastBatch = len(batch)
		committed := w.run(batch, deadline)
		if err := w.end(); err != nil {
			for _, b := range batch {
				if b.err == nil {
					b.err = Wrap(err, "close after commit")
				}
			}
		}
		// The batch's callers learn they are done before sem is free: one
		// that sees sem first would otherwise start a transaction (a batch
		// writer: a connection) for a write already committed.
		for _, b := range batch {
			close(b.done)
		}
		<-w.sem
		if committed > 0 && w.OnCommit != nil {
			w.OnCommit(committed)
		}
		return c.err
	}
}

// Queued reports how many writes wait for a transaction to take them.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// jitter is the pause between lock attempts: short while contention is
// young, longer once it has lasted, so many waiters spread out.
func jitter(elapsed time.Duration) time.Duration {
	lo, hi := 20*time.Millisecond, 150*time.Millisecond
	if elapsed > 2*time.Second {
		hi = time.Second
	}
	return lo + time.Duration(rand.Int64N(int64(hi-lo)))
}

// withdraw removes c from the pending list; false if a committer took it.
func (w *Writer) withdraw(c *call) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.taken {
		return false
	}
	for i, p := range w.pending {
		if p == c {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			break
		}
	}
	return true
}

func (w *Writer) take() []*call {
	w.mu.Lock()
	defer w.mu.Unlock()
	batch := w.pending
	w.pending = nil
	for _, c := range batch {
		c.taken = true
	}
	return batch
}

// begin sets the busy handler's wait (busy.go) to what is left of the
// budget (at most maxBusyWait) and starts the transaction. The first call also registers
// the rollback hook that tells run whether the transaction is still open.
func (w *Writer) begin(deadline time.Time) error {
	wait := deadline.Sub(w.now())
	if wait > maxBusyWait {
		wait = maxBusyWait
	}
	ms := int(wait / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	ctx := context.Background()
	if !w.hooked {
		err := w.conn.Raw(func(dc any) error { return onRollback(dc, func() { w.rolledBack.Store(true) }) })
		if err != nil {
			return fmt.Errorf("watch the writer connection for rollbacks: %w", err)
		}
		w.hooked = true
	}
	if ms != w.busyMS {
		err := w.conn.Raw(func(dc any) error {
			return installBusyHandler(dc, newBusyWait(time.Duration(ms)*time.Millisecond, w.Yield))
		})
		if err != nil {
			return err
		}
		w.busyMS = ms
	}
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	w.rolledBack.Store(false)
	w.lost = nil
	return nil
}

// run executes batch inside the open transaction and commits. It returns the
// number of writes committed and sets each call's error.
//
// After each write it asks whether the transaction is still open: once
// SQLite has rolled it back, the savepoint statements would run in
// autocommit mode (SAVEPOINT opening a new transaction, RELEASE committing
// it), so the writes after the failing one would be committed while their
// callers are told they failed. Instead the whole batch fails with the
// error that ended the transaction.
func (w *Writer) run(batch []*call, deadline time.Time) int {
	ok := 0
	if len(batch) == 1 {
		c := batch[0]
		if c.err = w.call(c); c.err != nil {
			w.rollback()
			return 0
		}
		ok = 1
	} else {
		for _, c := range batch {
			if err := w.exec("SAVEPOINT w"); err != nil {
				w.abandon(batch, Wrap(err, "savepoint"))
				return 0
			}
			c.err = w.call(c)
			if w.rolledBack.Load() {
				w.abandon(batch, w.lostErr())
				return 0
			}
			if c.err != nil {
				if err := w.exec("ROLLBACK TO w"); err != nil {
					w.abandon(batch, Wrap(err, "undo a failed write"))
					return 0
				}
			} else {
				ok++
			}
			if err := w.exec("RELEASE w"); err != nil {
				w.abandon(batch, Wrap(err, "release savepoint"))
				return 0
			}
		}
		if ok == 0 {
			w.rollback()
			return 0
		}
	}
	if err := w.commit(deadline); err != nil {
		w.rollback()
		for _, c := range batch {
			if c.err == nil {
				c.err = err
			}
		}
		return 0
	}
	return ok
}

// call runs c's write function. A write that returns no error although
// SQLite rolled its transaction back (it ignored a statement's error) gets
// the rollback's cause.
func (w *Writer) call(c *call) error {
	err := c.fn(&Tx{w: w, ctx: context.WithoutCancel(c.ctx)})
	if err == nil && w.rolledBack.Load() {
		err = w.lostErr()
	}
	return err
}

// abandon rolls the transaction back (SQLite may have done so already) and
// fails every call of the batch that has no error of its own with cause:
// the writes before the failing one lose what they wrote, the writes after
// it never ran.
func (w *Writer) abandon(batch []*call, cause error) {
	w.rollback()
	undone := Wrap(cause, "write undone with its whole group commit")
	for _, c := range batch {
		if c.err == nil {
			c.err = undone
		}
	}
}

// errRolledBack is the cause of a rollback no statement reported (a read
// whose failure surfaced only while stepping its rows).
var errRolledBack = errors.New("SQLite rolled the write transaction back")

// lostErr returns what ended the transaction.
func (w *Writer) lostErr() error {
	if w.lost != nil {
		return w.lost
	}
	return errRolledBack
}

func (w *Writer) exec(query string) error {
	_, err := w.conn.ExecContext(context.Background(), query)
	return err
}

// commit commits, retrying while readers block it (in rollback-journal mode
// COMMIT needs an exclusive lock; the transaction stays open while we wait).
// A COMMIT that SQLite answered with a rollback is not retried.
func (w *Writer) commit(deadline time.Time) error {
	for {
		err := w.exec("COMMIT")
		if err == nil {
			return nil
		}
		if !IsBusy(err) || w.rolledBack.Load() || !w.now().Before(deadline) {
			return Wrap(err, "commit")
		}
		time.Sleep(jitter(0) / 4)
	}
}

func (w *Writer) rollback() {
	// An error here means no transaction is open (SQLite already rolled it
	// back, e.g. after SQLITE_FULL); nothing more to undo.
	w.exec("ROLLBACK")
}

// Tx is the handle a write function gets. Statements it runs are prepared
// once per writer and reused. Once SQLite has rolled the transaction back,
// Exec, ExecScript and Query refuse to run with an error naming the cause:
// in autocommit mode their writes would be committed on their own.
type Tx struct {
	w   *Writer
	ctx context.Context
}

// refuse returns an error when the transaction is gone.
func (t *Tx) refuse() error {
	if !t.w.rolledBack.Load() {
		return nil
	}
	return Wrap(t.w.lostErr(), "statement not run: SQLite rolled the write transaction back")
}

// note remembers err as the cause of the rollback it came with.
func (t *Tx) note(err error) error {
	if err != nil && t.w.lost == nil && t.w.rolledBack.Load() {
		t.w.lost = err
	}
	return err
}

// Context returns the context of the call this write belongs to, without its
// cancellation.
func (t *Tx) Context() context.Context { return t.ctx }

const maxCachedStmts = 256

func (t *Tx) stmt(query string) (*sql.Stmt, error) {
	if s, ok := t.w.stmts[query]; ok {
		return s, nil
	}
	s, err := t.w.conn.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	if len(t.w.stmts) >= maxCachedStmts {
		// Dynamic statements (IN lists of many sizes) would grow the cache
		// without bound; start over rather than track recency.
		for q, old := range t.w.stmts {
			old.Close()
			delete(t.w.stmts, q)
		}
	}
	t.w.stmts[query] = s
	return s, nil
}

// Exec runs one statement.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	if err := t.refuse(); err != nil {
		return nil, err
	}
	s, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	res, err := s.ExecContext(t.ctx, args...)
	return res, t.note(err)
}

// ExecScript runs several ';'-separated statements without preparing them
// (schema scripts).
func (t *Tx) ExecScript(script string) error {
	if err := t.refuse(); err != nil {
		return err
	}
	_, err := t.w.conn.ExecContext(t.ctx, script)
	return t.note(err)
}

// Query runs a query.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	return t.QueryContext(t.ctx, query, args...)
}

// QueryContext is Query with the values of ctx but never its cancellation:
// interrupting a statement can roll back the whole transaction. It makes a
// Tx a Querier.
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := t.refuse(); err != nil {
		return nil, err
	}
	s, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(context.WithoutCancel(ctx), args...)
	return rows, t.note(err)
}

// QueryRow runs a query expected to return at most one row; being a read,
// it runs even after a rollback.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row {
	s, err := t.stmt(query)
	if err != nil {
		// Surface the prepare error through Scan, like database/sql does.
		return t.w.conn.QueryRowContext(t.ctx, query, args...)
	}
	return s.QueryRowContext(t.ctx, args...)
}
