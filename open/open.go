// Package open is the library's one way to a store: History (and Central,
// Subagents for the control plane) picks the backend from the location, a
// file path (the sqlite backend) or a postgres:// URL (the postgres
// backend), so a program moves from the embedded default to a server by
// changing one string.
//
//	st, err := open.History(ctx, os.Getenv("SESSIONDB_DATABASE_URL"), open.Options{})
//
// It lives apart from the root package, which imports only the standard
// library, and apart from the backends, which know nothing of each other.
package open

import (
	"context"
	"errors"
	"github.com/jackc/pgx/v5"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Options are how a store is opened. The zero value opens read-write,
// creating the store when missing.
type Options struct {
	// ReadOnly opens without writing anything, not even a migration.
	ReadOnly bool
	// MustExist refuses (not_found) a location that holds no store yet
	// instead of creating one: no file is made, no schema is created.
	MustExist bool
	// Synchronous is the durability of each SQLite commit, NORMAL or FULL;
	// "" is the default. PostgreSQL commits durably as the server is set.
	Synchronous string
	// Now is the store's clock; nil means time.Now.
	Now sessiondb.Clock
	// Logger receives the store's warnings; nil discards them.
	Logger *slog.Logger
	// SearchWindowMessages and SearchRecentMessages are
	// sqlite.Options': up to how many messages a SQLite store's search
	// ranks every match, and how many of the newest it ranks through the
	// recent index above that; 0 is the default. PostgreSQL ignores them.
	SearchWindowMessages int
	SearchRecentMessages int
	// KeepSearchIndex is sqlite.Options.KeepSearchIndex: a ReadOnly SQLite
	// store may still bring its recent search index up to date.
	KeepSearchIndex bool
	// NoAdditions is sqlite.Options.NoAdditions: a SQLite store adds
	// nothing of sessiondb's own to the file. PostgreSQL ignores it.
	NoAdditions bool
	// Tracer, for a PostgreSQL store, sees every statement it sends
	// (postgres.Options.Tracer); SQLite ignores it.
	Tracer pgx.QueryTracer
}

// IsURL reports whether location names a PostgreSQL server rather than a
// file: it starts with postgres:// or postgresql://.
func IsURL(location string) bool {
	l := strings.ToLower(location)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Backend names the backend History picks for location: "postgres" or
// "sqlite".
func Backend(location string) string {
	if IsURL(location) {
		return "postgres"
	}
	return "sqlite"
}

// History opens the history store at location: a PostgreSQL URL (its
// search_path parameter, if any, names the schema) or a state.db path.
// The SQLite store is also a sessiondb.SQLiteMaintainer; the PostgreSQL
// store is a sessiondb.MessageWaiter.
func History(ctx context.Context, location string, o Options) (sessiondb.Store, error) {
	if location == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open history store: no location (a state.db path or a postgres:// URL)")
	}
	if IsURL(location) {
		st, err := postgres.Open(ctx, location, postgres.Options{
			ReadOnly:  o.ReadOnly,
			MustExist: o.MustExist,
			Now:       o.Now,
			Logger:    o.Logger,
			Tracer:    o.Tracer,
		})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	if err := mustExist(location, "no history store at", o); err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, location, sqlite.Options{
		ReadOnly:             o.ReadOnly,
		Synchronous:          o.Synchronous,
		Now:                  o.Now,
		Logger:               o.Logger,
		SearchWindowMessages: o.SearchWindowMessages,
		SearchRecentMessages: o.SearchRecentMessages,
		KeepSearchIndex:      o.KeepSearchIndex,
		NoAdditions:          o.NoAdditions,
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Central opens the control plane's central registry at location: a
// postgres:// URL (in the schema its search_path names; not the history
// store's, whose sessions table it would clash with) or a NanoClaw
// data/v2.db path. Host daemons on several machines share one registry by
// giving the same URL.
func Central(ctx context.Context, location string, o Options) (sessiondb.Registry, error) {
	if location == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open central registry: no location (a data/v2.db path or a postgres:// URL)")
	}
	if IsURL(location) {
		c, err := postgres.OpenCentral(ctx, location, postgres.Options{ReadOnly: o.ReadOnly, MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	if err := mustExist(location, "nothing at", o); err != nil {
		return nil, err
	}
	c, err := sqlite.OpenCentral(ctx, location, sqlite.CentralOptions{ReadOnly: o.ReadOnly, Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Subagents opens janebot's subagent store at location: a postgres:// URL
// or a state.sqlite path.
func Subagents(ctx context.Context, location string, o Options) (sessiondb.SubagentService, error) {
	if location == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open subagent store: no location (a state.sqlite path or a postgres:// URL)")
	}
	if IsURL(location) {
		s, err := postgres.OpenSubagents(ctx, location, postgres.Options{ReadOnly: o.ReadOnly, MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if err := mustExist(location, "nothing at", o); err != nil {
		return nil, err
	}
	s, err := sqlite.OpenSubagents(ctx, location, sqlite.SubagentOptions{Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// mustExist refuses a missing file when o.MustExist, saying what is
// missing before the path.
func mustExist(path, missing string, o Options) error {
	if !o.MustExist {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "%s %s", missing, path)
	}
	return nil
}
