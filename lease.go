package sessiondb

import (
	"context"
	"time"
)

// SessionLease says which host serves an agent session, until when. Epoch
// grows each time the session changes hands, so a host can tell that it
// lost the session meanwhile (a fencing token).
type SessionLease struct {
	SessionID string    `json:"session_id"`
	Host      string    `json:"host"`
	Expires   time.Time `json:"expires"`
	Epoch     int64     `json:"epoch"`
}

// HostLeaseService lets host daemons on several machines share one central
// registry: each session is served by one host at a time, under a lease
// that runs out when its host stops renewing it (it died), and each inbound
// event is routed by one host only. Both are decided by the store in one
// conditional write, so two hosts can never both win.
//
// It is optional, asked for with a type assertion: the PostgreSQL registry
// has it. A registry in a NanoClaw file serves the one machine the file is
// on, and keeps NanoClaw's tables only.
type HostLeaseService interface {
	// ClaimSession gives host the session for ttl from now when no other
	// host holds an unexpired lease on it; a host holding it renews it.
	// It returns the lease as it stands and whether host holds it. The
	// session need not be in the registry (a lease names it only).
	ClaimSession(ctx context.Context, sessionID, host string, ttl time.Duration) (SessionLease, bool, error)
	// ReleaseSession ends host's lease on the session at once, so another
	// host may take it; a lease host does not hold is left alone.
	ReleaseSession(ctx context.Context, sessionID, host string) error
	// ClaimEvent records that host routes the inbound event named key and
	// reports whether it is the first to: a false answer means another
	// host (or this one, before) has the event, which must not be routed
	// again.
	ClaimEvent(ctx context.Context, key, host string) (bool, error)
	// PruneEvents forgets the events claimed more than olderThan ago and
	// returns how many.
	PruneEvents(ctx context.Context, olderThan time.Duration) (int, error)
}

// CheckLease checks the input of ClaimSession and ReleaseSession (ttl 0
// for a release): ids and host set and safe text, ttl positive. The error
// is invalid and names the field.
func CheckLease(sessionID, host string, ttl time.Duration, claim bool) error {
	if err := checkText("session id", sessionID, true, MaxPlatformID); err != nil {
		return err
	}
	if err := checkText("host", host, true, MaxNameText); err != nil {
		return err
	}
	if claim && ttl <= 0 {
		return Errorf(EINVALID, "lease ttl %v is not positive", ttl)
	}
	return nil
}

// CheckEventKey checks the key and host of ClaimEvent.
func CheckEventKey(key, host string) error {
	if err := checkText("event key", key, true, MaxPlatformID); err != nil {
		return err
	}
	return checkText("host", host, true, MaxNameText)
}
