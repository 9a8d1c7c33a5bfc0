package mailbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// RequeueResult counts what Requeue changed.
type RequeueResult struct {
	Inbound  int `json:"inbound"`   // failed messages_in rows made pending again
	Outbound int `json:"outbound"`  // failed deliveries made undelivered again
	AcksGone int `json:"acks_gone"` // the agent's failed acks deleted so it polls the rows again
}

// Requeue puts failed rows back in line: failed messages_in rows (ids, or
// all when ids is empty) become pending with tries 0 and no process_after,
// and their 'failed' acks are deleted from outbound.db so the agent polls
// them again; failed deliveries (outbound ids among ids, or all) lose their
// delivered and delivery_attempts rows, so the next drain sends them
// again. It opens outbound.db read-write: call it only when no container
// runs for the session.
func (h *Host) Requeue(ctx context.Context, ref SessionRef, ids []string) (RequeueResult, error) {
	var res RequeueResult
	if err := ref.Validate(); err != nil {
		return res, err
	}
	for _, id := range ids {
		if err := checkText("message id", id); err != nil || id == "" {
			return res, sessiondb.Errorf(sessiondb.EINVALID, "requeue: message id %q is empty or has control characters", errtext.Clip(id, 64))
		}
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var requeued []string
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		requeued, res.Inbound, res.Outbound = nil, 0, 0
		err := eachWanted(tx, "SELECT id FROM messages_in WHERE status = 'failed'", want, func(id string) error {
			if _, err := tx.Exec("UPDATE messages_in SET status = 'pending', tries = 0, process_after = NULL WHERE id = ? AND status = 'failed'", id); err != nil {
				return err
			}
			requeued = append(requeued, id)
			res.Inbound++
			return nil
		})
		if err != nil {
			return err
		}
		return eachWanted(tx, "SELECT message_out_id FROM delivered WHERE status = 'failed'", want, func(id string) error {
			if _, err := tx.Exec("DELETE FROM delivered WHERE message_out_id = ? AND status = 'failed'", id); err != nil {
				return err
			}
			if _, err := tx.Exec("DELETE FROM delivery_attempts WHERE message_out_id = ?", id); err != nil {
				return err
			}
			res.Outbound++
			return nil
		})
	})
	if err == nil && res.Outbound > 0 {
		// The requeued deliveries lie below the drain watermarks, which
		// passed them as resolved: this Host's, reset here, and that of a
		// running host in another process, told by the mark file it
		// honours at its next drain (written after the commit, so a drain
		// that takes the mark sees the requeue).
		s := h.session(ref)
		h.mu.Lock()
		s.drainMark = 0
		h.mu.Unlock()
		if err = h.leaveRequeueMark(ref); err != nil {
			return res, sessiondb.Wrap(sessiondb.EINTERNAL, err, "session %s: requeue: tell the running host", ref)
		}
	}
	if err != nil || len(requeued) == 0 {
		return res, err
	}
	path, err := h.layout.OutboundPath(ref)
	if err != nil {
		return res, err
	}
	rw, err := openRW(ctx, path, pragmasRW, h.opts.WriteBudget)
	if err != nil {
		return res, err
	}
	err = rw.do(ctx, func(tx *sqlitedb.Tx) error {
		res.AcksGone = 0
		for _, id := range requeued {
			r, err := tx.Exec("DELETE FROM processing_ack WHERE message_id = ? AND status = 'failed'", id)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			res.AcksGone += int(n)
		}
		return nil
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	return res, sqlitedb.Wrap(err, "session %s: requeue: delete failed acks", ref)
}

// eachWanted calls fn for each id query selects that want holds, or for
// every one when want is empty.
func eachWanted(tx *sqlitedb.Tx, query string, want map[string]bool, fn func(id string) error) error {
	ids, err := idSet(tx, query)
	if err != nil {
		return err
	}
	for id := range ids {
		if len(want) > 0 && !want[id] {
			continue
		}
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// leaveRequeueMark writes the session's RequeueMarkFile.
func (h *Host) leaveRequeueMark(ref SessionRef) error {
	path, err := h.layout.file(ref, RequeueMarkFile)
	if err != nil {
		return err
	}
	if _, _, err := sqlitedb.CreateFile(path, h.modes.dir, h.modes.file); err != nil {
		return err
	}
	return nil
}

// takeRequeueMark removes the session's RequeueMarkFile and reports
// whether one was there (or could not be removed: then every drain reads
// from the start until it can, which costs time but loses no requeue).
func takeRequeueMark(dir string) bool {
	err := os.Remove(filepath.Join(dir, RequeueMarkFile))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
