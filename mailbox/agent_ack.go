package mailbox

import (
	"context"
	"maps"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb/internal/errtext"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// RequireInbound checks that every id names a messages_in row: an ack of
// an id the host never wrote is a mistake, not a no-op. Unknown ids are a
// not_found error naming them.
func (a *Agent) RequireInbound(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		if err := checkText("message id", id); err != nil {
			return err
		}
		args[i] = id
	}
	found := map[string]bool{}
	err := a.withInbound(ctx, func(q queryer) error {
		return inChunks(args, func(part []any, ph string) error {
			set, err := idSet(q, "SELECT id FROM messages_in WHERE id IN ("+ph+")", part...)
			maps.Copy(found, set)
			return err
		})
	})
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, strconv.Quote(errtext.Clip(id, 64)))
		}
	}
	if len(missing) > 0 {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "no inbound message %s", strings.Join(missing, ", "))
	}
	return nil
}

// Acks returns the agent's acks (any status), for tools.
func (a *Agent) Acks(ctx context.Context) ([]Claim, error) {
	out, err := collectClaims(a.outQ(ctx), "SELECT message_id, status, status_changed FROM processing_ack ORDER BY status_changed, message_id")
	return out, sqlitedb.Wrap(err, "agent: read acks")
}

// ClearStaleProcessing deletes processing acks left by a previous container
// (run at start); returns the rows deleted.
func (a *Agent) ClearStaleProcessing(ctx context.Context) (int, error) {
	var n int64
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		r, err := tx.Exec("DELETE FROM processing_ack WHERE status = 'processing'")
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return int(n), sqlitedb.Wrap(err, "agent: clear stale processing")
}

func (a *Agent) ack(ctx context.Context, status string, ids []string) error {
	if err := checkAckIDs("ack", ids); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	now := FormatTime(a.now())
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error { return writeAcks(tx, status, ids, now) })
	return sqlitedb.Wrap(err, "agent: ack %s", status)
}

// checkAckIDs rejects an empty id or one with a NUL byte or invalid UTF-8
// among the ids an ack (what names it) is about.
func checkAckIDs(what string, ids []string) error {
	for _, id := range ids {
		if id == "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "%s: message id is empty", what)
		}
		if err := checkText("message id", id); err != nil {
			return err
		}
	}
	return nil
}

// writeAcks sets the processing_ack of each id to status, changed at now,
// inside the open outbound transaction.
func writeAcks(tx *sqlitedb.Tx, status string, ids []string, now string) error {
	for _, id := range ids {
		if _, err := tx.Exec("INSERT OR REPLACE INTO processing_ack (message_id, status, status_changed) VALUES (?, ?, ?)", id, status, now); err != nil {
			return err
		}
	}
	return nil
}

// MarkProcessing acks ids as processing (claimed by this container).
func (a *Agent) MarkProcessing(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckProcessing, ids)
}

// MarkCompleted acks ids as completed (idempotent).
func (a *Agent) MarkCompleted(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckCompleted, ids)
}

// MarkFailed acks ids as failed.
func (a *Agent) MarkFailed(ctx context.Context, ids ...string) error {
	return a.ack(ctx, AckFailed, ids)
}
