package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Hermes v6's own read queries (spec/history-store.md; the shapes its
// hermes_state.py runs), timed on the same file beside ours, so a gain is
// measured rather than assumed. They run on a read-only pool of their own.
const (
	hermesPreview = `COALESCE((SELECT SUBSTR(REPLACE(REPLACE(m.content, X'0A', ' '), X'0D', ' '), 1, 63) FROM messages m
    WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1), '') AS _preview_raw`
	hermesLastActive = `COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = s.id), s.started_at) AS last_active`
	// hermesChainStep is one hop of v6's compression-tip projection, run
	// from Python for every compressed row of a listed page.
	hermesChainStep = `SELECT id FROM sessions WHERE parent_session_id = ?
    AND started_at >= (SELECT ended_at FROM sessions WHERE id = ? AND end_reason = 'compression')
    ORDER BY started_at DESC LIMIT 1`
	hermesGetMessages = `SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id`
	// hermesNewestLastPage is how a newer Hermes reads the latest page
	// (get_messages(latest=True) on a file without its active column).
	hermesNewestLastPage = `SELECT * FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT ?`
	hermesSearch         = `SELECT m.id, m.session_id, m.role, snippet(messages_fts, 0, '>>>', '<<<', '...', 40) AS snippet,
    m.content, m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started
FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id
WHERE messages_fts MATCH ? ORDER BY rank LIMIT ? OFFSET ?`
	hermesContext = `SELECT role, content FROM messages WHERE session_id = ? AND id >= ? - 1 AND id <= ? + 1 ORDER BY id`
)

// drain reads every row of q and every column of each, as Python's
// fetchall does, and returns the rows' first columns as strings (for the
// ids a caller needs) and how many rows there were.
func drain(ctx context.Context, db *sql.DB, q string, args ...any) ([][]any, error) {
	var out [][]any
	err := sqlitedb.Each(ctx, db, q, args, func(r sqlitedb.Row) error {
		v, err := sqlitedb.Values(r)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// hermesList is v6's list_sessions_rich: the page with preview and last
// activity computed per row by the SQL, then, per compressed row, the
// chain walked hop by hop and the tip read.
func hermesList(ctx context.Context, db *sql.DB, source string, limit, offset int) (int, error) {
	q := "SELECT s.*, " + hermesPreview + ", " + hermesLastActive + " FROM sessions s WHERE s.parent_session_id IS NULL"
	args := []any{}
	if source != "" {
		q += " AND s.source = ?"
		args = append(args, source)
	}
	q += " ORDER BY s.started_at DESC LIMIT ? OFFSET ?"
	rows, err := drain(ctx, db, q, append(args, limit, offset)...)
	if err != nil {
		return 0, err
	}
	endReason := -1
	cols, err := columnsOf(ctx, db, "sessions")
	if err != nil {
		return 0, err
	}
	for i, c := range cols {
		if c == "end_reason" {
			endReason = i
		}
	}
	for _, r := range rows {
		if endReason < 0 || fmt.Sprint(r[endReason]) != "compression" {
			continue
		}
		cur := fmt.Sprint(r[0])
		for range maxHops {
			next, err := drain(ctx, db, hermesChainStep, cur, cur)
			if err != nil {
				return 0, err
			}
			if len(next) == 0 {
				break
			}
			cur = fmt.Sprint(next[0][0])
		}
		if _, err := drain(ctx, db, "SELECT * FROM sessions WHERE id = ?", cur); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}

// maxHops is v6's bound on a compression chain walk.
const maxHops = 100

func columnsOf(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	return sqlitedb.Append(ctx, db, "SELECT name FROM pragma_table_info(?) ORDER BY cid", []any{table}, nil, sqlitedb.Value[string])
}

// hermesPhase times Hermes v6's listing, transcript and search queries on
// the same file.
func (gr *grower) hermesPhase(ctx context.Context, res *growthStep) error {
	gr.p.phase("Hermes v6 query shapes")
	db, err := sqlitedb.Open(sqlitedb.Config{Path: gr.path, ReadOnly: true, Pragmas: []string{"PRAGMA busy_timeout=5000"}})
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "open %s for Hermes' queries", gr.path)
	}
	defer db.Close()
	res.Hermes = map[string]timing{}
	ls, err := gr.listings(ctx, res)
	if err != nil {
		return err
	}
	for _, l := range ls {
		for _, at := range []struct {
			name   string
			offset int
		}{{"_first", 0}, {"_deep", l.total / 2}} {
			t, err := gr.timed(listRuns, func() (int, error) { return hermesList(ctx, db, l.source, listLimit, at.offset) })
			if err != nil {
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "Hermes' session listing")
			}
			res.Hermes["list"+l.suffix+at.name] = t
		}
	}
	long := growthID(0)
	t, err := gr.timed(3, func() (int, error) {
		rows, err := drain(ctx, db, hermesGetMessages, long)
		return len(rows), err
	})
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "Hermes' get_messages")
	}
	// v6 has no page read: a transcript's last page is the whole session.
	res.Hermes["get_messages"] = t
	if t, err = gr.timed(pageRuns, func() (int, error) {
		rows, err := drain(ctx, db, hermesNewestLastPage, long, pageLimit)
		return len(rows), err
	}); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "newer Hermes' last page")
	}
	res.Hermes["newest_last_page"] = t
	// One timed pass, right after ours warmed the same pages: ranking
	// every match, a common word costs seconds at ten million messages.
	var all []float64
	for pass := 1; pass <= 1; pass++ {
		for _, q := range gr.queries {
			match := fts.Sanitize(q.Q)
			t := gr.cfg.now()
			hits, err := drain(ctx, db, hermesSearch, match, searchLimit, 0)
			if err != nil && !sqlitedb.IsQueryError(err) { // v6 returns [] on a query FTS5 refuses
				return sessiondb.Wrap(sessiondb.EINTERNAL, err, "Hermes' search %q", q.Q)
			}
			for _, h := range hits {
				id, _ := strconv.ParseInt(fmt.Sprint(h[0]), 10, 64)
				if _, err := drain(ctx, db, hermesContext, h[1], id, id); err != nil {
					return sessiondb.Wrap(sessiondb.EINTERNAL, err, "Hermes' search context")
				}
			}
			if pass > 0 {
				all = append(all, ms(gr.since(t)))
			}
		}
	}
	res.Hermes["search"] = timing{P50MS: round(percentile(all, 0.5), 3), P95MS: round(percentile(all, 0.95), 3), MaxMS: round(percentile(all, 1), 3), Rows: len(gr.queries)}
	return nil
}

// commandsPhase runs the read commands a person runs on a big store as
// child processes of the sessiondb binary and records the peak memory of
// each: listings, the long session's transcript whole and its last page,
// a search, stats and the long session's export.
func (gr *grower) commandsPhase(ctx context.Context, res *growthStep) error {
	exe := gr.g.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "find the sessiondb binary for the read commands")
		}
	}
	total, err := gr.topLevel(ctx, "")
	if err != nil {
		return err
	}
	long := growthID(0)
	cmds := []struct {
		name string
		args []string
	}{
		{"sessions", []string{"sessions"}},
		{"sessions_deep", []string{"sessions", "--offset", strconv.Itoa(total / 2)}},
		{"sessions_source", []string{"sessions", "--source", listSource}},
		{"show_long", []string{"show", long}},
		{"show_long_json", []string{"--json", "show", long}},
		{"show_long_last", []string{"show", long, "--last", strconv.Itoa(pageLimit)}},
		{"search", []string{"search", "docker container"}},
		{"stats", []string{"stats"}},
		{"export_long", []string{"export", long}},
	}
	gr.p.phase("read commands: %d child processes", len(cmds))
	res.Commands = map[string]commandUsage{}
	for _, c := range cmds {
		rep, err := measureCommand(ctx, exe, append([]string{exe, "--db", gr.path}, c.args...))
		if err != nil {
			return sessiondb.Wrap("", err, "read command")
		}
		res.Commands[c.name] = commandUsage{Args: c.args, MS: rep.MS, PeakMB: rep.PeakMB}
		res.ReadPeakMB = max(res.ReadPeakMB, rep.PeakMB)
	}
	return nil
}
