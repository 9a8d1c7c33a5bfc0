package store

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/open"
)

// OpenRegistry opens the central registry at target (a v2.db path):
// created when missing, unless ReadOnly or MustExist.
func OpenRegistry(ctx context.Context, target string, o Options) (sessiondb.Registry, error) {
	return open.Registry(ctx, target, open.Options{ReadOnly: o.ReadOnly, MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
}

// OpenSubagents opens janebot's subagent store at target (a state.sqlite
// path): created when missing, unless MustExist.
func OpenSubagents(ctx context.Context, target string, o Options) (sessiondb.SubagentService, error) {
	return open.Subagents(ctx, target, open.Options{MustExist: o.MustExist, Now: o.Now, Logger: o.Logger})
}
