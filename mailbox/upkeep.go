package mailbox

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// SessionFolders returns the refs of folders <root>/<group>/<session> with
// safe names, in name order, whether or not they hold a mailbox yet (see
// Sessions). It reads folders only.
func (h *Host) SessionFolders(ctx context.Context) ([]SessionRef, error) {
	// os.ReadDir returns names sorted, so the refs come out in order.
	groups, err := os.ReadDir(h.layout.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "list %s", h.layout.Root)
	}
	var refs []SessionRef
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !g.IsDir() || ValidateName("agent_group_id", g.Name()) != nil {
			continue
		}
		sess, err := os.ReadDir(filepath.Join(h.layout.Root, g.Name()))
		if err != nil {
			h.log.Warn("mailbox: cannot list agent group folder", "group", g.Name(), "err", err)
			continue
		}
		for _, s := range sess {
			if !s.IsDir() || ValidateName("session_id", s.Name()) != nil {
				continue
			}
			refs = append(refs, SessionRef{AgentGroupID: g.Name(), SessionID: s.Name()})
		}
	}
	return refs, nil
}

// Sessions lists the session folders under the root: folders with safe
// names that hold an inbound.db.
func (h *Host) Sessions(ctx context.Context) ([]SessionRef, error) {
	refs, err := h.SessionFolders(ctx)
	if err != nil {
		return nil, err
	}
	out := refs[:0]
	for _, r := range refs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p, _ := h.layout.InboundPath(r)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, r)
		}
	}
	return out, nil
}

// SessionCheck is what CheckSession found in one session.
type SessionCheck struct {
	// Due counts the due rows with trigger=1 (see CountDue), after the
	// agent's acks were synced.
	Due int
	// Claims are the agent's processing acks.
	Claims []Claim
	// Container is outbound.db's container_state row, read only when
	// CheckSession was asked for it.
	Container ContainerState
	// NextDeliverAfter is the earliest future deliver_after of an outbound
	// row; zero when there is none.
	NextDeliverAfter time.Time
}

// CheckSession syncs the agent's completed and failed acks into
// messages_in (SyncAcks) and reads what a host deciding on the session
// needs: the due count, the processing claims, the container state (when
// withContainer: it means something only while a container runs) and the
// next deliver_after. It opens outbound.db read-only once, with the inbound
// transaction inside that read.
func (h *Host) CheckSession(ctx context.Context, ref SessionRef, withContainer bool) (SessionCheck, error) {
	var c SessionCheck
	var deliverAfter sql.NullString
	err := h.withOutboundRO(ctx, ref, func(out queryer) error {
		var err error
		if withContainer {
			if c.Container, err = readContainerState(out); err != nil {
				return err
			}
		}
		if c.Claims, err = readClaims(out, AckProcessing); err != nil {
			return err
		}
		if err := scanOne(out, &deliverAfter, nextDeliverAfterQuery, FormatTime(h.now())); err != nil {
			return err
		}
		return h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
			if _, err := syncAcksTx(tx, out); err != nil {
				return err
			}
			c.Due, err = countDueTx(tx, h.now())
			return err
		})
	})
	if err != nil {
		return SessionCheck{}, err
	}
	c.NextDeliverAfter = earliest([]sql.NullString{deliverAfter})
	return c, nil
}

// Upkeep runs a session's timed upkeep in one inbound transaction:
// recurrences advance (AdvanceRecurrences) and expired system rows fail
// (ExpireSystemRows). It returns when the inbound side next needs a look
// without any file change: the earliest future process_after of a pending
// row, delivery retry or system-row expiry; zero when there is none.
func (h *Host) Upkeep(ctx context.Context, ref SessionRef) (time.Time, error) {
	var times []sql.NullString
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		if _, err := h.advanceTx(ctx, tx, ref); err != nil {
			return err
		}
		if _, err := h.expireTx(tx); err != nil {
			return err
		}
		var err error
		times, err = h.nextDueTx(tx)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return earliest(times), nil
}

// nextDeliverAfterQuery reads the earliest deliver_after of outbound.db
// that lies after its one argument (now).
const nextDeliverAfterQuery = "SELECT min(datetime(deliver_after)) FROM messages_out WHERE deliver_after IS NOT NULL AND datetime(deliver_after) > datetime(?)"

func scanOne(q queryer, dst any, query string, args ...any) error {
	rows, err := q.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dst); err != nil {
			return err
		}
	}
	return rows.Err()
}

// nextDueTx returns the inbound side's timed events: the earliest future
// process_after of a pending row, delivery retry, and system-row expiry.
func (h *Host) nextDueTx(tx *sqlitedb.Tx) ([]sql.NullString, error) {
	now := FormatTime(h.now())
	var times []sql.NullString
	for _, q := range []string{
		"SELECT min(datetime(process_after)) FROM messages_in WHERE status = 'pending' AND process_after IS NOT NULL AND datetime(process_after) > datetime(?1)",
		"SELECT min(datetime(next_attempt_at)) FROM delivery_attempts WHERE next_attempt_at IS NOT NULL AND datetime(next_attempt_at) > datetime(?1)",
		"SELECT min(datetime(timestamp, '+" + itoa(int64(h.opts.SystemRowTTL/time.Second)+1) + " seconds')) FROM messages_in WHERE kind = 'system' AND status = 'pending' AND ?1 IS NOT NULL",
	} {
		var t sql.NullString
		if err := tx.QueryRow(q, now).Scan(&t); err != nil {
			return nil, err
		}
		times = append(times, t)
	}
	return times, nil
}

// earliest returns the earliest of the stored times that parse; zero when
// none does.
func earliest(times []sql.NullString) time.Time {
	var next time.Time
	for _, t := range times {
		if !t.Valid {
			continue
		}
		v, err := ParseTime(t.String)
		if err != nil {
			continue
		}
		if next.IsZero() || v.Before(next) {
			next = v
		}
	}
	return next
}
