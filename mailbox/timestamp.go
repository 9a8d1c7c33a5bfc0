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

// NanoClaw's host and agent test messages_out.deliver_after with
// deliver_after <= datetime('now'), comparing the stored text as it is
// (contract section 2), so our agent writes that column in the form of
// SQLite's datetime('now') instead of TimeFormat: 'T' sorts after the
// space, and an ISO value of the same day would compare as later than any
// datetime('now') until the next UTC day.

// DeliverAfterFormat is how messages_out.deliver_after is stored: UTC,
// whole seconds, SQLite's datetime('now') form.
const DeliverAfterFormat = "2006-01-02 15:04:05"

// FormatDeliverAfter renders t in DeliverAfterFormat, rounded up to the
// next whole second: a delayed message is never delivered early.
func FormatDeliverAfter(t time.Time) string {
	t = t.UTC()
	if r := t.Truncate(time.Second); r.Before(t) {
		t = r.Add(time.Second)
	}
	return t.Format(DeliverAfterFormat)
}
