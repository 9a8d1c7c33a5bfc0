package mailbox

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The timestamp audit (docs/mailbox.md, "Timestamps"): every timestamp
// column we write, checked against the NanoClaw v2.0.64 code that reads it.
// Where that code compares in SQL, its statement is run here as it stands
// in NanoClaw, against rows our host and agent wrote, with SQLite's own
// datetime('now'); where it parses in JavaScript, the stored text is
// checked against the format ECMAScript's Date.parse is specified to read.
const (
	// src/db/session-db.ts:261-263 (the host's delivery drain), and the
	// same test in container/agent-runner/src/db/messages-out.ts:138-140.
	nanoclawDueOutbound = `SELECT * FROM messages_out
       WHERE (deliver_after IS NULL OR deliver_after <= datetime('now'))
       ORDER BY timestamp ASC`
	// container/agent-runner/src/db/messages-in.ts:73-78 (the agent's poll,
	// with its on_wake filter), ?1 = first poll, ?2 = batch size.
	nanoclawPending = `SELECT * FROM messages_in
         WHERE status = 'pending'
           AND (process_after IS NULL OR datetime(process_after) <= datetime('now'))
           AND (on_wake = 0 OR ?1 = 1)
         ORDER BY seq DESC
         LIMIT ?2`
	// src/db/session-db.ts:140-143 (the host's wake decision).
	nanoclawCountDue = `SELECT COUNT(*) as count FROM messages_in
       WHERE status = 'pending'
         AND trigger = 1
         AND (process_after IS NULL OR datetime(process_after) <= datetime('now'))`
	// container/agent-runner/src/mcp-tools/scheduling.ts:140-144 (list_tasks).
	nanoclawListTasks = `SELECT series_id AS id, status, process_after, recurrence, content, MAX(seq) AS _seq
             FROM messages_in
            WHERE kind = 'task' AND status IN ('pending', 'paused')
            GROUP BY series_id
            ORDER BY process_after ASC`
)

// The forms we write (docs/mailbox.md's table).
var (
	// ECMAScript's Date Time String Format with a Z: what Date.parse reads
	// as UTC (NanoClaw's parseSqliteUtc, src/host-sweep.ts:57-59, and the
	// agent's formatLocalTime, container/agent-runner/src/timezone.ts:38-39).
	isoForm = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	// SQLite's datetime('now'), what a raw text comparison with it expects.
	sqliteForm = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
)

// realFixture is a fixture on the real clock: SQLite's datetime('now')
// cannot be set.
func realFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	h, err := NewHost(HostOptions{Layout: f.host.Layout()})
	if err != nil {
		t.Fatal(err)
	}
	f.host = h
	a, err := OpenAgent(ctxb, f.dir, AgentOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.agent = a
	return f
}

func column(rows [][]any, i int) []string {
	out := make([]string, len(rows))
	for j, r := range rows {
		out[j], _ = r[i].(string)
	}
	return out
}

func TestFormatDeliverAfter(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 24, 21, 55, 48, 0, time.UTC), "2026-11-24 21:55:48"},
		{time.Date(2026, 11, 24, 21, 55, 48, 2e6, time.UTC), "2026-11-24 21:55:49"}, // never early
		{time.Date(2026, 11, 24, 23, 59, 59, 1, time.UTC), "2026-11-25 00:00:00"},
		{time.Date(2026, 11, 24, 22, 55, 48, 0, berlin), "2026-11-24 21:55:48"},
	} {
		if got := FormatDeliverAfter(tc.in); got != tc.want {
			t.Errorf("FormatDeliverAfter(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNanoClawReadsDeliverAfter: a delayed message our agent wrote is due
// for NanoClaw's host as soon as its time has come (the defect: held until
// the next UTC day), and not before; our own drain agrees, and still
// reads the ISO form older agents wrote.
func TestNanoClawReadsDeliverAfter(t *testing.T) {
	f := realFixture(t)
	a := f.agent
	now := time.Now()
	send := func(id string, after time.Time) {
		t.Helper()
		if _, err := a.Send(ctxb, OutboundMessage{ID: id, Content: json.RawMessage(`{"text":"x"}`), DeliverAfter: after,
			Routing: Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
			t.Fatal(err)
		}
	}
	send("o-now", time.Time{})
	send("o-past", now.Add(-2*time.Second))
	send("o-future", now.Add(time.Hour))
	for _, v := range column(f.query(OutboundFile, "SELECT deliver_after FROM messages_out WHERE deliver_after IS NOT NULL"), 0) {
		if !sqliteForm.MatchString(v) {
			t.Fatalf("deliver_after %q is not in datetime('now')'s form", v)
		}
	}
	if got := column(f.query(OutboundFile, nanoclawDueOutbound), 0); !slices.Equal(got, []string{"o-now", "o-past"}) {
		t.Fatalf("NanoClaw's drain selects %v, want [o-now o-past]", got)
	}

	// A row an older agent wrote in the ISO form: our readers wrap the
	// stored value in datetime() and deliver it.
	f.withOut(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec(`INSERT INTO messages_out (id, seq, timestamp, deliver_after, kind, platform_id, channel_type, content)
 VALUES ('o-iso', 99, ?, ?, 'chat', 'C1', 'slack', '{"text":"old"}')`, FormatTime(now), FormatTime(now.Add(-2*time.Second)))
		return err
	})
	var got []string
	res, err := f.host.Drain(ctxb, f.ref, DelivererFunc(func(_ ctxT, _ SessionRef, r OutboundRow) (string, error) {
		got = append(got, r.ID)
		return "", nil
	}))
	if err != nil || res.Delivered != 3 || !slices.Equal(got, []string{"o-now", "o-past", "o-iso"}) {
		t.Fatalf("our drain delivered %v (%+v, %v), want o-now o-past o-iso", got, res, err)
	}
}

// TestNanoClawReadsProcessAfter: the rows our host writes are due for
// NanoClaw's agent poll and host wake exactly when their time has come,
// and its list_tasks orders our tasks by time.
func TestNanoClawReadsProcessAfter(t *testing.T) {
	f := realFixture(t)
	h := f.host
	now := time.Now()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	f.enqueue(chat("m-now", "a"))
	m := chat("m-past", "b")
	m.ProcessAfter = at(-time.Minute)
	f.enqueue(m)
	m = chat("m-future", "c")
	m.ProcessAfter = at(time.Hour)
	f.enqueue(m)
	for _, task := range []Task{
		{ID: "t-later", Prompt: "p", ProcessAfter: at(3 * time.Hour)},
		{ID: "t-past", Prompt: "p", ProcessAfter: at(-time.Minute)},
		{ID: "t-soon", Prompt: "p", ProcessAfter: at(2 * time.Hour)},
	} {
		if _, _, err := h.EnqueueTask(ctxb, f.ref, task); err != nil {
			t.Fatal(err)
		}
	}
	// A claimed row of a dead container, rescheduled with back-off.
	f.enqueue(chat("m-retry", "d"))
	if err := f.agent.MarkProcessing(ctxb, "m-retry"); err != nil {
		t.Fatal(err)
	}
	if res, err := h.ResetProcessing(ctxb, f.ref); err != nil || res.Retried != 1 {
		t.Fatalf("reset %+v %v", res, err)
	}

	got := column(f.query(InboundFile, nanoclawPending, 1, 10), 0)
	if want := []string{"t-past", "m-past", "m-now"}; !slices.Equal(got, want) {
		t.Fatalf("NanoClaw's poll selects %v, want %v", got, want)
	}
	if n := f.one(InboundFile, nanoclawCountDue); n != int64(3) {
		t.Fatalf("NanoClaw's due count %v, want 3", n)
	}
	if got := column(f.query(InboundFile, nanoclawListTasks), 0); !slices.Equal(got, []string{"t-past", "t-soon", "t-later"}) {
		t.Fatalf("NanoClaw's list_tasks orders %v, want by time", got)
	}
	for _, v := range column(f.query(InboundFile, "SELECT process_after FROM messages_in WHERE process_after IS NOT NULL"), 0) {
		if !isoForm.MatchString(v) {
			t.Fatalf("process_after %q is not ISO with a Z", v)
		}
	}
}

// TestTimestampForms checks the form of every timestamp column we write,
// as docs/mailbox.md's table states it.
func TestTimestampForms(t *testing.T) {
	f, a := newAgentFixture(t)
	h := f.host
	f.enqueue(chat("m1", "a"))
	if _, _, err := h.EnqueueTask(ctxb, f.ref, Task{ID: "t1", Prompt: "p", ProcessAfter: f.clk.Now().Add(time.Minute), Recurrence: "*/5 * * * *"}); err != nil {
		t.Fatal(err)
	}
	must(t, a.MarkProcessing(ctxb, "m1"))
	must(t, a.StateSet(ctxb, "k", "v"))
	must(t, a.SetToolInFlight(ctxb, "Bash", 1000))
	f.send("o1", `{"text":"ok"}`)
	if _, err := a.Send(ctxb, OutboundMessage{ID: "o2", Content: json.RawMessage(`{"text":"later"}`), DeliverAfter: f.clk.Now().Add(-time.Second),
		Routing: Routing{ChannelType: "slack", PlatformID: "C1"}}); err != nil {
		t.Fatal(err)
	}
	f.send("o3", `{"text":"retried"}`)
	calls := 0
	if _, err := h.Drain(ctxb, f.ref, DelivererFunc(func(_ ctxT, _ SessionRef, r OutboundRow) (string, error) {
		calls++
		switch r.ID {
		case "o2":
			return "", Permanent(errors.New("no such chat"))
		case "o3":
			return "", errors.New("platform down") // retried later: next_attempt_at
		}
		return "P1", nil
	})); err != nil || calls != 3 {
		t.Fatalf("drain: %d calls, %v", calls, err)
	}
	// The task runs and its next occurrence is inserted.
	must(t, a.MarkCompleted(ctxb, "t1"))
	f.clk.Advance(2 * time.Minute)
	if _, err := h.SyncAcks(ctxb, f.ref); err != nil {
		t.Fatal(err)
	}
	if n, err := h.AdvanceRecurrences(ctxb, f.ref); err != nil || n != 1 {
		t.Fatalf("advance %d %v", n, err)
	}
	must(t, a.ClearToolInFlight(ctxb))
	must(t, a.SetToolInFlight(ctxb, "Read", 0))

	for _, c := range []struct {
		file, query string
		form        *regexp.Regexp
		min         int // rows the query must return
	}{
		{InboundFile, "SELECT timestamp FROM messages_in", isoForm, 4}, // m1, t1, its next run, the failure notification
		{InboundFile, "SELECT process_after FROM messages_in WHERE process_after IS NOT NULL", isoForm, 2},
		{InboundFile, "SELECT delivered_at FROM delivered", isoForm, 2},
		{InboundFile, "SELECT last_attempt_at FROM delivery_attempts", isoForm, 2},
		{InboundFile, "SELECT next_attempt_at FROM delivery_attempts WHERE next_attempt_at IS NOT NULL", isoForm, 1},
		{OutboundFile, "SELECT timestamp FROM messages_out", isoForm, 3},
		{OutboundFile, "SELECT deliver_after FROM messages_out WHERE deliver_after IS NOT NULL", sqliteForm, 1},
		{OutboundFile, "SELECT status_changed FROM processing_ack", isoForm, 2},
		{OutboundFile, "SELECT updated_at FROM session_state", isoForm, 1},
		{OutboundFile, "SELECT tool_started_at FROM container_state", isoForm, 1},
		{OutboundFile, "SELECT updated_at FROM container_state", isoForm, 1},
	} {
		vals := column(f.query(c.file, c.query), 0)
		if len(vals) < c.min {
			t.Errorf("%s: %d rows, want at least %d", c.query, len(vals), c.min)
		}
		for _, v := range vals {
			if !c.form.MatchString(v) {
				t.Errorf("%s: %q is not in the form %s", c.query, v, c.form)
			}
		}
	}
}
