package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Usage sums tokens and costs of the sessions f selects (see
// sessiondb.UsageService): by model split by the file's
// session_model_usage where it has one, reading as 0 what columns an
// older or newer file lacks.
func (s *Store) Usage(ctx context.Context, f sessiondb.UsageFilter) (*sessiondb.UsageReport, error) {
	return sessiondb.ReadUsage(ctx, usageReader{s}, f)
}

// usageReader is ReadUsage's view of the store.
type usageReader struct{ s *Store }

func (r usageReader) UsageSQL() sessiondb.UsageSQL { return r.s.usageSQL() }

func (r usageReader) UsageRows(ctx context.Context, q string, args []any) ([]sessiondb.UsageRow, error) {
	return r.s.usageRows(ctx, "usage report", q, args)
}

// usageSQL is the usage queries' dialect over the columns the file has.
func (s *Store) usageSQL() sessiondb.UsageSQL {
	return sessiondb.UsageSQL{
		Mark: func(int) string { return "?" },
		Has: func(table, col string) bool {
			switch table {
			case "sessions":
				return s.si.sessCols[col]
			case "session_model_usage":
				return s.si.usageCols[col]
			}
			return false
		},
		// The day is cut from started_at in UTC as SQLite's date() does.
		Day: "date(s.started_at, 'unixepoch')",
	}
}

func (s *Store) usageRows(ctx context.Context, what, q string, args []any) ([]sessiondb.UsageRow, error) {
	out, err := sqlitedb.Append(ctx, readers{s}, q, args, []sessiondb.UsageRow{}, func(row sqlitedb.Row) (sessiondb.UsageRow, error) {
		return sessiondb.ScanUsageRow(row.Scan)
	})
	if err != nil {
		return nil, s.readErr(err, "%s", what)
	}
	return out, nil
}
