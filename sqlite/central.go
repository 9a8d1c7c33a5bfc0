package sqlite

import (
	"context"
	"log/slog"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/regsql"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// CentralOptions tune OpenCentral. The zero value opens read-write with
// the default write budget, the wall clock and no logging.
type CentralOptions struct {
	// ReadOnly opens with mode=ro: no schema work, every write refused
	// with invalid. The file must exist and have NanoClaw's migrations.
	ReadOnly bool
	// WriteBudget bounds the wait for the write lock; 0 means
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings (tightened permissions, WAL fallback); nil
	// discards them.
	Logger *slog.Logger
}

// Central is the control plane's central registry on one SQLite file that
// is a NanoClaw data/v2.db: NanoClaw opens what we write, and we adopt
// what NanoClaw wrote. It implements sessiondb.Registry and is safe for
// concurrent use, also by other processes.
type Central struct {
	*regsql.Registry
	f *fileConns
}

var _ sessiondb.Registry = (*Central)(nil)

// OpenCentral opens the central registry at path (spec/control-plane.md
// A1–A3), creating it (folder 0700, file 0600) in WAL mode, and applies the
// migrations its ledger lacks, NanoClaw's and ours, each in its own write
// transaction (BEGIN IMMEDIATE, re-checking the ledger, so two processes
// opening at once never apply one twice). Ledger names we do not know and
// columns we do not use are left alone. Opening a file that needs no
// migration reads the ledger and takes no write lock.
func OpenCentral(ctx context.Context, path string, o CentralOptions) (*Central, error) {
	f, err := openFile(ctx, "central registry", connConfig{path: path, readOnly: o.ReadOnly, budget: o.WriteBudget, now: o.Now, log: o.Logger}, migrateCentral)
	if err != nil {
		return nil, err
	}
	return &Central{Registry: regsql.New(registryBackend{f}), f: f}, nil
}

// migrateCentral applies the pending migrations; read-only, it only checks
// that NanoClaw's are all there.
func migrateCentral(ctx context.Context, f *fileConns) error {
	applied, err := appliedMigrations(ctx, f.rp)
	if err != nil {
		return openErr(err, f.path, "read the migration ledger")
	}
	pending := pendingMigrations(applied)
	if len(pending) == 0 {
		return nil
	}
	if f.readOnly {
		for _, m := range centralMigrations[:nanoClawMigrations] {
			if !applied[m.name] {
				return sessiondb.Errorf(sessiondb.EINVALID, "open %s read-only: the file lacks migration %s; open it read-write once to migrate it", f.path, m.name)
			}
		}
		return nil
	}
	for _, m := range pending {
		err := f.write(ctx, "migrate "+f.path, func(tx *sqlitedb.Tx) error { return applyMigration(tx, m, f.now()) })
		if err != nil {
			return sessiondb.Wrap("", err, "open %s", f.path)
		}
	}
	return nil
}

// Close closes the file. Calling it again returns the first result.
func (c *Central) Close() error { return c.f.Close() }

// Path returns the file given to OpenCentral.
func (c *Central) Path() string { return c.f.path }

// Migrations returns the ledger's rows in applied order: what `sessiondb
// admin` shows and the compatibility tests check.
func (c *Central) Migrations(ctx context.Context) ([]AppliedMigration, error) {
	out, err := sqlitedb.Append(ctx, c.f.rp, "SELECT version, name, applied FROM schema_version ORDER BY version", nil, []AppliedMigration{},
		func(r sqlitedb.Row) (AppliedMigration, error) {
			var m AppliedMigration
			err := r.Scan(&m.Version, &m.Name, &m.Applied)
			return m, err
		})
	return out, sqlitedb.Wrap(err, "read the migration ledger of %s", c.f.path)
}

// AppliedMigration is one row of the central ledger.
type AppliedMigration struct {
	Version int64  `json:"version"`
	Name    string `json:"name"`
	Applied string `json:"applied"`
}

// CentralMigrationNames lists the central ledger's names in order,
// NanoClaw's then ours.
func CentralMigrationNames() []string {
	out := make([]string, len(centralMigrations))
	for i, m := range centralMigrations {
		out[i] = m.name
	}
	return out
}

// registryBackend runs the registry's statements (internal/regsql) on the
// file: writes through its one writer (BEGIN IMMEDIATE), reads on the
// reader pool.
type registryBackend struct{ f *fileConns }

var _ regsql.Backend = registryBackend{}

func (b registryBackend) Reader() regsql.Querier { return querier{b.f.rp} }

func (b registryBackend) Read(ctx context.Context, what string, fn func(regsql.Querier) error) error {
	return b.f.read(ctx, what, func(q sqlitedb.Querier) error { return fn(querier{q}) })
}

func (b registryBackend) Write(ctx context.Context, what string, fn func(regsql.Tx) error) error {
	return b.f.write(ctx, what, func(tx *sqlitedb.Tx) error { return fn(registryTx{querier{tx}, tx}) })
}

func (b registryBackend) Code(err error) string { return sqlitedb.Code(err) }

// LockResolve has nothing to do: a write transaction holds the file's
// write lock (BEGIN IMMEDIATE) until it ends, so resolutions take turns.
func (b registryBackend) LockResolve(regsql.Tx, string) error { return nil }

func (b registryBackend) Now() time.Time { return b.f.now() }

// querier is a sqlitedb.Querier as the registry reads.
type querier struct{ q sqlitedb.Querier }

func (q querier) Each(ctx context.Context, query string, args []any, fn func(regsql.Scanner) error) error {
	return sqlitedb.Each(ctx, q.q, query, args, func(r sqlitedb.Row) error { return fn(r) })
}

// registryTx is the writer's transaction as the registry writes.
type registryTx struct {
	querier
	tx *sqlitedb.Tx
}

func (t registryTx) Context() context.Context { return t.tx.Context() }

func (t registryTx) Exec(query string, args ...any) (regsql.Result, error) {
	return t.tx.Exec(query, args...)
}
