package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// Usage sums tokens and costs of the sessions f selects, split by model
// through session_model_usage (see sessiondb.UsageService).
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return sessiondb.ReadUsage(ctx, usageReader{s}, f)
}

// usageReader is ReadUsage's view of the store.
type usageReader struct{ s *Store }

func (r usageReader) UsageSQL() sessiondb.UsageSQL { return usageSQL }

func (r usageReader) UsageRows(ctx context.Context, q string, args []any) ([]sessiondb.UsageRow, error) {
	return r.s.usageRows(ctx, "usage report", q, args)
}

// usageSQL is the usage queries' dialect. Every column exists (migration
// 002 added api_call_count and session_model_usage). Costs are summed as
// numeric, exactly, then rounded once: a float sum would depend on the
// order the rows come in, and the figures would differ in the last digit
// from the SQLite backend's, whose SUM compensates its rounding errors.
// Text keys sort byte-wise (COLLATE "C"), as SQLite's BINARY collation.
var usageSQL = sessiondb.UsageSQL{
	Mark:    func(n int) string { return "$" + strconv.Itoa(n) },
	Exact:   "::numeric",
	Float:   "::double precision",
	Collate: ` COLLATE "C"`,
	// The UTC day of started_at, as the SQLite backend's date().
	Day:      "to_char(to_timestamp(s.started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
	Tiebreak: ", s.seq",
}

func (s *Store) usageRows(ctx context.Context, what, q string, args []any) ([]sessiondb.UsageRow, error) {
	out := []sessiondb.UsageRow{}
	err := each(ctx, s.pool, q, args, func(row pgx.Rows) error {
		r, err := sessiondb.ScanUsageRow(row.Scan)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, s.readErr(err, "%s", what)
	}
	return out, nil
}
