package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// richExtra is the preview source (first 63 code points of the first user
// message with content, in insertion order, IMP-1) and the last activity
// appended to the session columns. The session's ids come from the index
// and are walked in id order, so the walk stops at the first user message
// instead of sorting the session's rows. Last comes the archived flag of a
// newer Hermes (0 on a file without it).
func (s *Store) richExtra() string {
	archived := "0"
	if s.q.archived != "" {
		archived = s.q.archived
	}
	return `, COALESCE((SELECT substr(m.content, 1, 63) FROM messages m
        WHERE m.id IN (SELECT id FROM messages WHERE session_id = s.id) AND m.role = 'user' AND m.content IS NOT NULL` + s.q.visible + `
        ORDER BY m.id LIMIT 1), ''),
    COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id` + s.q.visible + `), s.started_at), ` + archived
}

func (s *Store) scanRich(sc scanner) (*sessiondb.RichSession, error) {
	var raw string
	var last sql.NullFloat64
	var archived bool
	x, err := scanSession(sc, &raw, &last, &archived)
	if err != nil {
		return nil, err
	}
	return &sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last.Float64, Archived: archived}, nil
}

// ListSessionsRich lists sessions newest first with their preview and last
// activity (spec 5.2). Without IncludeChildren only top-level sessions are
// listed, and a root that ended in compression shows its chain's tip
// (unless NoProjection), keeping its own started_at.
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	limit, offset := pageSize(f.Limit), f.Offset
	var where []string
	var args []any
	if !f.IncludeChildren {
		where = append(where, "s.parent_session_id IS NULL")
	}
	if s.q.archived != "" && !f.IncludeArchived {
		// Hidden as Hermes' own listing hides them (_session_filter_where).
		where = append(where, "NOT "+s.q.archived)
	}
	if f.Source != "" {
		where = append(where, "s.source = ?")
		args = append(args, f.Source)
	}
	if len(f.ExcludeSources) > 0 {
		where = append(where, "s.source NOT IN ("+placeholders(len(f.ExcludeSources))+")")
		for _, x := range f.ExcludeSources {
			args = append(args, x)
		}
	}
	// The page is cut first, so preview and last activity are computed for
	// its rows only, not for every session before sorting.
	// The page holds rowids only, so the sort handles no row bodies (system
	// prompts can be large). Ties in started_at keep the order of the
	// started_at index (rowid).
	page := "SELECT s.rowid AS rid FROM sessions s"
	if len(where) > 0 {
		page += " WHERE " + strings.Join(where, " AND ")
	}
	page += " ORDER BY s.started_at DESC, s.rowid LIMIT ? OFFSET ?"
	q := "SELECT " + s.q.sessSel + s.richExtra() + " FROM (" + page + ") p JOIN sessions s ON s.rowid = p.rid ORDER BY s.started_at DESC, s.rowid"
	args = append(args, limit, offset)
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.RichSession{}, func(row sqlitedb.Row) (sessiondb.RichSession, error) {
		r, err := s.scanRich(row)
		if err != nil {
			return sessiondb.RichSession{}, err
		}
		return *r, nil
	})
	if err != nil {
		return nil, s.readErr(err, "list sessions")
	}
	if f.NoProjection || f.IncludeChildren {
		return out, nil
	}
	for i := range out {
		r := &out[i]
		if r.EndReason == nil || *r.EndReason != "compression" {
			continue
		}
		tip, err := s.CompressionTip(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if tip == r.ID {
			continue
		}
		t, err := s.scanRich(s.queryRow(ctx, "SELECT "+s.q.sessSel+s.richExtra()+" FROM sessions s WHERE s.id = ?", tip))
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, s.readErr(err, "list sessions: tip of %s", r.ID)
		}
		root := r.ID
		r.ID, r.EndedAt, r.EndReason = t.ID, t.EndedAt, t.EndReason
		r.MessageCount, r.ToolCallCount, r.Title = t.MessageCount, t.ToolCallCount, t.Title
		r.LastActive, r.Preview, r.Model, r.SystemPrompt = t.LastActive, t.Preview, t.Model, t.SystemPrompt
		r.LineageRootID = root
	}
	return out, nil
}
