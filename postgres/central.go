package postgres

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/sessiondb/sessiondb/internal/regsql"

	"github.com/sessiondb/sessiondb"
)

// Central is the control plane's central registry (sessiondb.Registry) in
// a PostgreSQL schema of its own, for host daemons on several machines
// sharing one registry. It keeps NanoClaw's tables and columns
// (spec/control-plane.md part A) with the statements the SQLite backend
// runs (internal/regsql); the unique keys, conditional updates and an
// advisory lock per session lookup settle races between processes.
type Central struct {
	*conn
	*regsql.Registry
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
	return &Central{conn: c, Registry: regsql.New(registryBackend{c}), rq: poolQ{c.pool}}, nil
}

// Close closes the pool.
func (c *Central) Close() error {
	c.pool.Close()
	return nil
}

// stamp is the store's now as stored.
func (c *Central) stamp() string { return sessiondb.FormatTimestamp(c.now()) }

// writeTx runs fn in one write transaction (retried as every write is).
func (c *Central) writeTx(ctx context.Context, what string, fn func(tx *ctxTx) error) error {
	return c.write(ctx, what, func(tx pgx.Tx) error { return fn(&ctxTx{ctx: ctx, tx: tx}) })
}
