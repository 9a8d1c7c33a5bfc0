package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// DecideStuck decides whether a running container is stuck (contract
// section 8). It is pure: heartbeat is the .heartbeat mtime (zero = absent,
// a fresh spawn), state the container_state row, claims the processing_ack
// rows (other statuses are ignored).
//
//   - A Bash tool in flight extends both limits to its declared timeout.
//   - Heartbeat present and older than max(30 min, bash) → StuckKillCeiling.
//   - A processing claim older than max(60 s, bash) with no heartbeat since
//     the claim → StuckKillClaim. Unparseable claim times are skipped.
func DecideStuck(now, heartbeat time.Time, state ContainerState, claims []Claim) StuckVerdict {
	var bash time.Duration
	if state.CurrentTool == "Bash" && state.ToolDeclaredTimeoutMS > 0 {
		bash = time.Duration(state.ToolDeclaredTimeoutMS) * time.Millisecond
	}
	if !heartbeat.IsZero() && now.Sub(heartbeat) > max(DefaultStuckCeiling, bash) {
		return StuckKillCeiling
	}
	limit := max(DefaultClaimTimeout, bash)
	for _, c := range claims {
		if c.Status != AckProcessing {
			continue
		}
		claimed, err := ParseTime(c.StatusChanged)
		if err != nil {
			continue
		}
		// An absent heartbeat is older than any claim.
		if now.Sub(claimed) > limit && !heartbeat.After(claimed) {
			return StuckKillClaim
		}
	}
	return StuckOK
}

// ContainerState reads outbound.db's container_state (read-only); a missing
// table or row reads as no tool in flight.
func (h *Host) ContainerState(ctx context.Context, ref SessionRef) (ContainerState, error) {
	var st ContainerState
	err := h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		st, err = readContainerState(q)
		return err
	})
	return st, err
}

func readContainerState(q queryer) (ContainerState, error) {
	var st ContainerState
	cols, err := columns(q, "container_state")
	if err != nil || len(cols) == 0 {
		return st, err
	}
	err = each(q, "SELECT current_tool, tool_declared_timeout_ms, tool_started_at, updated_at FROM container_state WHERE id = 1", nil, func(row sqlitedb.Row) error {
		var tool, started, updated sql.NullString
		var ms sql.NullInt64
		if err := row.Scan(&tool, &ms, &started, &updated); err != nil {
			return err
		}
		st = ContainerState{CurrentTool: tool.String, ToolDeclaredTimeoutMS: ms.Int64, ToolStartedAt: started.String, UpdatedAt: updated.String}
		return nil
	})
	return st, err
}

// Heartbeat returns the .heartbeat mtime, zero when absent. A link in its
// place is not followed: its own time counts, so a link to a file that
// something else keeps fresh cannot keep a dead container looking alive.
func (h *Host) Heartbeat(ref SessionRef) (time.Time, error) {
	path, err := h.layout.HeartbeatPath(ref)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, sessiondb.Wrap(sessiondb.EINTERNAL, err, "stat %s", path)
	}
	return fi.ModTime(), nil
}

// CheckStuck reads the heartbeat, container state and claims and applies
// DecideStuck at the host clock's now.
func (h *Host) CheckStuck(ctx context.Context, ref SessionRef) (StuckVerdict, error) {
	hb, err := h.Heartbeat(ref)
	if err != nil {
		return StuckOK, err
	}
	// One read-only open of outbound.db for both reads.
	var st ContainerState
	var claims []Claim
	err = h.withOutboundRO(ctx, ref, func(q queryer) error {
		var err error
		if st, err = readContainerState(q); err != nil {
			return err
		}
		claims, err = readClaims(q, AckProcessing)
		return err
	})
	if err != nil {
		return StuckOK, err
	}
	return DecideStuck(h.now(), hb, st, claims), nil
}
