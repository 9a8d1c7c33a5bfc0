package storetest

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// retentionSession is one session of a retention case, placed in time
// relative to the clock's "now".
type retentionSession struct {
	id, source, parent string
	ageDays            float64 // started this many days ago
	endAgeDays         float64 // ended this many days ago; < 0 = still open
}

// plant creates ss at their times (oldest first), each with one message,
// ends the ended ones, and sets the clock back to now.
func (e *env) plant(ss []retentionSession) {
	e.t.Helper()
	now := e.clock.Now()
	at := func(days float64) time.Time { return now.Add(-time.Duration(days * float64(24*time.Hour))) }
	for _, s := range ss {
		e.clock.Set(at(s.ageDays))
		e.createWith(sessiondb.NewSession{ID: s.id, Source: s.source, ParentSessionID: s.parent})
		e.msg(s.id, "user", "heron "+s.id)
	}
	for _, s := range ss {
		if s.endAgeDays >= 0 {
			e.clock.Set(at(s.endAgeDays))
			e.end(s.id, "user_exit")
		}
	}
	e.clock.Set(now)
}

// left returns the ids of every session in the store, sorted.
func (e *env) left() []string {
	e.t.Helper()
	all, err := e.s.SearchSessions(e.ctx, "", 1000, 0)
	noErr(e.t, "SearchSessions", err)
	return sorted(ids(all))
}

// testRetention covers ApplyRetention: which sessions a policy prunes, the
// MinInterval between runs, and the policies it refuses.
func testRetention(t *testing.T, h Harness) {
	// Oldest first, as plant needs.
	world := []retentionSession{
		{id: "cli-old", source: "cli", ageDays: 10, endAgeDays: 9},
		{id: "tg-old", source: "telegram", ageDays: 10, endAgeDays: 9},
		{id: "cron-old", source: "cron", ageDays: 10, endAgeDays: 9},
		{id: "cli-old-open", source: "cli", ageDays: 10, endAgeDays: -1},
		{id: "kid", source: "cli", parent: "cli-old", ageDays: 3, endAgeDays: 2},
		{id: "cli-young", source: "cli", ageDays: 2, endAgeDays: 1},
	}
	cases := []struct {
		name    string
		p       sessiondb.RetentionPolicy
		pruned  int
		left    []string
		orphans []string // sessions whose parent was pruned
	}{
		{name: "every source", p: sessiondb.RetentionPolicy{MaxAgeDays: 5}, pruned: 3,
			left: []string{"cli-old-open", "cli-young", "kid"}, orphans: []string{"kid"}},
		{name: "listed sources only", p: sessiondb.RetentionPolicy{MaxAgeDays: 5, Sources: []string{"cli", "telegram"}}, pruned: 2,
			left: []string{"cli-old-open", "cli-young", "cron-old", "kid"}, orphans: []string{"kid"}},
		{name: "one other source", p: sessiondb.RetentionPolicy{MaxAgeDays: 5, Sources: []string{"cron"}}, pruned: 1,
			left: []string{"cli-old", "cli-old-open", "cli-young", "kid", "tg-old"}},
		{name: "unknown source", p: sessiondb.RetentionPolicy{MaxAgeDays: 5, Sources: []string{"discord"}}, pruned: 0,
			left: []string{"cli-old", "cli-old-open", "cli-young", "cron-old", "kid", "tg-old"}},
		{name: "nothing old enough", p: sessiondb.RetentionPolicy{MaxAgeDays: 20}, pruned: 0,
			left: []string{"cli-old", "cli-old-open", "cli-young", "cron-old", "kid", "tg-old"}},
		{name: "short age takes every ended session", p: sessiondb.RetentionPolicy{MaxAgeDays: 0.5}, pruned: 5,
			left: []string{"cli-old-open"}},
		{name: "first run with an interval runs", p: sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: time.Hour}, pruned: 3,
			left: []string{"cli-old-open", "cli-young", "kid"}, orphans: []string{"kid"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			e.plant(world)
			rep, err := e.s.ApplyRetention(e.ctx, tc.p)
			noErr(t, "ApplyRetention", err)
			if rep == nil || rep.Skipped || rep.Pruned != tc.pruned {
				t.Fatalf("report = %+v, want %d pruned and not skipped", rep, tc.pruned)
			}
			if got := e.left(); !reflect.DeepEqual(got, sorted(tc.left)) {
				t.Errorf("sessions left %v, want %v", got, sorted(tc.left))
			}
			if n, err := e.s.MessageCount(e.ctx, ""); err != nil || n != int64(len(tc.left)) {
				t.Errorf("MessageCount = %d, %v; want %d (the pruned sessions' messages go too)", n, err, len(tc.left))
			}
			for _, id := range tc.orphans {
				if p := e.get(id).ParentSessionID; p != nil {
					t.Errorf("%s parent = %s, want NULL", id, *p)
				}
			}
		})
	}

	t.Run("MinInterval", func(t *testing.T) {
		e := newEnv(t, h)
		e.plant(world[:1])
		hourly := sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: time.Hour}
		steps := []struct {
			name    string
			advance time.Duration // before the run
			plant   *retentionSession
			p       sessiondb.RetentionPolicy
			skipped bool
			pruned  int
		}{
			{name: "first run", p: hourly, pruned: 1},
			{name: "within the interval is skipped", advance: 30 * time.Minute,
				plant: &retentionSession{id: "second", source: "cli", ageDays: 10, endAgeDays: 9}, p: hourly, skipped: true},
			// A skipped run is not a run: the hour counts from the first.
			{name: "past the interval runs", advance: 31 * time.Minute, p: hourly, pruned: 1},
			{name: "zero interval always runs", plant: &retentionSession{id: "third", source: "cli", ageDays: 10, endAgeDays: 9},
				p: sessiondb.RetentionPolicy{MaxAgeDays: 5}, pruned: 1},
			{name: "a zero-interval run counts as a run", advance: time.Minute,
				plant: &retentionSession{id: "fourth", source: "cli", ageDays: 10, endAgeDays: 9}, p: hourly, skipped: true},
			{name: "a longer interval", advance: 2 * time.Hour, p: sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: 3 * time.Hour}, skipped: true},
			{name: "then it runs", advance: time.Hour, p: sessiondb.RetentionPolicy{MaxAgeDays: 5, MinInterval: 3 * time.Hour}, pruned: 1},
		}
		for _, st := range steps {
			e.clock.Advance(st.advance)
			if st.plant != nil {
				e.plant([]retentionSession{*st.plant})
			}
			before := e.left()
			rep, err := e.s.ApplyRetention(e.ctx, st.p)
			noErr(t, st.name, err)
			if rep == nil || rep.Skipped != st.skipped || rep.Pruned != st.pruned {
				t.Fatalf("%s: report = %+v, want skipped=%v pruned=%d", st.name, rep, st.skipped, st.pruned)
			}
			if after := e.left(); st.skipped && !reflect.DeepEqual(after, before) {
				t.Errorf("%s: a skipped run changed the sessions: %v -> %v", st.name, before, after)
			}
		}
		if got := e.left(); len(got) != 0 {
			t.Errorf("sessions left %v, want none", got)
		}
	})

	t.Run("BadPolicy", func(t *testing.T) {
		e := newEnv(t, h)
		e.plant(world)
		cases := []struct {
			name  string
			p     sessiondb.RetentionPolicy
			field string
		}{
			{"zero age", sessiondb.RetentionPolicy{}, "max age"},
			{"negative age", sessiondb.RetentionPolicy{MaxAgeDays: -1}, "max age"},
			{"NaN age", sessiondb.RetentionPolicy{MaxAgeDays: math.NaN()}, "max age"},
			{"infinite age", sessiondb.RetentionPolicy{MaxAgeDays: math.Inf(1)}, "max age"},
			{"negative interval", sessiondb.RetentionPolicy{MaxAgeDays: 1, MinInterval: -time.Second}, "min interval"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				rep, err := e.s.ApplyRetention(e.ctx, tc.p)
				wantCode(t, "ApplyRetention", err, sessiondb.EINVALID)
				if rep != nil || !strings.Contains(err.Error(), tc.field) {
					t.Errorf("ApplyRetention = %+v, %v; want no report and an error naming %s", rep, err, tc.field)
				}
			})
		}
		if got := e.left(); len(got) != len(world) {
			t.Errorf("refused policies pruned sessions: %v left", got)
		}
	})
}
