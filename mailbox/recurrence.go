package mailbox

import (
	"time"
)

// Recurrence is a parsed cron expression.
type Recurrence struct {
	expr string
}

// ParseRecurrence parses a cron expression: 5 fields (minute hour
// day-of-month month day-of-week) or 6 with leading seconds; lists, ranges,
// steps and names; a restricted day-of-month and day-of-week match either.
// Errors have code invalid.
func ParseRecurrence(expr string) (Recurrence, error) {
	return Recurrence{}, notImplemented("ParseRecurrence")
}

// Next returns the first occurrence strictly after t, computed in loc.
func (r Recurrence) Next(t time.Time, loc *time.Location) time.Time {
	return time.Time{}
}

// String returns the expression as given.
func (r Recurrence) String() string { return r.expr }
