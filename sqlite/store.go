// Package sqlite implements the sessiondb history store on one SQLite file
// that is a Hermes Agent state.db at schema version 6.
package sqlite

import (
	"context"
	"log/slog"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Options tune Open. The zero value opens read-write with synchronous=NORMAL,
// the default write budget, the wall clock and no logging.
type Options struct {
	// ReadOnly opens the file with mode=ro: no pragmas that write, no schema
	// work. Reads and search work; writes fail with code invalid.
	ReadOnly bool
	// Synchronous is "NORMAL" (default) or "FULL".
	Synchronous string
	// WriteBudget bounds the wait for the write lock; 0 means
	// sqlitedb.DefaultWriteBudget.
	WriteBudget time.Duration
	// Now is the clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives warnings (tightened permissions, WAL fallback, bad
	// tool_calls JSON); nil discards them.
	Logger *slog.Logger
}

// Store is the history store on one SQLite file. It is safe for concurrent
// use.
type Store struct {
	path string
	opts Options
}

var _ sessiondb.Store = (*Store)(nil)

// Open opens (creating or migrating as needed) the state.db at path.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	return nil, notImplemented()
}

// Close runs one PASSIVE checkpoint and closes the file.
func (s *Store) Close() error { return nil }

// Path returns the database file path given to Open.
func (s *Store) Path() string { return s.path }
