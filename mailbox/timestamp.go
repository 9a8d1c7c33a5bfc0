package mailbox

import (
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// TimeFormat is how our writers store timestamps in the mailbox files: UTC
// with milliseconds and a Z, the form JavaScript's toISOString() gives.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// sqliteTimeFormat is SQLite's datetime('now') form, which NanoClaw writes in
// several columns; zone-less means UTC.
const sqliteTimeFormat = "2006-01-02 15:04:05"

// FormatTime renders t in TimeFormat (converted to UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// readLayouts are the forms readers accept, most common first.
var readLayouts = []string{
	TimeFormat,
	sqliteTimeFormat,
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTime parses a mailbox timestamp: our TimeFormat, SQLite's
// "YYYY-MM-DD HH:MM:SS" (zone-less is UTC), or ISO-8601 with an offset. The
// result is in UTC. Anything else is an invalid error: such a value would
// never compare as due in SQL.
func ParseTime(s string) (time.Time, error) {
	v := strings.TrimSpace(s)
	for _, l := range readLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, sessiondb.Errorf(sessiondb.EINVALID, "timestamp %q is not in a form SQLite's datetime() reads (want %s)", errtext.Clip(s, 64), TimeFormat)
}
