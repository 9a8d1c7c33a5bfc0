package bench

import (
	"context"
	"encoding/json"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// rawPragmas are the per-connection settings of the store's writer
// connection, so the bare loop pays the same durability and journal costs.
func rawPragmas(synchronous string) []string {
	return []string{
		"PRAGMA foreign_keys = ON",
		"PRAGMA journal_size_limit = 67108864",
		"PRAGMA busy_timeout = 5000",
		"PRAGMA journal_mode = WAL",
		"PRAGMA synchronous = " + synchronous,
	}
}

// The raw loop's statements: the messages row (its FTS row comes from the
// schema's trigger, as in the store) and the session counters.
const (
	rawInsert = `INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	rawUpdate = `UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?`
)

// rawPhase appends every workload message through a bare database/sql loop
// on one connection: BEGIN IMMEDIATE, INSERT, UPDATE, COMMIT per message,
// with prepared statements, on a fresh file that the store created (so the
// schema, triggers and indexes are the store's). It is the floor the store's
// AppendMessage is compared against.
func (b *bencher) rawPhase(ctx context.Context) (*rawResult, error) {
	st, path, err := b.open(ctx, "raw")
	if err != nil {
		return nil, err
	}
	defer b.remove(path)
	err = b.createSessions(ctx, st)
	cli.CloseInto(&err, st, "close the raw store")
	if err != nil {
		return nil, err
	}

	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, Pragmas: rawPragmas(b.cfg.synchronous), MaxConns: 1})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open the raw store")
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "raw connection")
	}
	defer conn.Close()
	ins, err := conn.PrepareContext(ctx, rawInsert)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "prepare the raw insert")
	}
	defer ins.Close()
	upd, err := conn.PrepareContext(ctx, rawUpdate)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "prepare the raw update")
	}
	defer upd.Close()

	msgs := b.wl.messages
	n := len(msgs)
	b.p.phase("raw append: %d messages, bare database/sql loop", n)
	bar := b.p.counter("raw append", n, "messages")
	b.settle()
	dt := newDecileTimer(n, b.cfg.now)
	for i := range msgs {
		m := &msgs[i]
		// Encoding tool_calls is work the store must do too.
		var calls any
		if len(m.ToolCalls) > 0 {
			j, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "encode tool_calls")
			}
			calls = string(j)
		}
		ts := sessiondb.EpochSeconds(b.cfg.now())
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "raw begin")
		}
		if _, err := ins.ExecContext(ctx, m.SessionID, m.Role, m.Content, m.ToolCallID, calls, m.ToolName, ts, nil, nil, nil, nil, nil); err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "raw insert seq %d", m.Seq)
		}
		if _, err := upd.ExecContext(ctx, len(m.ToolCalls), m.SessionID); err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "raw update seq %d", m.Seq)
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "raw commit seq %d", m.Seq)
		}
		dt.tick(i + 1)
		bar.Set(int64(i + 1))
	}
	took, byDecile := dt.finish()
	bar.Done()
	b.p.done("raw append", n, took)
	var stored int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&stored); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "count raw messages")
	}
	if stored != n {
		return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "raw loop stored %d messages, expected %d", stored, n)
	}
	return &rawResult{Append: appendResult{Messages: n, Seconds: round(took.Seconds(), 3), MsgsPerS: rate(n, took), MsgsPerSByDecile: byDecile}}, nil
}
