package postgres

import (
	"context"
	"database/sql"
	"time"

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
		var expires sql.NullString
		l = sessiondb.SessionLease{SessionID: sessionID}
		err := tx.QueryRow("SELECT host, expires_at, epoch FROM session_leases WHERE session_id = ?", sessionID).Scan(&l.Host, &expires, &l.Epoch)
		l.Expires = readTime(expires)
		return err
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
		res, err := tx.Exec("INSERT INTO routed_events (event_key, host, routed_at) VALUES (?, ?, ?) ON CONFLICT (event_key) DO NOTHING", key, host, c.stamp())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
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
		res, err := tx.Exec("DELETE FROM routed_events WHERE routed_at < ?", sessiondb.FormatTimestamp(c.now().Add(-olderThan)))
		if err != nil {
			return err
		}
		m, err := res.RowsAffected()
		n = int(m)
		return err
	})
	return n, err
}
