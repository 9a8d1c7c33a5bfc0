package sqlite

import (
	"context"
	"log/slog"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/regsql"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SubagentOptions tune OpenSubagents. The zero value opens read-write with
// the default write budget, the wall clock and no logging.
type SubagentOptions struct {
	// WriteBudget bounds the wait for the write lock; 0 means
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// Subagents is janebot's subagent store (spec/control-plane.md part B) on
// its state.sqlite: janebot opens what we write and we open what janebot
// wrote. It implements sessiondb.SubagentService with the statements the
// PostgreSQL backend runs too (internal/regsql); the caller owns the
// handle (no process singleton).
type Subagents struct {
	*regsql.Subagents
	f *fileConns
}

var _ sessiondb.SubagentService = (*Subagents)(nil)

// janebot's ledger: version-keyed, epoch-millisecond stamps.
const ddlSubagentLedger = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at INTEGER NOT NULL
);`

const ddlSubagentSessions = `CREATE TABLE IF NOT EXISTS subagent_sessions (
  id TEXT PRIMARY KEY,
  thread_key TEXT NOT NULL UNIQUE,
  channel_id TEXT NOT NULL,
  thread_ts TEXT NOT NULL,
  sandbox_name TEXT NOT NULL,
  pi_session_file TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('idle', 'running', 'error')),
  running_job_id TEXT,
  last_job_id TEXT,
  last_error TEXT,
  turns INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_subagent_sessions_updated_at ON subagent_sessions(updated_at);`

// subagentMigration is one of janebot's versions.
type subagentMigration struct {
	version     int64
	description string
	up          string
}

// subagentMigrations are the versions we know. Version 2 lived in janebot
// for five hours (it renamed sprite_name); files from then have it in the
// ledger. We apply it only to a file that still has sprite_name, so a file
// we create carries janebot's ledger exactly: version 1.
var subagentMigrations = []subagentMigration{
	{1, "Create subagent sessions table", ddlSubagentSessions},
	{2, "Rename sprite_name column to sandbox_name", "ALTER TABLE subagent_sessions RENAME COLUMN sprite_name TO sandbox_name"},
}

// OpenSubagents opens janebot's store at path (parent created 0700, file
// 0600, WAL, synchronous NORMAL, foreign keys on, readers wait 5 s) and
// applies what its ledger lacks: version 1 in a BEGIN IMMEDIATE
// transaction that re-reads the ledger, so two processes starting together
// never both apply it; versions above the highest we know are left alone.
// A file janebot's first release wrote (column sprite_name) is healed to
// sandbox_name as janebot's short-lived version 2 did. Opening a file that
// needs nothing takes no write lock.
func OpenSubagents(ctx context.Context, path string, o SubagentOptions) (*Subagents, error) {
	f, err := openFile(ctx, "subagent store", connConfig{path: path, budget: o.WriteBudget, now: o.Now, log: o.Logger}, migrateSubagents)
	if err != nil {
		return nil, err
	}
	return &Subagents{Subagents: regsql.NewSubagents(registryBackend{f}), f: f}, nil
}

// migrateSubagents applies what janebot's ledger lacks (see OpenSubagents).
func migrateSubagents(ctx context.Context, f *fileConns) error {
	applied, needsRename, err := subagentSchemaState(ctx, f.rp)
	if err != nil {
		return openErr(err, f.path, "read the migration ledger")
	}
	if applied[1] && !needsRename {
		return nil
	}
	err = f.write(ctx, "migrate "+f.path, func(tx *sqlitedb.Tx) error {
		if err := tx.ExecScript(ddlSubagentLedger); err != nil {
			return err
		}
		applied, needsRename, err := subagentSchemaState(tx.Context(), tx)
		if err != nil {
			return err
		}
		now := f.now().UnixMilli()
		for _, m := range subagentMigrations {
			switch {
			case m.version == 1 && applied[1]:
				continue
			case m.version == 2 && !needsRename:
				continue
			}
			if err := tx.ExecScript(m.up); err != nil {
				return err
			}
			if m.version == 1 {
				// A table version 1 found already there (created
				// IF NOT EXISTS) may be the first release's.
				if _, needsRename, err = subagentSchemaState(tx.Context(), tx); err != nil {
					return err
				}
			}
			if applied[m.version] {
				continue
			}
			if _, err := tx.Exec("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)", m.version, m.description, now); err != nil {
				return err
			}
		}
		return nil
	})
	return sessiondb.Wrap("", err, "open %s", f.path)
}

// subagentSchemaState reads the applied versions and whether the table
// still has janebot's first column name.
func subagentSchemaState(ctx context.Context, q sqlitedb.Querier) (map[int64]bool, bool, error) {
	applied := map[int64]bool{}
	ledger, err := tableColumns(ctx, q, "schema_migrations")
	if err != nil {
		return nil, false, err
	}
	if ledger["version"] {
		if applied, err = valueSet[int64](ctx, q, "SELECT version FROM schema_migrations"); err != nil {
			return nil, false, err
		}
	}
	cols, err := tableColumns(ctx, q, "subagent_sessions")
	if err != nil {
		return nil, false, err
	}
	return applied, cols["sprite_name"] && !cols["sandbox_name"], nil
}

// Close closes the file. Calling it again returns the first result.
func (s *Subagents) Close() error { return s.f.Close() }

// Path returns the file given to OpenSubagents.
func (s *Subagents) Path() string { return s.f.path }
