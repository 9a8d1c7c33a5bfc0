package postgres

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/regsql"
)

// Subagents is janebot's subagent store (sessiondb.SubagentService) in a
// PostgreSQL schema, which may be the history store's: its table and its
// ledger have names of their own. Its statements are the SQLite backend's
// (internal/regsql): every transition is one conditional UPDATE
// (compare-and-set on the status and job it expects), so handles in many
// processes never overwrite a newer job.
type Subagents struct {
	*conn
	*regsql.Subagents
}

var _ sessiondb.SubagentService = (*Subagents)(nil)

// OpenSubagents opens (creating or migrating) the subagent store in the
// schema url and o name, as Open does for the history store.
func OpenSubagents(ctx context.Context, url string, o Options) (*Subagents, error) {
	c, err := openConn(ctx, url, o, subagentMigrations)
	if err != nil {
		return nil, err
	}
	return &Subagents{conn: c, Subagents: regsql.NewSubagents(registryBackend{c})}, nil
}

// Close closes the pool.
func (s *Subagents) Close() error {
	s.pool.Close()
	return nil
}

// FailJob implements sessiondb.SubagentService; a message PostgreSQL text
// cannot hold (NUL, invalid UTF-8) is refused, naming the field.
func (s *Subagents) FailJob(ctx context.Context, id, job, message string) (sessiondb.Subagent, error) {
	if err := checkText("message", &message); err != nil {
		return sessiondb.Subagent{}, err
	}
	return s.Subagents.FailJob(ctx, id, job, message)
}
