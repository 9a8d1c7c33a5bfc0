package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

const usageSums = `count(*), COALESCE(SUM(message_count), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
    COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(reasoning_tokens), 0),
    COALESCE(SUM(estimated_cost_usd), 0), COALESCE(SUM(actual_cost_usd), 0)`

// Usage sums tokens and costs of the sessions f selects, by model (""
// for sessions without one) and by source, each ordered by estimated cost
// then key, plus the f.Top sessions that cost most (actual cost when
// known, else estimated; then total tokens).
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return sessiondb.ReadUsage(ctx, usageReader{s}, f, func(int) string { return "?" })
}

// usageReader is ReadUsage's view of the store.
type usageReader struct{ s *Store }

func (r usageReader) UsageGroups(ctx context.Context, by sessiondb.UsageBreakdown, cond string, args []any) ([]sessiondb.UsageRow, error) {
	key, order := "source", " GROUP BY 1 ORDER BY 9 DESC, 1"
	switch by {
	case sessiondb.UsageByModel:
		key = "COALESCE(model, '')"
	case sessiondb.UsageByDay:
		// The day is cut from started_at in UTC as SQLite's date() does.
		key, order = "date(started_at, 'unixepoch')", " GROUP BY 1 ORDER BY 1"
	}
	return r.s.usageRows(ctx, "SELECT "+key+", "+usageSums+" FROM sessions"+cond+order, args...)
}

func (r usageReader) UsageTop(ctx context.Context, cond string, args []any, limit int) ([]sessiondb.UsageRow, error) {
	return r.s.usageRows(ctx, `SELECT id, 1, COALESCE(message_count, 0), COALESCE(input_tokens, 0), COALESCE(output_tokens, 0),
    COALESCE(cache_read_tokens, 0), COALESCE(cache_write_tokens, 0), COALESCE(reasoning_tokens, 0),
    COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0) FROM sessions`+cond+`
ORDER BY COALESCE(actual_cost_usd, estimated_cost_usd, 0) DESC,
    COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0) + COALESCE(reasoning_tokens, 0) DESC,
    started_at DESC LIMIT ?`, append(args[:len(args):len(args)], limit)...)
}

func (s *Store) usageRows(ctx context.Context, q string, args ...any) ([]sessiondb.UsageRow, error) {
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.UsageRow{}, func(row sqlitedb.Row) (sessiondb.UsageRow, error) {
		var r sessiondb.UsageRow
		err := row.Scan(&r.Key, &r.Sessions, &r.Messages, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens,
			&r.CacheWriteTokens, &r.ReasoningTokens, &r.EstimatedCostUSD, &r.ActualCostUSD)
		return r, err
	})
	if err != nil {
		return nil, s.readErr(err, "usage report")
	}
	return out, nil
}
