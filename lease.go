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
	// RenewSessions extends every lease host holds that has not run out
	// to ttl from now, in one write, and returns them. A lease that ran
	// out is not renewed (another host may have it now): ClaimSession
	// takes it again if it is still free.
	RenewSessions(ctx context.Context, host string, ttl time.Duration) ([]SessionLease, error)
	// HandOff queues an inbound row for a session that another host
	// serves: the host that routed the event cannot write into a mailbox
	// on another machine, so the session's host takes the row from the
	// registry. A row already queued for the session (same RowID) is kept
	// as it was and queued reports false.
	HandOff(ctx context.Context, h HandOff) (queued bool, err error)
	// HandOffs returns up to limit queued rows, oldest first, of the
	// sessions host holds and of those whose lease has run out or that
	// have none (nobody serves them: host may claim them).
	HandOffs(ctx context.Context, host string, limit int) ([]HandOff, error)
	// DoneHandOff removes a queued row once its session's host wrote it
	// into the mailbox; an id not queued is left alone.
	DoneHandOff(ctx context.Context, id int64) error
}

// HandOff is an inbound row queued in the registry for the host that
// serves its session (HostLeaseService.HandOff).
type HandOff struct {
	// ID is set by the registry.
	ID           int64  `json:"id"`
	SessionID    string `json:"session_id"`
	AgentGroupID string `json:"agent_group_id"`
	// RowID is the mailbox row's id: one queued row per session and id.
	RowID string `json:"row_id"`
	// Row is the row as the host daemon encodes it; the registry keeps
	// its bytes.
	Row []byte `json:"row"`
	// Wake says the session is to be woken once the row is written.
	Wake    bool      `json:"wake"`
	Created time.Time `json:"created"`
}

// MaxHandOffBytes bounds a queued row (an event with its attachments).
const MaxHandOffBytes = 32 << 20

// Validate checks a hand-off before it is queued; the error is invalid and
// names the field.
func (h HandOff) Validate() error {
	if err := firstError(
		checkID("session_id", h.SessionID, true),
		checkID("agent_group_id", h.AgentGroupID, true),
		checkText("row_id", h.RowID, true, MaxPlatformID),
	); err != nil {
		return err
	}
	switch {
	case len(h.Row) == 0:
		return Errorf(EINVALID, "row is empty")
	case len(h.Row) > MaxHandOffBytes:
		return Errorf(EINVALID, "row is %d bytes, the limit is %d", len(h.Row), MaxHandOffBytes)
	}
	return nil
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

// CheckHost checks a host name given to HostLeaseService.
func CheckHost(host string) error { return checkText("host", host, true, MaxNameText) }
