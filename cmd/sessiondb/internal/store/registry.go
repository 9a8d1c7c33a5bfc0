package store

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/open"
)

// OpenRegistry opens the control plane's central registry at target (a
// data/v2.db path or a postgres:// URL, through open.Central): created when
// missing, unless ReadOnly or MustExist.
func OpenRegistry(ctx context.Context, target string, o Options) (sessiondb.Registry, error) {
	return open.Central(ctx, target, open.Options{ReadOnly: o.ReadOnly, MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
}

// OpenSubagents opens janebot's subagent store at target (a state.sqlite
// path or a postgres:// URL, through open.Subagents): created when
// missing, unless MustExist.
func OpenSubagents(ctx context.Context, target string, o Options) (sessiondb.SubagentService, error) {
	return open.Subagents(ctx, target, open.Options{MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
}
