package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Pragmas per open mode (contract section 3). busy_timeout is SQLite's own
// wait for a read lock; write locks are waited for by sqlitedb.Writer. It
// comes first: setting journal_mode reads the file header and must wait out
// another process's commit rather than fail.
var (
	pragmasRW      = []string{"PRAGMA busy_timeout=5000", "PRAGMA journal_mode=DELETE"}
	pragmasRO      = []string{"PRAGMA busy_timeout=5000"}
	pragmasAgentIn = []string{"PRAGMA busy_timeout=5000", "PRAGMA mmap_size=0"}
	pragmasAgentRW = []string{"PRAGMA busy_timeout=5000", "PRAGMA journal_mode=DELETE", "PRAGMA foreign_keys=ON"}
)

// rwFile is one read-write open of a mailbox file for the length of one
// operation: a single connection owned by a Writer.
type rwFile struct {
	db *sql.DB
	w  *sqlitedb.Writer
}

// openRW opens path read-write. The file must exist: SQLite would otherwise
// create an empty database, and a missing mailbox file is a not_found.
func openRW(ctx context.Context, path string, pragmas []string, budget time.Duration) (*rwFile, error) {
	if err := mustExist(path); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, Pragmas: pragmas, MaxConns: 1})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", path)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, classify(err, "open %s", path)
	}
	w := sqlitedb.NewWriter(conn)
	w.Budget = budget
	return &rwFile{db: db, w: w}, nil
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

// openRO opens path with mode=ro on one connection.
func openRO(path string, pragmas []string) (*sql.DB, error) {
	if err := mustExist(path); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, ReadOnly: true, Pragmas: pragmas, MaxConns: 1})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "open %s", path)
	}
	return db, nil
}

// readRO runs fn on a read-only open of path, closed after it. A driver
// error from fn is classified with the context format and args; an error
// that already carries a code is returned as it is.
func readRO(ctx context.Context, path string, pragmas []string, fn func(q queryer) error, format string, args ...any) error {
	db, err := openRO(path, pragmas)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := fn(dbQueryer{ctx, db}); err != nil {
		if errCode(err) == "" {
			return classify(err, format, args...)
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

// classify wraps a driver error with the code that fits it: busy for lock
// waits and hot-journal rollbacks by the other side (transient), internal
// for the rest (including corruption, which callers check with
// sqlitedb.IsCorrupt).
func classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	code := sessiondb.EINTERNAL
	if sqlitedb.IsBusy(err) || sqlitedb.IsReadOnlyRollback(err) {
		code = sessiondb.EBUSY
	}
	return sessiondb.Wrap(code, err, format, args...)
}

// queryer is what both *sql.DB and *sqlitedb.Tx offer for reads.
type queryer interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

type dbQueryer struct {
	ctx context.Context
	db  *sql.DB
}

func (q dbQueryer) Query(query string, args ...any) (*sql.Rows, error) {
	return q.db.QueryContext(q.ctx, query, args...)
}

// columns returns the column names of table (empty when it does not exist).
func columns(q queryer, table string) (map[string]bool, error) {
	rows, err := q.Query("SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		cols[n] = true
	}
	return cols, rows.Err()
}

// maxSeq returns MAX(seq) of table, 0 when empty.
func maxSeq(q queryer, table string) (int64, error) {
	rows, err := q.Query("SELECT COALESCE(MAX(seq), 0) FROM " + table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var m int64
	if rows.Next() {
		if err := rows.Scan(&m); err != nil {
			return 0, err
		}
	}
	return m, rows.Err()
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

// collectInbound reads every row of a messages_in query selecting all of
// inboundCols (rows is closed).
func collectInbound(rows *sql.Rows) ([]InboundRow, error) {
	defer rows.Close()
	var out []InboundRow
	for rows.Next() {
		r, err := scanInbound(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func scanInbound(rows *sql.Rows, hasOnWake bool) (InboundRow, error) {
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
func scanOutbound(rows *sql.Rows, extra ...any) (OutboundRow, error) {
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

func idSet(q queryer, query string, args ...any) (map[string]bool, error) {
	rows, err := q.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		set[id] = true
	}
	return set, rows.Err()
}

func scanOne(q queryer, dst any, query string, args ...any) error {
	rows, err := q.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dst); err != nil {
			return err
		}
	}
	return rows.Err()
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
