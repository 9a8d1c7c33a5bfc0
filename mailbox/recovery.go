package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"time"

	"github.com/sessiondb/sessiondb/internal/backoff"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// retryDelay is the back-off before retry number tries+1: 5 s · 2^tries,
// at most 5 s · 2^20.
func retryDelay(tries int) time.Duration {
	return backoff.Exponential(tries+1, 5*time.Second, 5*time.Second<<20)
}

// ResetProcessing retries or fails the rows a dead container had claimed,
// then deletes its processing acks (opening outbound.db read-write, which is
// safe only because no container runs: call it only then).
func (h *Host) ResetProcessing(ctx context.Context, ref SessionRef) (ResetResult, error) {
	if err := ref.Validate(); err != nil {
		return ResetResult{}, err
	}
	claims, err := h.readAcks(ctx, ref, AckProcessing)
	if err != nil || len(claims) == 0 {
		return ResetResult{}, err
	}
	var res ResetResult
	now := h.now()
	err = h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		res = ResetResult{}
		for _, c := range claims {
			var tries sql.NullInt64
			var pa sql.NullString
			err := tx.QueryRow("SELECT tries, process_after FROM messages_in WHERE id = ? AND status = 'pending'", c.MessageID).Scan(&tries, &pa)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if pa.Valid {
				if t, err := ParseTime(pa.String); err == nil && t.After(now) {
					res.Skipped++
					continue
				}
			}
			if tries.Int64 >= MaxTries {
				if _, err := tx.Exec("UPDATE messages_in SET status = 'failed' WHERE id = ?", c.MessageID); err != nil {
					return err
				}
				res.Failed++
				continue
			}
			next := now.Add(retryDelay(int(tries.Int64)))
			if _, err := tx.Exec("UPDATE messages_in SET tries = COALESCE(tries, 0) + 1, process_after = ? WHERE id = ?", FormatTime(next), c.MessageID); err != nil {
				return err
			}
			res.Retried++
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	n, err := h.clearProcessingAcks(ctx, ref)
	res.AcksCleared = n
	return res, err
}

// clearProcessingAcks deletes processing acks through a read-write open of
// outbound.db; the caller guarantees the container is dead. The read inside
// the transaction also rolls back a hot journal the agent left.
func (h *Host) clearProcessingAcks(ctx context.Context, ref SessionRef) (int, error) {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return 0, err
	}
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return 0, err
	}
	var n int64
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		r, err := tx.Exec("DELETE FROM processing_ack WHERE status = 'processing'")
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, sqlitedb.Wrap(err, "session %s: clear processing acks", ref)
	}
	return int(n), nil
}

// RecoverHotJournal rolls back a hot outbound journal left by a killed
// agent (a read-only handle cannot, so every host read would fail) and
// deletes orphan processing acks. Call it only once the container is
// confirmed dead. It reports whether a journal was found.
func (h *Host) RecoverHotJournal(ctx context.Context, ref SessionRef) (bool, error) {
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return false, err
	}
	fi, err := os.Stat(path + "-journal")
	if err != nil || fi.Size() == 0 {
		return false, nil
	}
	if _, err := h.clearProcessingAcks(ctx, ref); err != nil {
		return true, err
	}
	return true, nil
}

// RecoverInbound opens inbound.db read-write once so SQLite rolls back a
// journal left by a killed host, and runs the lazy migrations. Call it for
// each active session at host start.
func (h *Host) RecoverInbound(ctx context.Context, ref SessionRef) error {
	return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var n int
		return tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n)
	})
}
