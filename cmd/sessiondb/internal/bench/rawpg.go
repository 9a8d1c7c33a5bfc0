package bench

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// rawPGIncludes says, in the output, what the PostgreSQL bare loop does,
// so that every run's ratio names its baseline.
const rawPGIncludes = "one INSERT INTO messages of the 13 columns an append writes per transaction " +
	"(autocommit: the INSERT and its COMMIT in one round trip, the commit waiting for its WAL flush), " +
	"prepared once, one pgx connection per client, tool_calls encoded to JSON; " +
	"into a schema the store made: the same columns (the generated tsvector too), the primary key, " +
	"messages_session, the GIN word index, the trigram index (of the messages with CJK text) and the foreign key to sessions. " +
	"Not included: the session counters, the change notification, the store's validation, its pool and its group commit"

// rawPGInsert is the bare loop's one statement.
const rawPGInsert = `INSERT INTO messages (session_id, role, content, content_bytes, tool_call_id, tool_calls, tool_name, "timestamp",
    token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, NULL, NULL, NULL, NULL, NULL)`

// rawPG is a connection of its own to the schema at url, no pool: one
// client of the bare loop, or the one that asks for the search plans.
type rawPG struct{ conn *pgx.Conn }

func openRawPG(ctx context.Context, url string) (*rawPG, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "bare loop: connect to %s", errtext.RedactPassword(url))
	}
	return &rawPG{conn: conn}, nil
}

func (r *rawPG) close() { r.conn.Close(context.Background()) }

// append inserts m, stamped now, in a transaction of its own.
func (r *rawPG) append(ctx context.Context, m *sessiondb.NewMessage, now sessiondb.Clock) error {
	// Encoding tool_calls is work the store must do too.
	var calls *string
	if m.ToolCalls != nil {
		j, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return sessiondb.Wrap(sessiondb.EINTERNAL, err, "bare loop: encode tool_calls")
		}
		s := string(j)
		calls = &s
	}
	_, err := r.conn.Exec(ctx, rawPGInsert, m.SessionID, m.Role, m.Content, m.ToolCallID, calls, m.ToolName, sessiondb.EpochSeconds(now()))
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "bare loop: insert into %s", m.SessionID)
	}
	return nil
}
