package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// SetSessionTitle sanitizes title and sets it ("" clears it) in one
// transaction. A title another session holds is a conflict, even when id
// does not exist, unless that session is a compression ancestor of id: the
// title then moves to id (IMP-15). The unique index decides races: of
// several sessions claiming one title at once, one wins and the others get
// conflict. It reports whether a row was updated.
func (s *Store) SetSessionTitle(ctx context.Context, id, title string) (bool, error) {
	t, err := sessiondb.SanitizeTitle(title)
	if err != nil {
		return false, err
	}
	updated := false
	err = s.write(ctx, "set title of "+id, func(tx pgx.Tx) error {
		updated, err = sessiondb.SetTitle(titleTx{ctx, tx}, id, t)
		return err
	})
	if err != nil {
		return false, err
	}
	return updated, nil
}

// titleTx is SetTitle's view of a write transaction.
type titleTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t titleTx) TitleHolder(title, id string) (string, error) {
	var holder string
	err := t.tx.QueryRow(t.ctx, "SELECT id FROM sessions WHERE title = $1 AND id <> $2", title, id).Scan(&holder)
	if noRows(err) {
		return "", nil
	}
	return holder, err
}

func (t titleTx) CompressionParent(id string) (string, error) {
	var parent string
	err := t.tx.QueryRow(t.ctx, `SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
WHERE c.id = $1 AND p.end_reason = 'compression' AND c.started_at >= p.ended_at`, id).Scan(&parent)
	if noRows(err) {
		return "", nil
	}
	return parent, err
}

func (t titleTx) ClearTitle(holder string) error {
	_, err := t.tx.Exec(t.ctx, "UPDATE sessions SET title = NULL WHERE id = $1", holder)
	return err
}

func (t titleTx) PutTitle(id, title string) (updated, taken bool, err error) {
	tag, err := t.tx.Exec(t.ctx, "UPDATE sessions SET title = $1 WHERE id = $2", nullStr(title), id)
	if sqlState(err) == pgUniqueViolation {
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	return tag.RowsAffected() > 0, false, nil
}

// GetSessionTitle returns the session's title; ok is false when the
// session is missing or untitled.
func (s *Store) GetSessionTitle(ctx context.Context, id string) (string, bool, error) {
	var t *string
	err := s.pool.QueryRow(ctx, "SELECT title FROM sessions WHERE id = $1", id).Scan(&t)
	if noRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.readErr(err, "get title of %s", id)
	}
	if t == nil {
		return "", false, nil
	}
	return *t, true, nil
}

// GetSessionByTitle returns the session with exactly this title, else
// not_found.
func (s *Store) GetSessionByTitle(ctx context.Context, title string) (*sessiondb.Session, error) {
	x, err := scanSession(s.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE title = $1", title))
	if noRows(err) {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return nil, s.readErr(err, "get session by title %q", title)
	}
	return x, nil
}

// variantsWhere selects titles "<$1> #…", ignoring ASCII case as SQLite's
// LIKE does, through the sessions_title_fold index: a byte-wise range on
// the folded title, then the exact LIKE.
const variantsWhere = `title IS NOT NULL
    AND sessiondb_ascii_lower(title) ~>=~ sessiondb_ascii_lower($1 || ' #')
    AND sessiondb_ascii_lower(title) ~<=~ sessiondb_ascii_lower($1 || ' #' || chr(1114111))
    AND sessiondb_ascii_lower(title) LIKE sessiondb_ascii_lower($2) ESCAPE '\'`

// ResolveSessionByTitle returns the most recently started session titled
// "<title> #<anything>" (ASCII-case-insensitive), else the one titled
// exactly title, else not_found.
func (s *Store) ResolveSessionByTitle(ctx context.Context, title string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, "SELECT id FROM sessions WHERE "+variantsWhere+" ORDER BY started_at DESC, seq LIMIT 1", title, likeTitleVariants(title)).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !noRows(err) {
		return "", s.readErr(err, "resolve title %q", title)
	}
	err = s.pool.QueryRow(ctx, "SELECT id FROM sessions WHERE title = $1", title).Scan(&id)
	if noRows(err) {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return "", s.readErr(err, "resolve title %q", title)
	}
	return id, nil
}

// NextTitleInLineage returns the next free title in title's lineage.
func (s *Store) NextTitleInLineage(ctx context.Context, title string) (string, error) {
	base, _ := sessiondb.LineageBase(title)
	titles, err := queryStrings(ctx, s.pool, "SELECT title FROM sessions WHERE title = $1 UNION ALL SELECT title FROM sessions WHERE "+variantsWhere+" AND title <> $1",
		base, likeTitleVariants(base))
	if err != nil {
		return "", s.readErr(err, "next title after %q", title)
	}
	return sessiondb.NextLineageTitle(base, titles), nil
}
