package bench

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// searchFloorSQL is the least any search of an SQLite store can do for a
// query: FTS5 ranks every match by bm25 and hands out the first page of
// row ids. Hermes' search_messages and ours both rank every match (on a
// store within the search window), then read the winners' rows, snippets
// and neighbours; this reads nothing beyond the ids.
const searchFloorSQL = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?"

// searchFloorIncludes says in the output what the floor does.
const searchFloorIncludes = "bare FTS5 ranking on its own connection: " + searchFloorSQL + " (the query as the store sanitizes it, limit 20), timed right after the store's search of the same query in each pass"

// searchFloor times searchFloorSQL on a connection of its own to the
// SQLite file at path, with the query sanitized as the store sanitizes it.
type searchFloor struct {
	db   *sql.DB
	stmt *sql.Stmt
}

// openSearchFloor opens the floor's connection; nil, nil when the run's
// store is not an SQLite file.
func (b *bencher) openSearchFloor(ctx context.Context, path string) (*searchFloor, error) {
	if b.db != "" || path == "" {
		return nil, nil
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, Pragmas: []string{"PRAGMA busy_timeout = 5000"}, MaxConns: 1})
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open the search floor's connection")
	}
	stmt, err := db.PrepareContext(ctx, searchFloorSQL)
	if err != nil {
		db.Close()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "prepare the search floor's statement")
	}
	return &searchFloor{db: db, stmt: stmt}, nil
}

// run ranks q's matches and reads the first page of ids; it returns how
// many it read.
func (f *searchFloor) run(ctx context.Context, q string) (int, error) {
	rows, err := f.stmt.QueryContext(ctx, fts.Sanitize(q), searchLimit)
	if err != nil {
		return 0, sessiondb.Wrap(sessiondb.EINTERNAL, err, "search floor %q", q)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return n, sessiondb.Wrap(sessiondb.EINTERNAL, err, "search floor %q", q)
	}
	return n, nil
}

func (f *searchFloor) Close() error {
	f.stmt.Close()
	return f.db.Close()
}
