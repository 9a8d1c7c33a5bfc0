package mailbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Pragmas per open mode (contract section 3). The contract's busy_timeout
// of 5 s is lockWait, waited by sqlitedb's busy handler in sub-millisecond
// steps rather than SQLite's 1-to-100 ms ones: every hop of a round trip
// may meet the other side's commit, and SQLite's first step alone is 1 ms.
// It is installed before the pragmas run: setting journal_mode reads the
// file header and must wait out another process's commit rather than fail.
// Write locks are waited for by sqlitedb.Writer, with the same handler.
//
// Writers sync fully (synchronous=FULL, NanoClaw's setting through
// better-sqlite3, SQLite's own default): the journal is synced before its
// header is written, so a power loss mid-commit cannot leave a journal that
// rolls the file back into damage. It is set, not inherited, because the
// cgo driver's default connection string asks for NORMAL while the pure-Go
// one keeps FULL: the durability of a mailbox must not depend on the build.
var (
	pragmasRW      = []string{"PRAGMA journal_mode=DELETE", "PRAGMA synchronous=FULL"}
	pragmasRO      = []string(nil)
	pragmasAgentIn = []string{"PRAGMA mmap_size=0"}
	pragmasAgentRW = []string{"PRAGMA journal_mode=DELETE", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}
)

// lockWait is how long a mailbox statement waits for a lock the other side
// holds (the contract's busy_timeout).
const lockWait = 5 * time.Second

// noWait makes a read fail with busy at once while the other side commits,
// for reads that have a fallback: the MAX(seq) a writer reads from the
// other side's file before numbering its row (contract section 4: an
// unreadable file gives the last value seen; parity keeps seqs unique). A
// commit under way there is a row that is not yet the other side's latest,
// so numbering before it is as right as after, and waiting for it would
// put the other side's fsyncs into every send.
const noWait = -1

// rwFile is one read-write open of a mailbox file for the length of one
// operation: a single connection owned by a Writer.
type rwFile struct {
	db *sql.DB
	w  *sqlitedb.Writer
}

// openRW opens path read-write (see openConn) for a Writer.
func openRW(ctx context.Context, path string, pragmas []string, budget time.Duration) (*rwFile, error) {
	db, conn, err := openConn(ctx, path, pragmas)
	if err != nil {
		return nil, err
	}
	w := sqlitedb.NewWriter(conn)
	w.Budget = budget
	return &rwFile{db: db, w: w}, nil
}

// openConn opens path read-write on one connection. The file must exist:
// SQLite would otherwise create an empty database, and a missing mailbox
// file is a not_found.
func openConn(ctx context.Context, path string, pragmas []string) (*sql.DB, *sql.Conn, error) {
	if err := mustExist(path); err != nil {
		return nil, nil, err
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, Pragmas: pragmas, MaxConns: 1, BusyTimeout: lockWait})
	if err != nil {
		return nil, nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", path)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, sqlitedb.Wrap(err, "open %s", path)
	}
	return db, conn, nil
}

func (f *rwFile) Close() error {
	err := f.w.Close()
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// do runs fn in one write transaction.
func (f *rwFile) do(ctx context.Context, fn func(tx *sqlitedb.Tx) error) error {
	return f.w.Do(ctx, fn)
}

// openRO opens path with mode=ro on one connection whose statements wait up
// to wait for a lock (lockWait or noWait).
func openRO(path string, pragmas []string, wait time.Duration) (*sql.DB, error) {
	if err := mustExist(path); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, ReadOnly: true, Pragmas: pragmas, MaxConns: 1, BusyTimeout: wait})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", path)
	}
	return db, nil
}

// readRO runs fn on a read-only open of path (see openRO), closed after it.
// A driver error from fn is classified with the context format and args; an
// error that already carries a code is returned as it is.
func readRO(ctx context.Context, path string, pragmas []string, wait time.Duration, fn func(q queryer) error, format string, args ...any) error {
	return readOpen(ctx, path, pragmas, wait, false, fn, format, args...)
}

// readSnapshotRO is readRO with fn's reads in one read transaction (see
// snapshot).
func readSnapshotRO(ctx context.Context, path string, pragmas []string, fn func(q queryer) error, format string, args ...any) error {
	return readOpen(ctx, path, pragmas, lockWait, true, fn, format, args...)
}

func readOpen(ctx context.Context, path string, pragmas []string, wait time.Duration, snap bool, fn func(q queryer) error, format string, args ...any) error {
	db, err := openRO(path, pragmas, wait)
	if err != nil {
		return err
	}
	defer db.Close()
	if snap {
		err = snapshot(ctx, db, fn)
	} else {
		err = fn(ctxQueryer{ctx, db})
	}
	if err != nil {
		if errCode(err) == "" {
			return sqlitedb.Wrap(err, format, args...)
		}
		return err
	}
	return nil
}

func mustExist(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "%s does not exist (session not initialized?)", path)
	case err != nil:
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", path)
	case !fi.Mode().IsRegular():
		return sessiondb.Errorf(sessiondb.EINVALID, "%s is not a regular file", path)
	}
	return nil
}

// queryer is a read handle that knows the context its reads run under:
// the writer's *sqlitedb.Tx, or a ctxQueryer over a read-only open.
type queryer interface {
	sqlitedb.Querier
	Context() context.Context
}

// each runs query on q and calls fn per row (sqlitedb.Each under q's
// context).
func each(q queryer, query string, args []any, fn func(sqlitedb.Row) error) error {
	return sqlitedb.Each(q.Context(), q, query, args, fn)
}

// collect runs query on q and returns what scan makes of each row
// (sqlitedb.Append into a new list, under q's context).
func collect[T any](q queryer, query string, args []any, scan func(sqlitedb.Row) (T, error)) ([]T, error) {
	return sqlitedb.Append(q.Context(), q, query, args, nil, scan)
}

// snapshot runs fn's reads on db (a pool of one connection) in one read
// transaction: the file is locked for reading once, for all of them,
// instead of once per statement. Each lock taken is a chance to meet the
// other side's commit and wait out its fsyncs; once the read lock is held,
// it is the other side's commit that waits, for a few statements. Nothing
// that writes, or waits, may run inside fn: the other side could not
// commit until it ends. The files of attach are attached read-only to the
// connection for the read, so fn reads them in the same transaction,
// without a connection of their own, and detached after it: the caller may
// keep db open across its writes to them (a drain across its deliveries),
// and the host must not hold inbound.db open between writes (contract
// section 3).
func snapshot(ctx context.Context, db *sql.DB, fn func(q queryer) error, attach ...attachment) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for i, a := range attach {
		if err := a.to(ctx, conn); err != nil {
			detach(conn, attach[:i])
			return err
		}
	}
	defer detach(conn, attach)
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	err = fn(ctxQueryer{ctx, conn})
	// Ending a read transaction takes no lock; ROLLBACK is the one end that
	// cannot fail for want of one.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err == nil {
		err = rerr
	}
	return err
}

// inboundAlias is the schema name of inbound.db attached to a connection
// on outbound.db.
const inboundAlias = "inb"

// attachment is a file to attach read-only, as alias, to a connection.
type attachment struct{ alias, path string }

// to attaches a to conn.
func (a attachment) to(ctx context.Context, conn *sql.Conn) error {
	if err := mustExist(a.path); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS "+a.alias, sqlitedb.URI(a.path, true, false))
	return err
}

// detach detaches attached from conn. A connection that cannot detach one
// is closed instead of going back to its pool: either way the files are
// closed, and the read that used them is unaffected.
func detach(conn *sql.Conn, attached []attachment) {
	for _, a := range attached {
		if _, err := conn.ExecContext(context.Background(), "DETACH DATABASE "+a.alias); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
			return
		}
	}
}

// ctxQueryer is a *sql.DB or *sql.Conn with the context of the operation
// using it.
type ctxQueryer struct {
	ctx context.Context
	sqlitedb.Querier
}

func (q ctxQueryer) Context() context.Context { return q.ctx }

// columns returns the column names of table (empty when it does not exist).
func columns(q queryer, table string) (map[string]bool, error) {
	cols := map[string]bool{}
	err := each(q, "SELECT name FROM pragma_table_info(?)", []any{table}, func(r sqlitedb.Row) error {
		var n string
		if err := r.Scan(&n); err != nil {
			return err
		}
		cols[n] = true
		return nil
	})
	return cols, err
}

// maxSeq returns MAX(seq) of table, 0 when empty.
func maxSeq(q queryer, table string) (int64, error) {
	var m int64
	err := scanOne(q, &m, "SELECT COALESCE(MAX(seq), 0) FROM "+table)
	return m, err
}

// nextSeq returns the next seq of the wanted parity (0 even: host; 1 odd:
// agent) above m.
func nextSeq(m int64, parity int64) int64 {
	if m < 0 {
		m = 0
	}
	n := m + 1
	if n%2 != parity {
		n++
	}
	return n
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return FormatTime(t)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

const inboundCols = `id, seq, kind, timestamp, status, process_after, recurrence, series_id, tries, trigger,
 platform_id, channel_type, thread_id, content, source_session_id, on_wake`

// collectInbound runs a messages_in query selecting all of inboundCols and
// returns its rows.
func collectInbound(q queryer, query string, args ...any) ([]InboundRow, error) {
	return collect(q, query, args, func(row sqlitedb.Row) (InboundRow, error) { return scanInbound(row, true) })
}

func scanInbound(rows sqlitedb.Row, hasOnWake bool) (InboundRow, error) {
	var r InboundRow
	var seq, tries sql.NullInt64
	var status, pa, rec, series, pid, ct, tid, src sql.NullString
	var trig, onWake sql.NullInt64
	var content string
	dest := []any{&r.ID, &seq, &r.Kind, &r.Timestamp, &status, &pa, &rec, &series, &tries, &trig, &pid, &ct, &tid, &content, &src}
	if hasOnWake {
		dest = append(dest, &onWake)
	}
	if err := rows.Scan(dest...); err != nil {
		return r, err
	}
	r.Seq, r.Status, r.ProcessAfter, r.Recurrence, r.SeriesID = seq.Int64, status.String, pa.String, rec.String, series.String
	r.Tries, r.Trigger = int(tries.Int64), !trig.Valid || trig.Int64 != 0
	r.Routing = Routing{ChannelType: ct.String, PlatformID: pid.String, ThreadID: tid.String}
	r.Content, r.SourceSessionID, r.OnWake = []byte(content), src.String, onWake.Int64 != 0
	return r, nil
}

const outboundCols = `id, seq, in_reply_to, timestamp, deliver_after, recurrence, kind, platform_id, channel_type, thread_id, content`

// scanOutbound scans one row of outboundCols; extra receives the columns a
// query selects after them.
func scanOutbound(rows sqlitedb.Row, extra ...any) (OutboundRow, error) {
	var r OutboundRow
	var seq sql.NullInt64
	var irt, da, rec, pid, ct, tid sql.NullString
	var content string
	dest := append([]any{&r.ID, &seq, &irt, &r.Timestamp, &da, &rec, &r.Kind, &pid, &ct, &tid, &content}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return r, err
	}
	r.Seq, r.InReplyTo, r.DeliverAfter, r.Recurrence = seq.Int64, irt.String, da.String, rec.String
	r.Routing = Routing{ChannelType: ct.String, PlatformID: pid.String, ThreadID: tid.String}
	r.Content = []byte(content)
	return r, nil
}

// idSet returns the strings a one-column query selects.
func idSet(q queryer, query string, args ...any) (map[string]bool, error) {
	set := map[string]bool{}
	err := each(q, query, args, func(r sqlitedb.Row) error {
		var id string
		if err := r.Scan(&id); err != nil {
			return err
		}
		set[id] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// scanOne scans the row of a one-row query (an aggregate) into dst; no row
// leaves dst alone.
func scanOne(q queryer, dst any, query string, args ...any) error {
	return each(q, query, args, func(r sqlitedb.Row) error { return r.Scan(dst) })
}

// inChunks calls fn for slices of ids small enough for one IN list, with
// the matching placeholders.
func inChunks(ids []any, fn func(part []any, placeholders string) error) error {
	const chunk = 500
	for i := 0; i < len(ids); i += chunk {
		part := ids[i:min(i+chunk, len(ids))]
		if err := fn(part, strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")); err != nil {
			return err
		}
	}
	return nil
}
