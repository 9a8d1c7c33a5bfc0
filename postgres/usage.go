package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// usageSums adds costs as numeric, exactly, then rounds once: a float sum
// would depend on the order the rows come in, and the figures would differ
// in the last digit from the SQLite backend's, whose SUM compensates its
// rounding errors.
const usageSums = `count(*), COALESCE(SUM(message_count), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
    COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0),
    COALESCE(SUM(estimated_cost_usd::numeric)::double precision, 0), COALESCE(SUM(actual_cost_usd::numeric)::double precision, 0)`

// Usage sums tokens and costs of the sessions f selects, by model and by
// source, plus the f.Top sessions that cost most (see sessiondb.UsageService).
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return sessiondb.ReadUsage(ctx, usageReader{s}, f, func(n int) string { return "$" + strconv.Itoa(n) })
}

// usageReader is ReadUsage's view of the store.
type usageReader struct{ s *Store }

func (r usageReader) UsageGroups(ctx context.Context, by sessiondb.UsageBreakdown, cond string, args []any) ([]sessiondb.UsageRow, error) {
	// Text keys sort byte-wise (COLLATE "C"), as SQLite's BINARY collation.
	key, order := `source COLLATE "C"`, " GROUP BY 1 ORDER BY 9 DESC, 1"
	switch by {
	case sessiondb.UsageByModel:
		key = `COALESCE(model, '') COLLATE "C"`
	case sessiondb.UsageByDay:
		// The UTC day of started_at, as the SQLite backend's date().
		key, order = "to_char(to_timestamp(started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')", " GROUP BY 1 ORDER BY 1"
	}
	return r.s.usageRows(ctx, "SELECT "+key+", "+usageSums+" FROM sessions"+cond+order, args...)
}

func (r usageReader) UsageTop(ctx context.Context, cond string, args []any, limit int) ([]sessiondb.UsageRow, error) {
	args = append(args[:len(args):len(args)], limit)
	return r.s.usageRows(ctx, `SELECT id, 1, COALESCE(message_count, 0), COALESCE(input_tokens, 0), COALESCE(output_tokens, 0),
    COALESCE(cache_read_tokens, 0), COALESCE(cache_write_tokens, 0), COALESCE(reasoning_tokens, 0),
    COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0) FROM sessions`+cond+`
ORDER BY COALESCE(actual_cost_usd, estimated_cost_usd, 0) DESC,
    COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0) + COALESCE(reasoning_tokens, 0) DESC,
    started_at DESC, seq LIMIT $`+strconv.Itoa(len(args)), args...)
}

func (s *Store) usageRows(ctx context.Context, q string, args ...any) ([]sessiondb.UsageRow, error) {
	out := []sessiondb.UsageRow{}
	err := each(ctx, s.pool, q, args, func(row pgx.Rows) error {
		var r sessiondb.UsageRow
		if err := row.Scan(&r.Key, &r.Sessions, &r.Messages, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens,
			&r.CacheWriteTokens, &r.ReasoningTokens, &r.EstimatedCostUSD, &r.ActualCostUSD); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, s.readErr(err, "usage report")
	}
	return out, nil
}
