package open

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Registry opens the control plane's central registry at location: a
// NanoClaw data/v2.db path (created when missing unless ReadOnly or
// MustExist). A postgres:// URL is refused (invalid) until the PostgreSQL
// backend implements the registry. Synchronous is not used: the central
// file keeps NanoClaw's WAL settings.
func Registry(ctx context.Context, location string, o Options) (sessiondb.Registry, error) {
	if location == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open central registry: no location (a v2.db path)")
	}
	if IsURL(location) {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open central registry: the PostgreSQL backend does not keep a registry yet; give a v2.db path")
	}
	if o.MustExist || o.ReadOnly {
		if _, err := os.Stat(location); errors.Is(err, fs.ErrNotExist) {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no central registry at %s", location)
		}
	}
	c, err := sqlite.OpenCentral(ctx, location, sqlite.CentralOptions{ReadOnly: o.ReadOnly, Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Subagents opens janebot's subagent store at location, a state.sqlite
// path (created with its parent when missing, unless MustExist). A
// postgres:// URL is refused (invalid): the subagent store is janebot's
// file.
func Subagents(ctx context.Context, location string, o Options) (sessiondb.SubagentService, error) {
	if location == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open subagent store: no location (a state.sqlite path)")
	}
	if IsURL(location) {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "open subagent store: it is janebot's state.sqlite file, not a server; give its path")
	}
	if o.MustExist || o.ReadOnly {
		if _, err := os.Stat(location); errors.Is(err, fs.ErrNotExist) {
			return nil, sessiondb.Errorf(sessiondb.ENOTFOUND, "no subagent store at %s", location)
		}
	}
	s, err := sqlite.OpenSubagents(ctx, location, sqlite.SubagentOptions{Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}
