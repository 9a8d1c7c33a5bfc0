package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Central is the control plane's central registry (sessiondb.Registry) in
// a PostgreSQL schema of its own, for host daemons on several machines
// sharing one registry. It keeps NanoClaw's tables and columns
// (spec/control-plane.md part A) with the same statements as the SQLite
// backend's; the unique keys and conditional updates settle races between
// processes.
type Central struct {
	*conn
	rq poolQ
}

var _ sessiondb.Registry = (*Central)(nil)

// centralMigrations is the registry's migration set.
var centralMigrations = migrationSet{dir: "migrations/central", ledger: "sessiondb_central_migrations", what: "central registry"}

// OpenCentral opens (creating or migrating) the central registry in the
// schema url and o name. Its tables clash with the history store's
// (sessions), so it needs a schema of its own.
func OpenCentral(ctx context.Context, url string, o Options) (*Central, error) {
	c, err := openConn(ctx, url, o, centralMigrations)
	if err != nil {
		return nil, err
	}
	return &Central{conn: c, rq: poolQ{c.pool}}, nil
}

// Close closes the pool.
func (c *Central) Close() error {
	c.pool.Close()
	return nil
}

// stamp is the store's now as stored.
func (c *Central) stamp() string { return sessiondb.FormatTimestamp(c.now()) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return sessiondb.FormatTimestamp(t)
}

// readTime reads a stored timestamp; NULL and unknown forms read as the
// zero time.
func readTime(s sql.NullString) time.Time {
	t, _ := sessiondb.ParseTimestamp(s.String)
	return t
}

// hasRow reports whether query finds a row.
func hasRow(ctx context.Context, q rquerier, query string, args ...any) (bool, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	found := rows.Next()
	return found, rows.Err()
}

// mustExist returns not_found naming what when query finds no row.
func mustExist(ctx context.Context, q rquerier, what, id, query string, args ...any) error {
	ok, err := hasRow(ctx, q, query, args...)
	if err != nil {
		return err
	}
	if !ok {
		return sessiondb.NotFound(what, id)
	}
	return nil
}
