package postgres

import (
	"context"
	"time"

	"github.com/sessiondb/sessiondb/internal/regsql"

	"github.com/sessiondb/sessiondb"
)

var _ sessiondb.HostLeaseService = (*Central)(nil)

// claimLeaseSQL takes or renews a lease in one conditional upsert: a new
// session's lease is inserted; an existing one changes only when host
// already holds it or it has run out (?4 is now), and its epoch grows
// when it changes hands.
const claimLeaseSQL = `INSERT INTO session_leases (session_id, host, expires_at, epoch) VALUES (?1, ?2, ?3, 1)
ON CONFLICT (session_id) DO UPDATE SET host = excluded.host, expires_at = excluded.expires_at,
  epoch = session_leases.epoch + CASE WHEN session_leases.host = excluded.host THEN 0 ELSE 1 END
WHERE session_leases.host = excluded.host OR session_leases.expires_at <= ?4`

// ClaimSession implements sessiondb.HostLeaseService.
func (c *Central) ClaimSession(ctx context.Context, sessionID, host string, ttl time.Duration) (sessiondb.SessionLease, bool, error) {
	if err := sessiondb.CheckLease(sessionID, host, ttl, true); err != nil {
		return sessiondb.SessionLease{}, false, err
	}
	now := c.now()
	var l sessiondb.SessionLease
	err := c.writeTx(ctx, "claim session "+sessionID, func(tx *ctxTx) error {
		if _, err := tx.Exec(claimLeaseSQL, sessionID, host, sessiondb.FormatTimestamp(now.Add(ttl)), sessiondb.FormatTimestamp(now)); err != nil {
			return err
		}
		l = sessiondb.SessionLease{SessionID: sessionID}
		return tx.QueryRow("SELECT host, expires_at, epoch FROM session_leases WHERE session_id = ?", sessionID).Scan(&l.Host, regsql.IntoTime(&l.Expires), &l.Epoch)
	})
	if err != nil {
		return sessiondb.SessionLease{}, false, err
	}
	return l, l.Host == host, nil
}

// ReleaseSession implements sessiondb.HostLeaseService: the lease runs
// out now, keeping its epoch, so the next host's is greater.
func (c *Central) ReleaseSession(ctx context.Context, sessionID, host string) error {
	if err := sessiondb.CheckLease(sessionID, host, 0, false); err != nil {
		return err
	}
	return c.writeTx(ctx, "release session "+sessionID, func(tx *ctxTx) error {
		_, err := tx.Exec("UPDATE session_leases SET expires_at = ? WHERE session_id = ? AND host = ?", c.stamp(), sessionID, host)
		return err
	})
}

// ClaimEvent implements sessiondb.HostLeaseService: the first insert of
// the key wins.
func (c *Central) ClaimEvent(ctx context.Context, key, host string) (bool, error) {
	if err := sessiondb.CheckEventKey(key, host); err != nil {
		return false, err
	}
	claimed := false
	err := c.writeTx(ctx, "claim event", func(tx *ctxTx) error {
		n, err := regsql.Changed(tx, "INSERT INTO routed_events (event_key, host, routed_at) VALUES (?, ?, ?) ON CONFLICT (event_key) DO NOTHING", key, host, c.stamp())
		claimed = n == 1
		return err
	})
	return claimed, err
}

// PruneEvents implements sessiondb.HostLeaseService.
func (c *Central) PruneEvents(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "older-than %s is negative", olderThan)
	}
	n := 0
	err := c.writeTx(ctx, "prune routed events", func(tx *ctxTx) error {
		m, err := regsql.Changed(tx, "DELETE FROM routed_events WHERE routed_at < ?", sessiondb.FormatTimestamp(c.now().Add(-olderThan)))
		n = int(m)
		return err
	})
	return n, err
}

// RenewSessions implements sessiondb.HostLeaseService: one update of every
// unexpired lease of host.
func (c *Central) RenewSessions(ctx context.Context, host string, ttl time.Duration) ([]sessiondb.SessionLease, error) {
	if err := sessiondb.CheckHost(host); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "lease ttl %v is not positive", ttl)
	}
	now := c.now()
	var out []sessiondb.SessionLease
	err := c.writeTx(ctx, "renew leases of "+host, func(tx *ctxTx) error {
		var err error
		out, err = regsql.AppendRows(ctx, tx, "UPDATE session_leases SET expires_at = ? WHERE host = ? AND expires_at > ? RETURNING session_id, host, expires_at, epoch",
			[]any{sessiondb.FormatTimestamp(now.Add(ttl)), host, sessiondb.FormatTimestamp(now)}, out[:0], scanLease)
		return err
	})
	return out, err
}

func scanLease(r regsql.Scanner) (sessiondb.SessionLease, error) {
	var l sessiondb.SessionLease
	err := r.Scan(&l.SessionID, &l.Host, regsql.IntoTime(&l.Expires), &l.Epoch)
	return l, err
}

// HandOff implements sessiondb.HostLeaseService.
func (c *Central) HandOff(ctx context.Context, h sessiondb.HandOff) (bool, error) {
	if err := h.Validate(); err != nil {
		return false, err
	}
	queued := false
	err := c.writeTx(ctx, "hand off "+h.RowID, func(tx *ctxTx) error {
		n, err := regsql.Changed(tx, `INSERT INTO session_handoffs (session_id, agent_group_id, row_id, row_data, wake, created_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, row_id) DO NOTHING`, h.SessionID, h.AgentGroupID, h.RowID, h.Row, h.Wake, c.stamp())
		queued = n == 1
		return err
	})
	return queued, err
}

// HandOffs implements sessiondb.HostLeaseService.
func (c *Central) HandOffs(ctx context.Context, host string, limit int) ([]sessiondb.HandOff, error) {
	if err := sessiondb.CheckHost(host); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "limit %d is not positive", limit)
	}
	out, err := regsql.AppendRows(ctx, c.rq, `SELECT h.id, h.session_id, h.agent_group_id, h.row_id, h.row_data, h.wake, h.created_at
FROM session_handoffs h LEFT JOIN session_leases l ON l.session_id = h.session_id
WHERE l.session_id IS NULL OR l.host = ? OR l.expires_at <= ? ORDER BY h.id LIMIT ?`,
		[]any{host, c.stamp(), limit}, []sessiondb.HandOff{}, func(r regsql.Scanner) (sessiondb.HandOff, error) {
			var h sessiondb.HandOff
			err := r.Scan(&h.ID, &h.SessionID, &h.AgentGroupID, &h.RowID, &h.Row, &h.Wake, regsql.IntoTime(&h.Created))
			return h, err
		})
	return out, c.classify(err, "read hand-offs")
}

// DoneHandOff implements sessiondb.HostLeaseService.
func (c *Central) DoneHandOff(ctx context.Context, id int64) error {
	return c.writeTx(ctx, "remove hand-off", func(tx *ctxTx) error {
		_, err := tx.Exec("DELETE FROM session_handoffs WHERE id = ?", id)
		return err
	})
}
