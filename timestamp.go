package sessiondb

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// TimestampFormat is how NanoClaw's files store a moment as text, and how
// our writers store one in the central registry and the mailbox files: UTC
// with milliseconds and a Z, the form JavaScript's toISOString() gives. Its
// fixed width makes text order time order.
const TimestampFormat = "2006-01-02T15:04:05.000Z"

// FormatTimestamp renders t in TimestampFormat (converted to UTC).
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampFormat) }

// timestampLayouts are the forms ParseTimestamp accepts, most common first:
// ours, SQLite's datetime('now') (which NanoClaw's ncl writes in some
// columns; zone-less means UTC), and other ISO-8601 shapes.
var timestampLayouts = []string{
	TimestampFormat,
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTimestamp reads a stored timestamp in any of the forms NanoClaw's
// programs write: TimestampFormat, SQLite's "YYYY-MM-DD HH:MM:SS" (UTC), or
// ISO-8601 with an offset. The result is in UTC; ok is false for anything
// else.
func ParseTimestamp(s string) (t time.Time, ok bool) {
	v := strings.TrimSpace(s)
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// NewID returns <prefix>-<unix ms>-<6 base-36 characters>, NanoClaw's form
// for generated ids (prefixes "sess", "mg", "appr", "nsa", "sys", "msg",
// "task", ...).
func NewID(prefix string, now time.Time) string {
	var r [6]byte
	for i := range r {
		r[i] = base36[rand.IntN(len(base36))]
	}
	return prefix + "-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + string(r[:])
}
