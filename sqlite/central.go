package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
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
	f         *fileConns
	closeOnce sync.Once
	closeErr  error
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
	f, err := openConns(ctx, connConfig{path: path, readOnly: o.ReadOnly, budget: o.WriteBudget, now: o.Now, log: o.Logger})
	if err != nil {
		return nil, sessiondb.Wrap("", err, "open central registry")
	}
	c := &Central{f: f}
	if err := c.migrate(ctx); err != nil {
		f.close()
		return nil, err
	}
	return c, nil
}

// migrate applies the pending migrations; read-only, it only checks that
// NanoClaw's are all there.
func (c *Central) migrate(ctx context.Context) error {
	applied, err := appliedMigrations(ctx, c.f.rp)
	if err != nil {
		return openErr(err, c.f.path, "read the migration ledger")
	}
	pending := pendingMigrations(applied)
	if len(pending) == 0 {
		return nil
	}
	if c.f.readOnly {
		for _, m := range centralMigrations[:nanoClawMigrations] {
			if !applied[m.name] {
				return sessiondb.Errorf(sessiondb.EINVALID, "open %s read-only: the file lacks migration %s; open it read-write once to migrate it", c.f.path, m.name)
			}
		}
		return nil
	}
	for _, m := range pending {
		err := c.f.write(ctx, "migrate "+c.f.path, func(tx *sqlitedb.Tx) error { return applyMigration(tx, m, c.f.now()) })
		if err != nil {
			return sessiondb.Wrap("", err, "open %s", c.f.path)
		}
	}
	return nil
}

// Close closes the file. Calling it again returns the first result.
func (c *Central) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = sessiondb.Wrap(sessiondb.EINTERNAL, c.f.close(), "close %s", c.f.path)
	})
	return c.closeErr
}

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

// now is the store's clock.
func (c *Central) now() time.Time { return c.f.now() }

// stamp is the store's now as stored.
func (c *Central) stamp() string { return sessiondb.FormatTimestamp(c.now()) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return sessiondb.FormatTimestamp(t)
}

// readTime reads a stored timestamp; NULL and forms ParseTimestamp does
// not know read as the zero time.
func readTime(s sql.NullString) time.Time {
	t, _ := sessiondb.ParseTimestamp(s.String)
	return t
}

// hasRow reports whether query finds a row.
func hasRow(ctx context.Context, q sqlitedb.Querier, query string, args ...any) (bool, error) {
	found := false
	err := sqlitedb.Each(ctx, q, query, args, func(sqlitedb.Row) error { found = true; return nil })
	return found, err
}

// mustExist returns not_found naming what when query finds no row.
func mustExist(ctx context.Context, q sqlitedb.Querier, what, id, query string, args ...any) error {
	ok, err := hasRow(ctx, q, query, args...)
	if err != nil {
		return err
	}
	if !ok {
		return sessiondb.NotFound(what, id)
	}
	return nil
}
