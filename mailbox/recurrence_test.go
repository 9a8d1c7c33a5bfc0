package mailbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func TestParseRecurrence(t *testing.T) {
	cases := []struct {
		name string
		expr string
		ok   bool
	}{
		{"five fields", "0 9 * * 1-5", true},
		{"six fields with seconds", "30 0 9 * * *", true},
		{"lists ranges steps", "0,30 8-18/2 1,15 */3 *", true},
		{"names", "0 9 * JAN-MAR MON,FRI", true},
		{"empty", "", false},
		{"too few fields", "* * *", false},
		{"too many fields", "0 0 0 0 * * *", false},
		{"minute out of range", "60 * * * *", false},
		{"hour out of range", "0 24 * * *", false},
		{"bad name", "0 9 * * FUNDAY", false},
		{"never fires", "0 0 30 2 *", false},
		{"descriptor refused", "@daily", false},
		{"zone prefix refused", "CRON_TZ=UTC 0 9 * * *", false},
		{"zero step", "*/0 * * * *", false},
		{"control char", "0 9 * * *\x00", false},
		{"huge", strings.Repeat("1,", 200) + "1 * * * *", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRecurrence(c.expr)
			if c.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !c.ok {
				wantCode(t, err, sessiondb.EINVALID)
			}
		})
	}
}

func TestRecurrenceNextAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name string
		expr string
		loc  *time.Location
		from string
		want []string
	}{
		{"9am stays 9am local across spring forward", "0 9 * * *", ny, "2026-03-07T15:00:00Z",
			[]string{"2026-03-08T13:00:00Z", "2026-03-09T13:00:00Z"}},
		{"9am stays 9am local across fall back", "0 9 * * *", ny, "2026-10-31T15:00:00Z",
			[]string{"2026-11-01T14:00:00Z", "2026-11-02T14:00:00Z"}},
		{"missing 02:30 runs after the jump", "30 2 * * *", ny, "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"repeated 01:30 runs once", "30 1 * * *", ny, "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"UTC when no zone", "0 9 * * *", nil, "2026-03-07T15:00:00Z",
			[]string{"2026-03-08T09:00:00Z"}},
		{"strictly after", "0 9 * * *", time.UTC, "2026-03-08T09:00:00Z",
			[]string{"2026-03-09T09:00:00Z"}},
		{"seconds field", "15 * * * * *", time.UTC, "2026-03-08T09:00:00Z",
			[]string{"2026-03-08T09:00:15Z", "2026-03-08T09:01:15Z"}},
		{"day-of-month or day-of-week", "0 0 13 * FRI", time.UTC, "2026-03-01T00:00:00Z",
			[]string{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRecurrence(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			at := utc(c.from)
			for i, w := range c.want {
				at = r.Next(at, c.loc)
				if !at.Equal(utc(w)) {
					t.Fatalf("occurrence %d = %s, want %s", i, at.Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestAdvanceRecurrences(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	setup := func(t *testing.T) (*fixture, string) {
		f := newFixture(t)
		f.host.loc = ny
		id, _, err := f.host.EnqueueTask(ctxb, f.ref, Task{ID: "task-1", Prompt: "p", Recurrence: "0 9 * * *",
			Routing: Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T"}})
		must(t, err)
		return f, id
	}
	t.Run("completed run schedules the next, missed periods collapse", func(t *testing.T) {
		f, id := setup(t)
		f.clk.Advance(72 * time.Hour) // host was down for three days
		f.withIn(func(tx *sqlitedb.Tx) error {
			_, err := tx.Exec("UPDATE messages_in SET status = 'completed' WHERE id = ?", id)
			return err
		})
		n, err := f.host.AdvanceRecurrences(ctxb, f.ref)
		if err != nil || n != 1 {
			t.Fatalf("AdvanceRecurrences = %d, %v", n, err)
		}
		rows := f.query(InboundFile, "SELECT id, status, recurrence, series_id, process_after, kind, content, channel_type, platform_id, thread_id, seq, timestamp FROM messages_in ORDER BY seq")
		if len(rows) != 2 {
			t.Fatalf("rows %v", rows)
		}
		if rows[0][2] != nil {
			t.Errorf("source recurrence not cleared: %v", rows[0])
		}
		nr := rows[1]
		if !strings.HasPrefix(nr[0].(string), "task-") || nr[1] != "pending" || nr[2] != "0 9 * * *" || nr[3] != id ||
			nr[5] != "task" || nr[6] != `{"prompt":"p","script":null}` || nr[7] != "slack" || nr[8] != "C1" || nr[9] != "T" ||
			nr[10] != int64(4) || nr[11] != FormatTime(f.clk.Now()) {
			t.Errorf("new row %v", nr)
		}
		// now = 2026-03-04 12:00Z = 07:00 EST → next 09:00 EST = 14:00Z that day.
		if nr[4] != "2026-03-04T14:00:00.000Z" {
			t.Errorf("process_after %v", nr[4])
		}
		if n, _ := f.host.AdvanceRecurrences(ctxb, f.ref); n != 0 {
			t.Errorf("second advance inserted %d", n)
		}
	})
	t.Run("failed run does not end the series", func(t *testing.T) {
		f, id := setup(t)
		f.withIn(func(tx *sqlitedb.Tx) error {
			_, err := tx.Exec("UPDATE messages_in SET status = 'failed' WHERE id = ?", id)
			return err
		})
		if n, _ := f.host.AdvanceRecurrences(ctxb, f.ref); n != 1 {
			t.Fatalf("inserted %d, want 1", n)
		}
	})
	t.Run("no fork when the series has a live row", func(t *testing.T) {
		f, id := setup(t)
		// A duplicate completed row of the same series, e.g. from a replay.
		f.withIn(func(tx *sqlitedb.Tx) error {
			if _, err := tx.Exec("UPDATE messages_in SET status = 'completed' WHERE id = ?", id); err != nil {
				return err
			}
			_, err := tx.Exec(`INSERT INTO messages_in (id, seq, kind, timestamp, status, recurrence, series_id, content)
 VALUES ('dup', 100, 'task', '2026-03-01 11:00:00', 'completed', '0 9 * * *', ?, '{"prompt":"p"}')`, id)
			return err
		})
		n, err := f.host.AdvanceRecurrences(ctxb, f.ref)
		if err != nil || n != 1 {
			t.Fatalf("inserted %d, %v; want 1", n, err)
		}
		if live := f.one(InboundFile, "SELECT count(*) FROM messages_in WHERE status = 'pending'"); live != int64(1) {
			t.Errorf("live rows %v, want 1", live)
		}
		if left := f.one(InboundFile, "SELECT count(*) FROM messages_in WHERE status = 'completed' AND recurrence IS NOT NULL"); left != int64(0) {
			t.Errorf("completed rows still recurring: %v", left)
		}
	})
	t.Run("bad legacy expression left alone", func(t *testing.T) {
		f := newFixture(t)
		f.withIn(func(tx *sqlitedb.Tx) error {
			_, err := tx.Exec(`INSERT INTO messages_in (id, seq, kind, timestamp, status, recurrence, series_id, content)
 VALUES ('bad', 2, 'task', '2026-03-01 11:00:00', 'completed', 'every day', 'bad', '{}')`)
			return err
		})
		n, err := f.host.AdvanceRecurrences(ctxb, f.ref)
		if err != nil || n != 0 {
			t.Fatalf("AdvanceRecurrences = %d, %v", n, err)
		}
		if r := f.one(InboundFile, "SELECT recurrence FROM messages_in"); r != "every day" {
			t.Errorf("bad recurrence changed: %v", r)
		}
	})
	t.Run("non-task rows recur with msg ids", func(t *testing.T) {
		f := newFixture(t)
		f.enqueue(InboundMessage{ID: "w1", Kind: KindWebhook, Content: json.RawMessage(`{"source":"gh"}`), Recurrence: "*/5 * * * *"})
		f.withIn(func(tx *sqlitedb.Tx) error {
			_, err := tx.Exec("UPDATE messages_in SET status = 'completed'")
			return err
		})
		if n, _ := f.host.AdvanceRecurrences(ctxb, f.ref); n != 1 {
			t.Fatal("not advanced")
		}
		if id := f.one(InboundFile, "SELECT id FROM messages_in WHERE status = 'pending'"); !strings.HasPrefix(id.(string), "msg-") {
			t.Errorf("id %v", id)
		}
	})
}
