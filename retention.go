package sessiondb

import (
	"context"
	"math"
	"time"
)

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

// Validate checks that MaxAgeDays is a finite number above 0 and
// MinInterval is not negative. The error is invalid and names the field.
func (p RetentionPolicy) Validate() error {
	if !(p.MaxAgeDays > 0) || math.IsInf(p.MaxAgeDays, 0) {
		return Errorf(EINVALID, "max age must be more than 0 days, not %v", p.MaxAgeDays)
	}
	if p.MinInterval < 0 {
		return Errorf(EINVALID, "min interval %v is negative", p.MinInterval)
	}
	return nil
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

// RetentionService applies a retention policy (spec/history-store.md
// section 9, IMP-13).
type RetentionService interface {
	// ApplyRetention deletes the ended sessions that started more than
	// p.MaxAgeDays before now, of p.Sources (or of every source), as
	// PruneSessions does, then reclaims space as the backend can without
	// holding writers up for long. Open sessions and younger ones are kept.
	// When p.MinInterval > 0 and the last run (recorded in the store, so
	// other processes see it where the backend can) finished less than
	// p.MinInterval ago, it does nothing and reports Skipped. A policy that
	// fails Validate is invalid; a read-only store refuses with invalid.
	ApplyRetention(ctx context.Context, p RetentionPolicy) (*RetentionReport, error)
}

// Due reports whether a run of p is due at now, the last one (recorded
// when ok) having finished at last: always without MinInterval or a
// recorded run, else once MinInterval has passed since it.
func (p RetentionPolicy) Due(now, last time.Time, ok bool) bool {
	return p.MinInterval <= 0 || !ok || now.Sub(last) >= p.MinInterval
}

// Prune is the pruning part of ApplyRetention for every backend:
// PruneSessions of p.MaxAgeDays for each of p.Sources, or once over every
// source when it lists none. It returns how many sessions were deleted,
// stopping at the first error.
func (p RetentionPolicy) Prune(ctx context.Context, s interface {
	PruneSessions(ctx context.Context, olderThanDays float64, source string) (int, error)
}) (int, error) {
	sources := p.Sources
	if len(sources) == 0 {
		sources = []string{""}
	}
	pruned := 0
	for _, src := range sources {
		n, err := s.PruneSessions(ctx, p.MaxAgeDays, src)
		if err != nil {
			return 0, err
		}
		pruned += n
	}
	return pruned, nil
}
