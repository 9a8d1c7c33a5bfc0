package mailbox

import (
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
)

// TimeFormat is how our writers store timestamps in the mailbox files: UTC
// with milliseconds and a Z, the form JavaScript's toISOString() gives
// (sessiondb.TimestampFormat).
const TimeFormat = sessiondb.TimestampFormat

// FormatTime renders t in TimeFormat (converted to UTC).
func FormatTime(t time.Time) string { return sessiondb.FormatTimestamp(t) }

// ParseTime parses a mailbox timestamp: our TimeFormat, SQLite's
// "YYYY-MM-DD HH:MM:SS" (zone-less is UTC), or ISO-8601 with an offset
// (sessiondb.ParseTimestamp). The result is in UTC. Anything else is an
// invalid error: such a value would never compare as due in SQL.
func ParseTime(s string) (time.Time, error) {
	if t, ok := sessiondb.ParseTimestamp(s); ok {
		return t, nil
	}
	return time.Time{}, sessiondb.Errorf(sessiondb.EINVALID, "timestamp %q is not in a form SQLite's datetime() reads (want %s)", errtext.Clip(s, 64), TimeFormat)
}
