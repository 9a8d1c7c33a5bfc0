package mailbox

import "time"

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
