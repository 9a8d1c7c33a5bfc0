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
		if t != "" {
			var holder string
			err := tx.QueryRow("SELECT id FROM sessions WHERE title = ? AND id != ?", t, id).Scan(&holder)
			switch {
			case err == sql.ErrNoRows:
			case err != nil:
				return err
			default:
				anc, err := isCompressionAncestor(tx, holder, id)
				if err != nil {
					return err
				}
				if !anc {
					return sessiondb.Errorf(sessiondb.ECONFLICT, "Title '%s' is already in use by session %s", t, holder)
				}
				if _, err := tx.Exec("UPDATE sessions SET title = NULL WHERE id = ?", holder); err != nil {
					return err
				}
			}
		}
		res, err := tx.Exec("UPDATE sessions SET title = ? WHERE id = ?", nullStr(t), id)
		if sqlitedb.IsUnique(err) {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "Title '%s' is already in use", t)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		updated = n > 0
		return err
	})
	if err != nil {
		return false, err
	}
	return updated, nil
}

// isCompressionAncestor walks up from id while each parent ended in
// compression before its child started, and reports whether it meets anc.
func isCompressionAncestor(tx *sqlitedb.Tx, anc, id string) (bool, error) {
	cur := id
	for i := 0; i < maxCompressionHops; i++ {
		var parent sql.NullString
		err := tx.QueryRow(`SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
WHERE c.id = ? AND p.end_reason = 'compression' AND c.started_at >= p.ended_at`, cur).Scan(&parent)
		if err == sql.ErrNoRows {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if parent.String == anc {
			return true, nil
		}
		cur = parent.String
	}
	return false, nil
}

// GetSessionTitle returns the session's title; ok is false when the
// session is missing or untitled.
func (s *Store) GetSessionTitle(ctx context.Context, id string) (string, bool, error) {
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
	x, err := scanSession(s.queryRow(ctx, "SELECT "+s.q.sessSel+" FROM sessions s WHERE s.title = ?", title))
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
	titles, err := s.queryStrings(ctx, `SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\'`, base, fts.EscapeLike(base)+" #%")
	if err != nil {
		return "", s.readErr(err, "next title after %q", title)
	}
	return sessiondb.NextLineageTitle(base, titles), nil
}
