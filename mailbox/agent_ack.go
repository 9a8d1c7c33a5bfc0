package mailbox

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

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
	for _, id := range ids {
		if id == "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "ack: message id is empty")
		}
		if err := checkText("message id", id); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return nil
	}
	now := FormatTime(a.now())
	err := a.w.Do(ctx, func(tx *sqlitedb.Tx) error {
		for _, id := range ids {
			if _, err := tx.Exec("INSERT OR REPLACE INTO processing_ack (message_id, status, status_changed) VALUES (?, ?, ?)", id, status, now); err != nil {
				return err
			}
		}
		return nil
	})
	return sqlitedb.Wrap(err, "agent: ack %s", status)
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
