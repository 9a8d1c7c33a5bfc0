package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// retentionKey is where the last retention run is remembered.
const retentionKey = "retention.last_run"

// ApplyRetention runs a retention policy (IMP-13): PruneSessions for each
// source (or all). PostgreSQL reclaims the space itself (autovacuum), so
// nothing is vacuumed here and FreedPages stays 0. The last run is kept in
// the schema, so every process sharing the store honours MinInterval.
func (s *Store) ApplyRetention(ctx context.Context, p sessiondb.RetentionPolicy) (*sessiondb.RetentionReport, error) {
	if err := p.Validate(); err != nil {
		return nil, sessiondb.Wrap("", err, "retention")
	}
	if s.readOnly {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "retention: store opened read-only")
	}
	rep := &sessiondb.RetentionReport{}
	now := s.now()
	if p.MinInterval > 0 {
		var v string
		err := s.pool.QueryRow(ctx, "SELECT value FROM sessiondb_meta WHERE key = $1", retentionKey).Scan(&v)
		if err != nil && !noRows(err) {
			return nil, s.readErr(err, "retention: read the last run")
		}
		f, perr := strconv.ParseFloat(v, 64)
		if !p.Due(now, sessiondb.FromEpochSeconds(f), err == nil && perr == nil) {
			rep.Skipped = true
			return rep, nil
		}
	}
	var err error
	if rep.Pruned, err = p.Prune(ctx, s); err != nil {
		return nil, err
	}
	if err := s.recordRetention(ctx, now); err != nil {
		return nil, err
	}
	return rep, nil
}

func (s *Store) recordRetention(ctx context.Context, t time.Time) error {
	v := strconv.FormatFloat(sessiondb.EpochSeconds(t), 'f', -1, 64)
	return s.write(ctx, "record the retention run", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO sessiondb_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", retentionKey, v)
		return err
	})
}
