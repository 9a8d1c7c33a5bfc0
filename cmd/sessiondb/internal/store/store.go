// Package store is the command line's one way to a history store: Open
// picks the backend for a target (a state.db path today; a postgres:// URL
// once that backend exists) and hands back the domain's sessiondb.Store.
// It is the only package under cmd/sessiondb that imports a backend, so a
// new backend changes this package and no command.
package store

import (
	"context"
	"log/slog"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Options are how a store is opened.
type Options struct {
	// ReadOnly opens without writing anything, not even a migration.
	ReadOnly bool
	// Synchronous is the durability of each commit, NORMAL or FULL; ""
	// is the store's default.
	Synchronous string
	// Now is the store's clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives the store's warnings; nil discards them.
	Logger *slog.Logger
}

// Open opens the history store at target, a state.db file (created when
// missing, unless ReadOnly). The store it returns is also a
// sessiondb.SQLiteMaintainer, which doctor and bench ask for with a type
// assertion, as they would of any backend.
func Open(ctx context.Context, target string, o Options) (sessiondb.Store, error) {
	st, err := sqlite.Open(ctx, target, sqlite.Options{
		ReadOnly:    o.ReadOnly,
		Synchronous: o.Synchronous,
		Now:         o.Now,
		Logger:      o.Logger,
	})
	if err != nil {
		return nil, err // the store's errors already name the path
	}
	return st, nil
}

// Driver names the database driver linked into this binary, for reports
// (doctor, bench).
const Driver = sqlitedb.DriverName
