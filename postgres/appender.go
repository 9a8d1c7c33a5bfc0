package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessiondb/sessiondb"
)

// maxBatch caps the appends one transaction carries.
const maxBatch = 256

// appendReq is one AppendMessage waiting for its commit.
type appendReq struct {
	sessionID string
	args      []any // the INSERT's arguments after session_id
	toolCalls int64 // what the row adds to tool_call_count

	// state: 0 queued, 1 taken by a batch, 2 withdrawn by its caller.
	state atomic.Int32
	id    int64
	err   error
	done  chan struct{}
}

// appender is the group commit of appends: one goroutine takes every
// append queued at the moment and writes them in one transaction, so
// appends arriving together share a commit (and its WAL flush). A lone
// append goes straight through. Each caller returns after the commit that
// holds its row, or with the error that kept it out; an append the server
// refuses (an unknown session, a row a constraint or trigger rejects)
// fails alone, never its batch-mates (see run).
type appender struct {
	s    *Store
	reqs chan *appendReq
	stop chan struct{}
	wg   sync.WaitGroup
	// listening is whether the last append committed saw a registered
	// listener: the next append's pipeline carries the notification only
	// then (see notifyAfter).
	listening atomic.Bool
}

func newAppender(s *Store) *appender {
	a := &appender{s: s, reqs: make(chan *appendReq, 4*maxBatch), stop: make(chan struct{})}
	a.wg.Add(1)
	go a.loop()
	return a
}

func (a *appender) close() {
	close(a.stop)
	a.wg.Wait()
}

// append queues r and waits for its outcome. A caller whose ctx ends
// while r is still queued withdraws it; once a batch has taken r, the
// caller waits for that batch's commit, bounded by the write budget, so an
// append is never reported failed after it committed.
func (a *appender) append(ctx context.Context, r *appendReq) (int64, error) {
	r.done = make(chan struct{})
	select {
	case a.reqs <- r:
	case <-ctx.Done():
		return 0, a.s.classify(ctx.Err(), "append message to %s", r.sessionID)
	case <-a.stop:
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "append message to %s: store closed", r.sessionID)
	}
	select {
	case <-r.done:
		return r.id, r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(0, 2) {
			return 0, a.s.classify(ctx.Err(), "append message to %s", r.sessionID)
		}
		<-r.done
		return r.id, r.err
	}
}

func (a *appender) loop() {
	defer a.wg.Done()
	for {
		var first *appendReq
		select {
		case first = <-a.reqs:
		case <-a.stop:
			a.drain()
			return
		}
		batch := []*appendReq{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-a.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		a.run(batch)
	}
}

// drain fails what is still queued when the store closes.
func (a *appender) drain() {
	for {
		select {
		case r := <-a.reqs:
			if r.state.CompareAndSwap(0, 1) {
				r.err = sessiondb.Errorf(sessiondb.EINVALID, "append message to %s: store closed", r.sessionID)
				close(r.done)
			}
		default:
			return
		}
	}
}

const insertMessageSQL = `INSERT INTO messages (session_id, role, content, content_bytes, tool_call_id, tool_calls, tool_name, "timestamp",
    token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`

// appendOneSQL is a lone append as one statement: the row (whose session
// must exist: the foreign key) and the session's counters; it returns the
// new id and whether a listener is registered (listeningSQL).
const appendOneSQL = `WITH ins AS (` + insertMessageSQL + `),
upd AS (UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, tool_call_count = COALESCE(tool_call_count, 0) + $14
    WHERE id = $1 AND EXISTS (SELECT 1 FROM ins))
SELECT id, ` + listeningSQL + ` FROM ins`

// listeningSQL is whether some process listens for appends: read in every
// append's transaction, it holds the lock a listener's registration waits
// for (notifier.subscribe).
const listeningSQL = `EXISTS (SELECT 1 FROM sessiondb_listeners)`

// lockSessionsSQL locks the sessions a batch names, in id order, so that
// batches of different processes never deadlock, and returns those that
// exist.
const lockSessionsSQL = "SELECT id FROM sessions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE"

// countSQL bumps each session's counters once for a batch.
const countSQL = `UPDATE sessions s SET message_count = COALESCE(s.message_count, 0) + v.n, tool_call_count = COALESCE(s.tool_call_count, 0) + v.t
FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS v(id, n, t) WHERE s.id = v.id`

// notifySQL announces appends to listeners (see notify.go) in a
// transaction of its own that does not wait for its WAL flush. A
// notifying transaction holds a cluster-wide lock from its commit's start
// to its end (PostgreSQL serializes NOTIFY's queue writes: async.c,
// PreCommit_Notify), so a NOTIFY inside the append's transaction made
// every appending process of the cluster wait its turn through the
// others' WAL flushes, and their commits could not share one. Sent right
// behind the append in the same pipeline, it commits right after it, and
// costs no flush: a notification is never durable anyway. It calls
// pg_notify only while a listener is registered.
const notifySQL = `SELECT pg_notify($1, k) FROM (SELECT set_config('synchronous_commit', 'off', true)) AS c, unnest($2::text[]) AS k
WHERE ` + listeningSQL

// notifyAfter is the notification an append's pipeline carries behind
// its transaction: none while the last append saw no listener. Then an
// append is one transaction, where the notification's, even calling no
// pg_notify, cost four appending processes a tenth of their rate. The
// append's own transaction reads whether a listener is registered
// (listeningSQL); settle sends the notification after the commit when it
// saw one its pipeline did not notify. No wake is lost: see
// notifier.subscribe.
func (a *appender) notifyAfter(ids []string) []pipeStmt {
	if a.listening.Load() {
		return a.notification(ids...)
	}
	return nil
}

// settle records whether the committed append saw a listener, and when
// it did and its pipeline carried no notification (sent false), sends it
// now, in a round trip of its own.
func (a *appender) settle(ctx context.Context, saw, sent bool, ids []string) {
	a.listening.Store(saw)
	if saw && !sent {
		if err := a.s.pipeline(ctx, a.notification(ids...), nil).err(); err != nil {
			a.s.log.Warn("notify listeners of an append", "err", err)
		}
	}
}

// runOne writes a lone append: the appendOneSQL statement and, while
// listeners are registered, the notification, two transactions in one
// round trip (a pipeline).
func (a *appender) runOne(ctx context.Context, r *appendReq) {
	args := append(append([]any{r.sessionID}, r.args...), r.toolCalls)
	var saw, sent bool
	r.err = a.s.retry(ctx, "append messages", nil, func() error {
		after := a.notifyAfter([]string{r.sessionID})
		sent = after != nil
		return a.s.pipeline(ctx, []pipeStmt{{name: "sessiondb_append_one", sql: appendOneSQL, args: args, row: func(v [][]byte) error {
			if len(v) != 2 {
				return fmt.Errorf("append: the server returned %d columns, want the new id and whether a listener is registered", len(v))
			}
			saw = string(v[1]) == "t"
			return scanID(v[:1], &r.id)
		}}}, after).err()
	})
	if sqlState(r.err) == pgForeignKeyViolation {
		r.id, r.err = 0, noSession(r.sessionID)
	}
	if r.err == nil {
		a.settle(ctx, saw, sent, []string{r.sessionID})
	}
}

// noSession is the error of an append to a session that does not exist.
func noSession(id string) error {
	return sessiondb.Errorf(sessiondb.EINVALID, "append message: session %q does not exist", id)
}

// notification is the statement announcing appends to the sessions ids.
func (a *appender) notification(ids ...string) []pipeStmt {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = notifyKey(id)
	}
	return []pipeStmt{{name: "sessiondb_notify", sql: notifySQL, args: []any{a.s.channel(), keys}}}
}

// scanID reads a returned id.
func scanID(v [][]byte, id *int64) error {
	if len(v) != 1 || v[0] == nil {
		return fmt.Errorf("append: the server returned %d columns for the new id", len(v))
	}
	n, err := strconv.ParseInt(string(v[0]), 10, 64)
	*id = n
	return err
}

// run writes one batch and closes each append's done. One caller's append
// never fails another's: a row the server refuses fails alone, and the
// batch is written again without it; when a statement the batch shares
// fails (the lock on the sessions, the counters), each append is written
// again on its own, so each caller gets its own outcome. Only a failure
// that is not the server refusing the batch (a lost connection, which may
// hide a commit; the write budget spent on lost races) fails every append
// of the batch.
func (a *appender) run(batch []*appendReq) {
	live := batch[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(0, 1) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	taken := slices.Clone(live)
	defer func() {
		for _, r := range taken {
			close(r.done)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), a.s.budget+10*time.Second)
	defer cancel()
	for len(live) > 1 {
		err := a.runBatch(ctx, live)
		if err == nil {
			return
		}
		var bad *rowError
		switch {
		case Code(err) == sessiondb.EBUSY:
			// Lost races past the budget, a timeout: no append's fault.
		case errors.As(err, &bad):
			for _, r := range bad.rs {
				r.id, r.err = 0, bad.errOf(r)
			}
			live = slices.DeleteFunc(live, func(r *appendReq) bool { return slices.Contains(bad.rs, r) })
			continue
		case refused(err):
			for _, r := range live {
				a.runOne(ctx, r)
			}
			return
		}
		for _, r := range live {
			r.id, r.err = 0, err
		}
		return
	}
	if len(live) == 1 {
		a.runOne(ctx, live[0])
	}
}

// rowError is the server's refusal of rows in a batch: the appends rs,
// whose rows the batch can be written without.
type rowError struct {
	rs  []*appendReq
	err error
	// missing: rs are appends to sessions that do not exist.
	missing bool
}

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }

func (e *rowError) errOf(r *appendReq) error {
	if e.missing {
		return noSession(r.sessionID)
	}
	return sessiondb.Wrap(Code(e.err), e.err, "append message to %s", r.sessionID)
}

// refused reports a batch the server refused (an error it answered): the
// transaction was rolled back, so its appends may be written again.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// runBatch writes live, two or more appends, in one transaction and one
// round trip: it locks the sessions they name (in id order, so batches of
// different processes never deadlock), inserts the rows, bumps each
// session's counters once, reads whether a listener is registered,
// commits, and then notifies listeners of the new messages (notifyAfter). A row the server refuses ends the transaction
// with a *rowError naming it, or, when its session does not exist, every
// append to a session the lock did not find.
func (a *appender) runBatch(ctx context.Context, live []*appendReq) error {
	var sids []string
	seen := map[string]bool{}
	counts := map[string][2]int64{}
	for _, r := range live {
		if !seen[r.sessionID] {
			seen[r.sessionID] = true
			sids = append(sids, r.sessionID)
		}
		c := counts[r.sessionID]
		counts[r.sessionID] = [2]int64{c[0] + 1, c[1] + r.toolCalls}
	}
	sort.Strings(sids)
	ns, ts := make([]int64, len(sids)), make([]int64, len(sids))
	for i, id := range sids {
		ns[i], ts[i] = counts[id][0], counts[id][1]
	}
	return a.s.retry(ctx, "append messages", nil, func() error {
		have := map[string]bool{}
		stmts := []pipeStmt{{name: "sessiondb_append_lock", sql: lockSessionsSQL, args: []any{sids}, row: func(v [][]byte) error {
			have[string(v[0])] = true
			return nil
		}}}
		for _, r := range live {
			r.id, r.err = 0, nil
			stmts = append(stmts, pipeStmt{name: "sessiondb_append_row", sql: insertMessageSQL, args: append([]any{r.sessionID}, r.args...),
				row: func(v [][]byte) error { return scanID(v, &r.id) }})
		}
		var saw bool
		stmts = append(stmts, pipeStmt{name: "sessiondb_append_counts", sql: countSQL, args: []any{sids, ns, ts}},
			pipeStmt{name: "sessiondb_append_listening", sql: "SELECT " + listeningSQL, row: func(v [][]byte) error {
				saw = len(v) == 1 && string(v[0]) == "t"
				return nil
			}})
		after := a.notifyAfter(sids)
		res := a.s.pipeline(ctx, stmts, after)
		if res.err() == nil {
			a.settle(ctx, saw, after != nil, sids)
			return nil
		}
		if res.conn != nil || res.failed < 1 || res.failed > len(live) {
			return res.err()
		}
		if sqlState(res.txErr) == pgForeignKeyViolation {
			var rs []*appendReq
			for _, r := range live {
				if !have[r.sessionID] {
					rs = append(rs, r)
				}
			}
			if len(rs) > 0 {
				return &rowError{rs: rs, err: res.txErr, missing: true}
			}
		}
		if retryable(res.txErr) {
			return res.txErr
		}
		return &rowError{rs: []*appendReq{live[res.failed-1]}, err: res.txErr}
	})
}
