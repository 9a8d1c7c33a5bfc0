package sqlite

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SetSessionTitle sanitizes title and sets it ("" clears it) in one
// transaction. A title another session holds is a conflict, even when id
// does not exist, unless that session is a compression ancestor of id: the
// title then moves to id (IMP-15). Uniqueness is case-sensitive. It reports
// whether a row was updated.
func (s *Store) SetSessionTitle(ctx context.Context, id, title string) (bool, error) {
	t, err := sessiondb.SanitizeTitle(title)
	if err != nil {
		return false, err
	}
	updated := false
	err = s.write(ctx, "set title of "+id, func(tx *sqlitedb.Tx) error {
		updated, err = sessiondb.SetTitle(titleTx{tx}, id, t)
		return err
	})
	if err != nil {
		return false, err
	}
	return updated, nil
}

// titleTx is SetTitle's view of a write transaction.
type titleTx struct{ tx *sqlitedb.Tx }

func (t titleTx) TitleHolder(title, id string) (string, error) {
	var holder string
	err := t.tx.QueryRow("SELECT id FROM sessions WHERE title = ? AND id != ?", title, id).Scan(&holder)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return holder, err
}

func (t titleTx) CompressionParent(id string) (string, error) {
	var parent string
	err := t.tx.QueryRow(`SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
WHERE c.id = ? AND p.end_reason = 'compression' AND c.started_at >= p.ended_at`, id).Scan(&parent)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return parent, err
}

func (t titleTx) ClearTitle(holder string) error {
	_, err := t.tx.Exec("UPDATE sessions SET title = NULL WHERE id = ?", holder)
	return err
}

func (t titleTx) PutTitle(id, title string) (updated, taken bool, err error) {
	res, err := t.tx.Exec("UPDATE sessions SET title = ? WHERE id = ?", nullStr(title), id)
	if sqlitedb.IsUnique(err) {
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	n, err := res.RowsAffected()
	return n > 0, false, err
}

// GetSessionTitle returns the session's title; ok is false when the
// session is missing or untitled.
func (s *Store) GetSessionTitle(ctx context.Context, id string) (string, bool, error) {
	if !s.hasTitles() {
		return "", false, nil
	}
	var t sql.NullString
	err := s.queryRow(ctx, "SELECT title FROM sessions WHERE id = ?", id).Scan(&t)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.readErr(err, "get title of %s", id)
	}
	return t.String, t.Valid, nil
}

// GetSessionByTitle returns the session with exactly this title (binary
// comparison), else not_found.
func (s *Store) GetSessionByTitle(ctx context.Context, title string) (*sessiondb.Session, error) {
	if !s.hasTitles() {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q (this file's schema has no titles)", title)
	}
	x, err := s.q.scanSession(s.queryRow(ctx, "SELECT "+s.q.sessSel+" FROM sessions s WHERE s.title = ?", title))
	if err == sql.ErrNoRows {
		return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return nil, s.readErr(err, "get session by title %q", title)
	}
	return x, nil
}

// ResolveSessionByTitle returns the most recently started session titled
// "<title> #<anything>" (ASCII-case-insensitive, as Hermes v6), else the
// one titled exactly title, else not_found.
func (s *Store) ResolveSessionByTitle(ctx context.Context, title string) (string, error) {
	if !s.hasTitles() {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q (this file's schema has no titles)", title)
	}
	var id string
	err := s.queryRow(ctx, `SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\' ORDER BY started_at DESC LIMIT 1`, fts.EscapeLike(title)+" #%").Scan(&id)
	if err == nil {
		return id, nil
	}
	if err != sql.ErrNoRows {
		return "", s.readErr(err, "resolve title %q", title)
	}
	err = s.queryRow(ctx, "SELECT id FROM sessions WHERE title = ?", title).Scan(&id)
	if err == sql.ErrNoRows {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return "", s.readErr(err, "resolve title %q", title)
	}
	return id, nil
}

// NextTitleInLineage returns the next free title in title's lineage: the
// base (title minus one trailing " #<digits>") when nothing of the lineage
// exists, else "<base> #<max+1>".
func (s *Store) NextTitleInLineage(ctx context.Context, title string) (string, error) {
	base, _ := sessiondb.LineageBase(title)
	if !s.hasTitles() {
		return base, nil
	}
	titles, err := s.queryStrings(ctx, `SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\'`, base, fts.EscapeLike(base)+" #%")
	if err != nil {
		return "", s.readErr(err, "next title after %q", title)
	}
	return sessiondb.NextLineageTitle(base, titles), nil
}

// hasTitles reports whether the file has sessions.title: Hermes added it in
// schema 3, and a read-only open of an older file keeps its schema, so the
// title reads answer as for a store where no session has a title.
func (s *Store) hasTitles() bool { return s.si.sessCols["title"] }
