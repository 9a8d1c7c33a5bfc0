package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/safefile"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// reclaimThreshold is the free share of the file above which retention
// reclaims space.
const reclaimThreshold = 0.25

// vacuumBatchPages is how many pages one incremental vacuum step frees;
// each step is its own short write transaction so other writers (and a
// replicator reading the WAL) are never held up for long.
const vacuumBatchPages = 256

// retentionKey is where the last run is remembered, in newer Hermes'
// state_meta table when the file has one.
const retentionKey = "sessiondb.retention.last_run"

// ApplyRetention runs a retention policy (IMP-13): PruneSessions for each
// source (or all), then, if at least a quarter of the file is free pages,
// incremental vacuum in small batches on a file created with
// auto_vacuum=INCREMENTAL. Other files report NeedsVacuumInto instead. It
// never runs an in-place VACUUM, which rewrites the whole file under the
// write lock and breaks WAL-shipping replication.
func (s *Store) ApplyRetention(ctx context.Context, p sessiondb.RetentionPolicy) (*sessiondb.RetentionReport, error) {
	if err := p.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "retention")
	}
	if s.w == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "retention: store opened read-only")
	}
	rep := &sessiondb.RetentionReport{}
	now := s.now()
	if p.MinInterval > 0 {
		if last, ok := s.lastRetention(ctx); !p.Due(now, last, ok) {
			rep.Skipped = true
			return rep, nil
		}
	}
	var err error
	if rep.Pruned, err = p.Prune(ctx, s); err != nil {
		return nil, err
	}
	free, total, autoVac, err := s.pageStats(ctx)
	if err != nil {
		return nil, err
	}
	if total > 0 && float64(free)/float64(total) >= reclaimThreshold {
		if autoVac == 2 {
			freed, err := s.IncrementalVacuum(ctx, free)
			rep.FreedPages = freed
			if err != nil {
				return rep, err
			}
		} else {
			rep.NeedsVacuumInto = true
		}
	}
	s.recordRetention(ctx, now)
	return rep, nil
}

func (s *Store) pageStats(ctx context.Context) (free, total int64, autoVacuum int, err error) {
	for _, q := range []struct {
		sql  string
		dest any
	}{{"PRAGMA freelist_count", &free}, {"PRAGMA page_count", &total}, {"PRAGMA auto_vacuum", &autoVacuum}} {
		if err := s.db.QueryRowContext(ctx, q.sql).Scan(q.dest); err != nil {
			return 0, 0, 0, s.readErr(err, "retention: %s", q.sql)
		}
	}
	return free, total, autoVacuum, nil
}

// IncrementalVacuum returns up to pages free pages to the file system in
// batches of a few hundred pages, each its own write transaction, and
// reports how many it freed. It does nothing on a file without
// auto_vacuum=INCREMENTAL.
func (s *Store) IncrementalVacuum(ctx context.Context, pages int64) (int64, error) {
	var freed int64
	for freed < pages {
		if err := ctx.Err(); err != nil {
			return freed, sqlitedb.Wrap(err, "incremental vacuum")
		}
		before, _, autoVac, err := s.pageStats(ctx)
		if err != nil {
			return freed, err
		}
		if before == 0 || autoVac != 2 {
			return freed, nil
		}
		n := min(int64(vacuumBatchPages), pages-freed)
		err = s.write(ctx, "incremental vacuum", func(tx *sqlitedb.Tx) error {
			return tx.ExecScript("PRAGMA incremental_vacuum(" + strconv.FormatInt(n, 10) + ")")
		})
		if err != nil {
			return freed, err
		}
		after, _, _, err := s.pageStats(ctx)
		if err != nil {
			return freed, err
		}
		if after >= before {
			return freed, nil // nothing moved: stop rather than spin
		}
		freed += before - after
	}
	return freed, nil
}

// VacuumInto writes a compacted copy of the store to path (which must not
// exist or be empty), 0600 in a 0700 folder, without blocking writers for
// long: the copy reads one snapshot. The operator swaps it in while no
// process has the store open.
//
// The copy is made in a new file beside path and renamed over it once
// synced, so a failed or killed copy leaves no half-made file at path; a
// symbolic link or anything but a regular file at path is refused, never
// followed.
func (s *Store) VacuumInto(ctx context.Context, path string) error {
	if err := safefile.CheckTarget("vacuum into", path); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Size() > 0 {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "vacuum into %s: the file exists and is not empty", path)
	}
	if dir := filepath.Dir(path); !pathExists(dir) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return sessiondb.Wrap(sessiondb.EINVALID, err, "vacuum into %s", path)
		}
		// MkdirAll's mode passes through the umask; say exactly what we mean.
		_ = os.Chmod(dir, 0o700)
	}
	f, err := safefile.Create("vacuum into", path, 0o600)
	if err != nil {
		return err
	}
	defer f.Abort()
	// VACUUM INTO takes an absent or empty file: the new temporary one.
	if _, err := s.db.ExecContext(ctx, "VACUUM INTO ?", f.Name()); err != nil {
		return s.readErr(err, "vacuum into %s", path)
	}
	return f.Commit()
}

// pathExists reports whether anything (a link included) is at path.
func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// lastRetention reads the last run's time: from state_meta when the file
// has it (so separate processes see it), else from this Store's memory.
func (s *Store) lastRetention(ctx context.Context) (time.Time, bool) {
	if s.si.tables["state_meta"] {
		var v sql.NullString
		if err := s.db.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", retentionKey).Scan(&v); err == nil {
			if f, err := strconv.ParseFloat(v.String, 64); err == nil {
				return sessiondb.FromEpochSeconds(f), true
			}
		}
	}
	s.retentionMu.Lock()
	defer s.retentionMu.Unlock()
	return s.lastRetentionRun, !s.lastRetentionRun.IsZero()
}

func (s *Store) recordRetention(ctx context.Context, t time.Time) {
	s.retentionMu.Lock()
	s.lastRetentionRun = t
	s.retentionMu.Unlock()
	if !s.si.tables["state_meta"] || s.noAdditions {
		return
	}
	v := strconv.FormatFloat(sessiondb.EpochSeconds(t), 'f', -1, 64)
	err := s.write(ctx, "record retention run", func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO state_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", retentionKey, v)
		return err
	})
	if err != nil {
		s.log.Warn("could not record the retention run", "err", err)
	}
}
