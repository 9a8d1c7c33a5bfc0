package mailbox

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/errtext"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// cronParser reads 5 fields, or 6 with leading seconds. Descriptors
// (@daily) and CRON_TZ= prefixes are not part of the contract: the time zone
// is the host's.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Recurrence is a parsed cron expression.
type Recurrence struct {
	expr  string
	sched cron.Schedule
}

// MaxRecurrenceLen bounds a cron expression's length.
const MaxRecurrenceLen = 256

// ParseRecurrence parses a cron expression: 5 fields (minute hour
// day-of-month month day-of-week) or 6 with leading seconds; lists, ranges,
// steps and month/day names; a restricted day-of-month and day-of-week
// match either. An expression that never fires is refused too. Errors have
// code invalid.
func ParseRecurrence(expr string) (r Recurrence, err error) {
	bad := func(why string) (Recurrence, error) {
		return Recurrence{}, sessiondb.Errorf(sessiondb.EINVALID, "recurrence %q: %s", errtext.Clip(expr, 64), why)
	}
	s := strings.TrimSpace(expr)
	switch {
	case s == "":
		return bad("empty")
	case len(s) > MaxRecurrenceLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxRecurrenceLen))
	case strings.HasPrefix(s, "@"), strings.Contains(s, "TZ="):
		return bad("descriptors and time zones are not accepted; use 5 or 6 cron fields (the zone is the host's)")
	case strings.ContainsFunc(s, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }):
		return bad("contains a control character")
	}
	defer func() {
		// The parser is third-party code fed user input: a panic in it must
		// become an error, not take the host down.
		if p := recover(); p != nil {
			r, err = bad(fmt.Sprint("unparseable: ", p))
		}
	}()
	sched, perr := cronParser.Parse(s)
	if perr != nil {
		return bad(perr.Error())
	}
	// The library gives up after five years without a match (Feb 30).
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if sched.Next(ref).IsZero() {
		return bad("never fires")
	}
	return Recurrence{expr: expr, sched: sched}, nil
}

// Next returns the first occurrence strictly after t, in UTC, reading the
// expression as wall-clock time in loc (nil: UTC). Zero when there is none.
//
// The schedule is matched against wall-clock readings, not instants, so a
// daylight-saving change neither skips nor doubles a fixed-time run: a time
// that does not exist on the spring-forward day (02:30 in New York) runs at
// the same offset after the jump (03:30), and a time repeated on the
// fall-back day runs once, at its first pass.
func (r Recurrence) Next(t time.Time, loc *time.Location) time.Time {
	if r.sched == nil {
		return time.Time{}
	}
	if loc == nil {
		loc = time.UTC
	}
	// Wall-clock arithmetic happens in UTC, which has no transitions.
	w := wallUTC(t.In(loc))
	for i := 0; i < 8; i++ {
		w = r.sched.Next(w)
		if w.IsZero() {
			return w
		}
		real := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc)
		if got := wallUTC(real.In(loc)); !got.Equal(w) {
			// w falls in a spring-forward gap; time.Date picked an offset
			// that lands before the gap. Move past it by the gap's size.
			d := w.Sub(got)
			if d < 0 {
				d = -d
			}
			real = real.Add(d)
		}
		// During a repeated hour the wall reading can map to an instant at
		// or before t (the first pass already happened): take the next one.
		if real.After(t) {
			return real.UTC()
		}
	}
	return time.Time{}
}

// wallUTC returns t's wall-clock reading as a UTC time.
func wallUTC(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// String returns the expression as given.
func (r Recurrence) String() string { return r.expr }

// AdvanceRecurrences inserts the next occurrence of every completed or
// failed row that still has a recurrence — the first time strictly after
// now in the host's zone, so missed periods collapse into one run — and
// clears the source row's recurrence, in one transaction. A series that
// already has a pending or paused row is only cleared, never forked. A bad
// legacy expression is logged once and left alone. It returns the rows
// inserted.
func (h *Host) AdvanceRecurrences(ctx context.Context, ref SessionRef) (int, error) {
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	inserted := 0
	err := h.withInbound(ctx, ref, func(tx *sqlitedb.Tx) error {
		var err error
		inserted, err = h.advanceTx(ctx, tx, ref)
		return err
	})
	return inserted, err
}

// advanceTx is AdvanceRecurrences inside an open inbound transaction.
func (h *Host) advanceTx(ctx context.Context, tx *sqlitedb.Tx, ref SessionRef) (int, error) {
	s := h.session(ref)
	inserted := 0
	now := h.now()
	type src struct {
		id, kind, content, recurrence, series string
		routing                               Routing
	}
	srcs, err := collect(tx, `SELECT id, kind, content, platform_id, channel_type, thread_id, recurrence, series_id
 FROM messages_in WHERE status IN ('completed', 'failed') AND recurrence IS NOT NULL`, nil, func(row sqlitedb.Row) (src, error) {
		var x src
		var pid, ct, tid, series sql.NullString
		err := row.Scan(&x.id, &x.kind, &x.content, &pid, &ct, &tid, &x.recurrence, &series)
		x.routing = Routing{ChannelType: ct.String, PlatformID: pid.String, ThreadID: tid.String}
		x.series = series.String
		if x.series == "" {
			x.series = x.id
		}
		return x, err
	})
	if err != nil {
		return inserted, err
	}
	for _, x := range srcs {
		rec, err := ParseRecurrence(x.recurrence)
		if err != nil {
			h.mu.Lock()
			logged := s.badCron[x.id]
			if s.badCron == nil {
				s.badCron = map[string]bool{}
			}
			s.badCron[x.id] = true
			h.mu.Unlock()
			if !logged {
				h.log.Warn("mailbox: bad recurrence left alone", "session", ref.String(), "id", x.id, "err", err)
			}
			continue
		}
		var live int
		if err := tx.QueryRow("SELECT count(*) FROM messages_in WHERE series_id = ? AND status IN ('pending', 'paused')", x.series).Scan(&live); err != nil {
			return inserted, err
		}
		if live == 0 {
			next := rec.Next(now, h.loc)
			if !next.IsZero() {
				prefix := "msg"
				if x.kind == KindTask {
					prefix = "task"
				}
				m := InboundMessage{ID: NewID(prefix, now), Kind: x.kind, Routing: x.routing, Timestamp: now,
					ProcessAfter: next, Recurrence: x.recurrence, SeriesID: x.series}
				if _, _, err := h.insertInbound(ctx, tx, ref, m, []byte(x.content)); err != nil {
					return inserted, err
				}
				inserted++
			}
		}
		if _, err := tx.Exec("UPDATE messages_in SET recurrence = NULL WHERE id = ?", x.id); err != nil {
			return inserted, err
		}
	}
	return inserted, nil
}
