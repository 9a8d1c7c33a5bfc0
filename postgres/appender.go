package postgres

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
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

// appendOneSQL is a lone append as one statement, so one round trip and
// one commit: the row (whose session must exist: the foreign key), the
// session's counters, and the notification, sent at the commit.
const appendOneSQL = `WITH ins AS (` + insertMessageSQL + `),
upd AS (UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, tool_call_count = COALESCE(tool_call_count, 0) + $14
    WHERE id = $1 AND EXISTS (SELECT 1 FROM ins))
SELECT ins.id FROM ins, LATERAL (SELECT pg_notify($15, $16)) n`

// runOne writes a lone append with appendOneSQL.
func (a *appender) runOne(ctx context.Context, r *appendReq) {
	args := append(append([]any{r.sessionID}, r.args...), r.toolCalls, a.s.channel(), notifyKey(r.sessionID))
	r.err = a.s.retry(ctx, "append messages", nil, func() error {
		return a.s.pool.QueryRow(ctx, appendOneSQL, args...).Scan(&r.id)
	})
	if sqlState(r.err) == pgForeignKeyViolation {
		r.id, r.err = 0, sessiondb.Errorf(sessiondb.EINVALID, "append message: session %q does not exist", r.sessionID)
	}
}

// run writes one batch and closes each append's done. One caller's append
// never fails another's: a row the server refuses fails alone, and the
// batch is written again without it; when a statement the batch shares
// fails (the lock on the sessions, the counters, the notification), each
// append is written again on its own, so each caller gets its own
// outcome. Only a failure that is not the server refusing the batch (a
// lost connection, which may hide a commit; the write budget spent on
// lost races) fails every append of the batch.
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
			bad.r.id, bad.r.err = 0, a.s.classify(bad.err, "append message to %s", bad.r.sessionID)
			live = slices.DeleteFunc(live, func(r *appendReq) bool { return r == bad.r })
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
	a.runOne(ctx, live[0])
}

// rowError is the server's refusal of one append's row in a batch: the
// batch can be written without it.
type rowError struct {
	r   *appendReq
	err error
}

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }

// refused reports a batch the server refused (an error it answered): the
// transaction was rolled back, so its appends may be written again.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// runBatch writes live, two or more appends, in one transaction: it locks
// the sessions they name (in id order, so batches of different processes
// never deadlock), inserts the rows of those that exist, bumps each
// session's counters once, and notifies listeners of the new messages at
// commit. An append to an unknown session gets its error and is left
// out; a row the server refuses ends the transaction with a *rowError.
func (a *appender) runBatch(ctx context.Context, live []*appendReq) error {
	var sids []string
	seen := map[string]bool{}
	for _, r := range live {
		if !seen[r.sessionID] {
			seen[r.sessionID] = true
			sids = append(sids, r.sessionID)
		}
	}
	sort.Strings(sids)
	return a.s.write(ctx, "append messages", func(tx pgx.Tx) error {
		for _, r := range live {
			r.id, r.err = 0, nil
		}
		exists, err := queryStrings(ctx, tx, "SELECT id FROM sessions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE", sids)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, id := range exists {
			have[id] = true
		}
		b := &pgx.Batch{}
		var rows []*appendReq
		counts := map[string][2]int64{}
		for _, r := range live {
			if !have[r.sessionID] {
				r.err = sessiondb.Errorf(sessiondb.EINVALID, "append message: session %q does not exist", r.sessionID)
				continue
			}
			rows = append(rows, r)
			b.Queue(insertMessageSQL, append([]any{r.sessionID}, r.args...)...)
			c := counts[r.sessionID]
			counts[r.sessionID] = [2]int64{c[0] + 1, c[1] + r.toolCalls}
		}
		if len(rows) == 0 {
			return nil
		}
		var ids, keys []string
		var ns, ts []int64
		for _, id := range exists {
			if c, ok := counts[id]; ok {
				ids, ns, ts = append(ids, id), append(ns, c[0]), append(ts, c[1])
				keys = append(keys, notifyKey(id))
			}
		}
		b.Queue(`UPDATE sessions s SET message_count = COALESCE(s.message_count, 0) + v.n, tool_call_count = COALESCE(s.tool_call_count, 0) + v.t
FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS v(id, n, t) WHERE s.id = v.id`, ids, ns, ts)
		b.Queue("SELECT pg_notify($1, x) FROM unnest($2::text[]) AS x", a.s.channel(), keys)
		br := tx.SendBatch(ctx, b)
		for _, r := range rows {
			if err := br.QueryRow().Scan(&r.id); err != nil {
				br.Close()
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					return &rowError{r: r, err: err}
				}
				return err
			}
		}
		return br.Close()
	})
}
