package sessiondb

import "time"

// RetentionPolicy says which history to drop and when (history-store spec,
// IMP-13). Applying it prunes ended sessions older than MaxAgeDays (of the
// listed sources, or all) and then reclaims the freed space in small steps,
// never with an in-place VACUUM.
type RetentionPolicy struct {
	// MaxAgeDays is the age, from a session's start, past which an ended
	// session is deleted. It must be > 0.
	MaxAgeDays float64
	// Sources limits pruning to these sources; empty means every source.
	Sources []string
	// MinInterval skips the run when the last one (recorded in the store)
	// finished less than this long ago; 0 always runs.
	MinInterval time.Duration
}

// RetentionReport says what applying a policy did.
type RetentionReport struct {
	// Skipped is true when MinInterval had not passed; nothing was done.
	Skipped bool `json:"skipped"`
	// Pruned counts deleted sessions.
	Pruned int `json:"pruned"`
	// FreedPages counts database pages returned to the file system.
	FreedPages int64 `json:"freed_pages"`
	// NeedsVacuumInto is true when much of the file is free but it cannot
	// shrink in place (it was not created with incremental auto-vacuum):
	// a compacted copy (VacuumInto) is the way to reclaim the space.
	NeedsVacuumInto bool `json:"needs_vacuum_into"`
}
