package sessiondb

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestRetentionDue(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	hour := RetentionPolicy{MaxAgeDays: 1, MinInterval: time.Hour}
	for _, tc := range []struct {
		name string
		p    RetentionPolicy
		last time.Time
		ok   bool
		want bool
	}{
		{"no interval, just ran", RetentionPolicy{MaxAgeDays: 1}, now, true, true},
		{"no run recorded", hour, time.Time{}, false, true},
		{"ran a minute ago", hour, now.Add(-time.Minute), true, false},
		{"ran exactly the interval ago", hour, now.Add(-time.Hour), true, true},
		{"ran two hours ago", hour, now.Add(-2 * time.Hour), true, true},
		{"recorded in the future", hour, now.Add(time.Hour), true, false},
	} {
		if got := tc.p.Due(now, tc.last, tc.ok); got != tc.want {
			t.Errorf("%s: Due = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// pruneLog is a PruneSessions that records its calls and deletes n[source]
// sessions, failing on the source "bad".
type pruneLog struct {
	calls []string
	n     map[string]int
}

func (l *pruneLog) PruneSessions(_ context.Context, days float64, source string) (int, error) {
	l.calls = append(l.calls, source)
	if days != 30 {
		return 0, errors.New("wrong age")
	}
	if source == "bad" {
		return 0, Errorf(EINTERNAL, "prune %s: broken", source)
	}
	return l.n[source], nil
}

func TestRetentionPruneEachSourceOrAll(t *testing.T) {
	l := &pruneLog{n: map[string]int{"": 7, "cli": 2, "telegram": 3}}
	n, err := RetentionPolicy{MaxAgeDays: 30}.Prune(context.Background(), l)
	if err != nil || n != 7 || !reflect.DeepEqual(l.calls, []string{""}) {
		t.Fatalf("every source: %d, %v after calls %q; want 7 after one call for all", n, err, l.calls)
	}
	l.calls = nil
	n, err = RetentionPolicy{MaxAgeDays: 30, Sources: []string{"cli", "telegram"}}.Prune(context.Background(), l)
	if err != nil || n != 5 || !reflect.DeepEqual(l.calls, []string{"cli", "telegram"}) {
		t.Fatalf("two sources: %d, %v after calls %q; want 5 after cli, telegram", n, err, l.calls)
	}
	l.calls = nil
	n, err = RetentionPolicy{MaxAgeDays: 30, Sources: []string{"cli", "bad", "telegram"}}.Prune(context.Background(), l)
	if ErrorCode(err) != EINTERNAL || n != 0 || !reflect.DeepEqual(l.calls, []string{"cli", "bad"}) {
		t.Fatalf("failing source: %d, %v after calls %q; want internal after cli, bad", n, err, l.calls)
	}
}
