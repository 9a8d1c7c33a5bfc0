package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeStmt is one statement of a pipeline: prepared once per connection
// under name, run with args; row, when set, receives each row's values as
// text.
type pipeStmt struct {
	name, sql string
	args      []any
	row       func(values [][]byte) error
}

// pipeResult is what a pipeline's transaction gave.
type pipeResult struct {
	// conn is a failure that is not the server's answer to a statement
	// (the connection, the client): whether the transaction committed is
	// unknown.
	conn error
	// txErr is the server's refusal of the transaction, and failed the
	// index of the statement it refused (len of the transaction's
	// statements: its commit), -1 when none.
	txErr  error
	failed int
}

// err is the pipeline's outcome as one error.
func (r pipeResult) err() error {
	if r.conn != nil {
		return r.conn
	}
	return r.txErr
}

// pipeline runs tx as one transaction and then after as another, in one
// round trip: every statement is sent, each group closed by a Sync (which
// commits it), before any answer is read. after runs whatever became of
// tx; its failure is logged, not returned (it only carries what may be
// lost: a notification). The statements are prepared on first use on
// each connection; the store's tracer sees each.
func (s *conn) pipeline(ctx context.Context, tx, after []pipeStmt) pipeResult {
	res := pipeResult{failed: -1}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		res.conn = err
		return res
	}
	defer c.Release()
	pc := c.Conn()
	all := append(append([]pipeStmt(nil), tx...), after...)
	type encoded struct {
		name    string
		params  [][]byte
		formats []int16
	}
	enc := make([]encoded, len(all))
	tm := pc.TypeMap()
	buf := make([]byte, 0, 1024)
	for i, st := range all {
		sd, err := pc.Prepare(ctx, st.name, st.sql)
		if err != nil && i >= len(tx) && refused(err) {
			s.log.Warn("statement after a commit refused", "statement", st.name, "err", err)
			all, enc, after = all[:len(tx)], enc[:len(tx)], nil
			break
		}
		if err != nil {
			if refused(err) {
				res.txErr, res.failed = err, i
			} else {
				res.conn = err
			}
			return res
		}
		if len(sd.ParamOIDs) != len(st.args) {
			res.conn = errors.New("pipeline: " + st.name + ": argument count differs from the statement's")
			return res
		}
		e := encoded{name: sd.Name, params: make([][]byte, len(st.args)), formats: make([]int16, len(st.args))}
		for j, a := range st.args {
			oid := sd.ParamOIDs[j]
			e.formats[j] = tm.FormatCodeForOID(oid)
			// Encode appends to buf and returns nil for NULL: given nil,
			// an empty value would come back nil too, and be NULL.
			start := len(buf)
			out, err := tm.Encode(oid, e.formats[j], a, buf)
			if err != nil {
				res.conn = err
				return res
			}
			if out != nil {
				buf = out
				e.params[j] = buf[start:len(buf):len(buf)]
			}
		}
		enc[i] = e
	}
	if tr := pc.Config().Tracer; tr != nil {
		ends := make([]context.Context, len(all))
		for i, st := range all {
			ends[i] = tr.TraceQueryStart(ctx, pc, pgx.TraceQueryStartData{SQL: st.sql, Args: st.args})
		}
		defer func() {
			for i := range all {
				tr.TraceQueryEnd(ends[i], pc, pgx.TraceQueryEndData{Err: res.err()})
			}
		}()
	}

	p := pc.PgConn().StartPipeline(ctx)
	for i, e := range enc {
		p.SendQueryPrepared(e.name, e.params, e.formats, nil)
		if i == len(tx)-1 || i == len(enc)-1 {
			p.SendPipelineSync()
		}
	}
	if err := p.Flush(); err != nil {
		p.Close()
		res.conn = err
		return res
	}
	// read takes the results of stmts up to their Sync; it returns the
	// server's error and the index of the statement it refused, or a
	// failure of the connection.
	read := func(stmts []pipeStmt) (txErr error, failed int, conn error) {
		failed = -1
		for i := 0; ; {
			r, err := p.GetResults()
			if err != nil {
				if !refused(err) {
					return nil, -1, err
				}
				// The server skips the rest up to the Sync, which the
				// next result is.
				txErr, failed = err, i
				continue
			}
			switch r := r.(type) {
			case *pgconn.PipelineSync:
				return txErr, failed, nil
			case *pgconn.ResultReader:
				var rowErr error
				for r.NextRow() {
					if rowErr == nil && i < len(stmts) && stmts[i].row != nil {
						rowErr = stmts[i].row(r.Values())
					}
				}
				if _, err := r.Close(); err != nil {
					if !refused(err) {
						return nil, -1, err
					}
					txErr, failed = err, i
				} else if rowErr != nil {
					return nil, -1, rowErr
				}
				i++
			case nil:
				return nil, -1, errors.New("pipeline: the results ended before the Sync")
			}
		}
	}
	res.txErr, res.failed, res.conn = read(tx)
	if res.conn != nil {
		p.Close()
		return res
	}
	if len(after) > 0 {
		txErr, _, conn := read(after)
		if err := errors.Join(txErr, conn); err != nil {
			s.log.Warn("statement after a commit failed", "statement", after[0].name, "err", err)
		}
	}
	if err := p.Close(); err != nil && res.conn == nil && !refused(err) {
		s.log.Warn("pipeline close", "err", err)
	}
	return res
}
