package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// richExtra is the preview source (the first code points of the first
// user message with content, in insertion order) and the last activity,
// appended to the session columns of alias s.
const richExtra = `, COALESCE((SELECT left(m.content, ` + "63" + `) FROM messages m
        WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.id LIMIT 1), ''),
    COALESCE((SELECT max(m."timestamp") FROM messages m WHERE m.session_id = s.id), s.started_at)`

func scanRich(r pgx.Row) (*sessiondb.RichSession, error) {
	var raw string
	var last float64
	x, err := scanSession(r, &raw, &last)
	if err != nil {
		return nil, err
	}
	return &sessiondb.RichSession{Session: *x, Preview: sessiondb.Preview(raw), LastActive: last}, nil
}

// ListSessionsRich lists sessions newest first with their preview and last
// activity (spec 5.2), projecting compression chains onto their roots.
func (s *Store) ListSessionsRich(ctx context.Context, f sessiondb.RichFilter) ([]sessiondb.RichSession, error) {
	if err := f.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "list sessions")
	}
	var where []string
	args := []any{pageSize(f.Limit), f.Offset}
	if !f.IncludeChildren {
		where = append(where, "parent_session_id IS NULL")
	}
	if f.Source != "" {
		args = append(args, f.Source)
		where = append(where, "source = $"+strconv.Itoa(len(args)))
	}
	if len(f.ExcludeSources) > 0 {
		args = append(args, f.ExcludeSources)
		where = append(where, "source <> ALL($"+strconv.Itoa(len(args))+")")
	}
	// The page is cut first, on the listing index alone, so previews and
	// last activity are computed for its rows only.
	page := "SELECT id, started_at, seq FROM sessions"
	if len(where) > 0 {
		page += " WHERE " + strings.Join(where, " AND ")
	}
	page += " ORDER BY started_at DESC, seq LIMIT $1 OFFSET $2"
	q := "SELECT " + sessionColumnsOf("s") + richExtra + " FROM (" + page + ") p JOIN sessions s ON s.id = p.id ORDER BY p.started_at DESC, p.seq"
	out := []sessiondb.RichSession{}
	err := each(ctx, s.pool, q, args, func(r pgx.Rows) error {
		x, err := scanRich(r)
		if err != nil {
			return err
		}
		out = append(out, *x)
		return nil
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
		t, err := scanRich(s.pool.QueryRow(ctx, "SELECT "+sessionColumnsOf("s")+richExtra+" FROM sessions s WHERE s.id = $1", tip))
		if noRows(err) {
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
