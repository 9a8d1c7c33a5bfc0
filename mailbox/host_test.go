package mailbox

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func TestEnqueueDefaultsIdempotenceAndValidation(t *testing.T) {
	f := newFixture(t)
	m := chat("slack:C1:1.1:ag-1", "hi <there> & you")
	seq, inserted, err := f.host.Enqueue(ctxb, f.ref, m)
	if err != nil || !inserted || seq != 2 {
		t.Fatalf("first enqueue: %d %v %v", seq, inserted, err)
	}
	seq2, inserted, err := f.host.Enqueue(ctxb, f.ref, m)
	if err != nil || inserted || seq2 != seq {
		t.Fatalf("duplicate enqueue: %d %v %v, want %d false nil", seq2, inserted, err, seq)
	}
	row := f.query(InboundFile, "SELECT status, series_id, trigger, on_wake, tries, timestamp, process_after, content FROM messages_in")[0]
	want := []any{"pending", m.ID, int64(1), int64(0), int64(0), "2026-03-01T12:00:00.000Z", nil,
		`{"sender":"u","senderId":"u1","text":"hi <there> & you"}`}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("column %d = %#v, want %#v", i, row[i], want[i])
		}
	}
	bad := []struct {
		name  string
		m     InboundMessage
		field string
	}{
		{"no id", InboundMessage{Kind: "chat", Content: json.RawMessage(`{}`)}, "id"},
		{"hostile id", InboundMessage{ID: "../x", Kind: "chat", Content: json.RawMessage(`{}`)}, "id"},
		{"no kind", InboundMessage{ID: "a", Content: json.RawMessage(`{}`)}, "kind"},
		{"array content", InboundMessage{ID: "a", Kind: "chat", Content: json.RawMessage(`[1]`)}, "content"},
		{"broken content", InboundMessage{ID: "a", Kind: "chat", Content: json.RawMessage(`{"a":`)}, "content"},
		{"empty content", InboundMessage{ID: "a", Kind: "chat"}, "content"},
		{"bad cron", InboundMessage{ID: "a", Kind: "task", Content: json.RawMessage(`{}`), Recurrence: "61 * * * *"}, "recurrence"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := f.host.Enqueue(ctxb, f.ref, c.m)
			wantCode(t, err, sessiondb.EINVALID)
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %q does not name %s", err, c.field)
			}
		})
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM messages_in"); n != int64(1) {
		t.Fatalf("refused input left rows: %v", n)
	}
}

func TestEnqueueNotInitialized(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.host.Enqueue(ctxb, SessionRef{AgentGroupID: "ag-1", SessionID: "nope"}, chat("m", "x"))
	wantCode(t, err, sessiondb.ENOTFOUND)
}

func TestCountDue(t *testing.T) {
	f := newFixture(t)
	now := f.clk.Now()
	f.enqueue(chat("due", "x"))
	ctxOnly := chat("ctx", "x")
	ctxOnly.ContextOnly = true
	f.enqueue(ctxOnly)
	later := chat("later", "x")
	later.ProcessAfter = now.Add(time.Minute)
	f.enqueue(later)
	// A NanoClaw-style zone-less process_after in the past is due.
	f.enqueue(chat("legacy", "x"))
	f.withIn(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("UPDATE messages_in SET process_after = '2026-03-01 11:59:00' WHERE id = 'legacy'")
		return err
	})
	n, err := f.host.CountDue(ctxb, f.ref)
	if err != nil || n != 2 {
		t.Fatalf("CountDue = %d, %v; want 2", n, err)
	}
	f.clk.Advance(time.Minute)
	if n, _ := f.host.CountDue(ctxb, f.ref); n != 3 {
		t.Fatalf("CountDue after a minute = %d, want 3", n)
	}
}

// withIn runs a raw write on inbound.db (test set-up of states the API does
// not produce, like NanoClaw-written values).
func (f *fixture) withIn(fn func(tx *sqlitedb.Tx) error) {
	f.t.Helper()
	if err := f.host.withInbound(ctxb, f.ref, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) withOut(fn func(tx *sqlitedb.Tx) error) {
	f.t.Helper()
	a := f.openAgent()
	if err := a.w.Do(ctxb, fn); err != nil {
		f.t.Fatal(err)
	}
}

func TestSyncAcksKeepsFailedDistinct(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		f.enqueue(chat(id, id))
	}
	a := f.openAgent()
	must(t, a.MarkCompleted(ctxb, "a"))
	must(t, a.MarkFailed(ctxb, "b"))
	must(t, a.MarkProcessing(ctxb, "c"))
	// NanoClaw writes SQLite's zone-less timestamps; accepted.
	f.withOut(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO processing_ack VALUES ('d', 'completed', '2026-03-01 12:00:00')")
		return err
	})
	res, err := f.host.SyncAcks(ctxb, f.ref)
	if err != nil {
		t.Fatal(err)
	}
	if res != (AckSync{Completed: 2, Failed: 1}) {
		t.Errorf("SyncAcks = %+v", res)
	}
	got := f.query(InboundFile, "SELECT id, status FROM messages_in ORDER BY id")
	want := [][]any{{"a", "completed"}, {"b", "failed"}, {"c", "pending"}, {"d", "completed"}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d = %v, want %v", i, got[i], want[i])
		}
	}
	res, _ = f.host.SyncAcks(ctxb, f.ref)
	if res != (AckSync{}) {
		t.Errorf("second sync changed rows: %+v", res)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResetProcessingBackoffAndFinalFailure(t *testing.T) {
	cases := []struct {
		name        string
		tries       int
		future      bool
		wantStatus  string
		wantTries   int64
		wantAfter   time.Duration // from now; -1 = unchanged
		wantSkipped bool
	}{
		{"first retry 5s", 0, false, "pending", 1, 5 * time.Second, false},
		{"third retry 20s", 2, false, "pending", 3, 20 * time.Second, false},
		{"fifth retry 80s", 4, false, "pending", 5, 80 * time.Second, false},
		{"final at 5 tries", 5, false, "failed", 5, -1, false},
		{"already rescheduled", 1, true, "pending", 1, -1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			now := f.clk.Now()
			f.enqueue(chat("m", "x"))
			pa := any(nil)
			if c.future {
				pa = FormatTime(now.Add(time.Hour))
			}
			f.withIn(func(tx *sqlitedb.Tx) error {
				_, err := tx.Exec("UPDATE messages_in SET tries = ?, process_after = ?", c.tries, pa)
				return err
			})
			a := f.openAgent()
			must(t, a.MarkProcessing(ctxb, "m"))
			res, err := f.host.ResetProcessing(ctxb, f.ref)
			if err != nil {
				t.Fatal(err)
			}
			if res.AcksCleared != 1 || (res.Skipped == 1) != c.wantSkipped {
				t.Errorf("result %+v", res)
			}
			row := f.query(InboundFile, "SELECT status, tries, process_after FROM messages_in")[0]
			if row[0] != c.wantStatus || row[1] != c.wantTries {
				t.Errorf("status/tries = %v/%v, want %v/%v", row[0], row[1], c.wantStatus, c.wantTries)
			}
			if c.wantAfter >= 0 && row[2] != FormatTime(now.Add(c.wantAfter)) {
				t.Errorf("process_after %v, want now+%v", row[2], c.wantAfter)
			}
			if n := f.one(OutboundFile, "SELECT count(*) FROM processing_ack"); n != int64(0) {
				t.Errorf("processing acks left: %v", n)
			}
		})
	}
}

func TestExpireSystemRows(t *testing.T) {
	f := newFixture(t)
	sys := InboundMessage{ID: "qr-q1-1", Kind: KindSystem, Content: json.RawMessage(`{"type":"question_response","questionId":"q1"}`)}
	f.enqueue(sys)
	f.enqueue(chat("chat", "x"))
	f.clk.Advance(9 * time.Minute)
	if n, _ := f.host.ExpireSystemRows(ctxb, f.ref); n != 0 {
		t.Fatalf("expired %d rows before the TTL", n)
	}
	f.clk.Advance(time.Minute)
	if n, err := f.host.ExpireSystemRows(ctxb, f.ref); n != 1 || err != nil {
		t.Fatalf("ExpireSystemRows = %d, %v; want 1", n, err)
	}
	if st := f.one(InboundFile, "SELECT group_concat(id || '=' || status) FROM messages_in ORDER BY seq"); st != "qr-q1-1=failed,chat=pending" {
		t.Errorf("statuses %v", st)
	}
}

func TestTaskLifecycle(t *testing.T) {
	f := newFixture(t)
	script := "echo hi"
	id, _, err := f.host.EnqueueTask(ctxb, f.ref, Task{Prompt: "report", Script: &script, Recurrence: "0 9 * * *",
		ProcessAfter: f.clk.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "task-") || len(id) != len("task-")+13+1+6 {
		t.Errorf("task id %q", id)
	}
	if c := f.one(InboundFile, "SELECT content FROM messages_in"); c != `{"prompt":"report","script":"echo hi"}` {
		t.Errorf("content %v", c)
	}
	steps := []struct {
		name   string
		op     func() (int, error)
		n      int
		status string
	}{
		{"pause", func() (int, error) { return f.host.PauseTask(ctxb, f.ref, id) }, 1, "paused"},
		{"pause again touches nothing", func() (int, error) { return f.host.PauseTask(ctxb, f.ref, id) }, 0, "paused"},
		{"resume", func() (int, error) { return f.host.ResumeTask(ctxb, f.ref, id) }, 1, "pending"},
		{"update", func() (int, error) {
			p, rec := "new prompt", ""
			return f.host.UpdateTask(ctxb, f.ref, id, TaskUpdate{Prompt: &p, Recurrence: &rec, ClearScript: true})
		}, 1, "pending"},
		{"cancel", func() (int, error) { return f.host.CancelTask(ctxb, f.ref, id) }, 1, "completed"},
		{"cancel again", func() (int, error) { return f.host.CancelTask(ctxb, f.ref, id) }, 0, "completed"},
	}
	for _, s := range steps {
		n, err := s.op()
		if err != nil || n != s.n {
			t.Fatalf("%s: %d, %v; want %d", s.name, n, err, s.n)
		}
		if st := f.one(InboundFile, "SELECT status FROM messages_in"); st != s.status {
			t.Fatalf("%s: status %v, want %v", s.name, st, s.status)
		}
	}
	row := f.query(InboundFile, "SELECT content, recurrence FROM messages_in")[0]
	if row[0] != `{"prompt":"new prompt","script":null}` || row[1] != nil {
		t.Errorf("after update+cancel: %v", row)
	}
	_, err = f.host.CancelTask(ctxb, f.ref, "")
	wantCode(t, err, sessiondb.EINVALID)
	bad := "not cron"
	_, err = f.host.UpdateTask(ctxb, f.ref, id, TaskUpdate{Recurrence: &bad})
	wantCode(t, err, sessiondb.EINVALID)
}

func TestPrepareSpawnAndProjections(t *testing.T) {
	f, a := newAgentFixture(t)
	must(t, a.TouchHeartbeat())
	dests := []Destination{
		{Name: "team", DisplayName: "Team chat", Type: DestinationChannel, ChannelType: "slack", PlatformID: "C9"},
		{Name: "helper", Type: DestinationAgent, AgentGroupID: "ag-2"},
	}
	err := f.host.PrepareSpawn(ctxb, f.ref, Spawn{
		Routing:      Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T1"},
		Destinations: dests,
		OnWake:       []InboundMessage{{ID: "restart-1", Kind: KindChat, Content: notification("restarted")}},
	})
	must(t, err)
	if hb, _ := f.host.Heartbeat(f.ref); !hb.IsZero() {
		t.Error(".heartbeat not deleted")
	}
	r, err := a.SessionRouting(ctxb)
	if err != nil || r != (Routing{"slack", "C1", "T1"}) {
		t.Errorf("routing %+v %v", r, err)
	}
	got, err := a.Destinations(ctxb)
	if err != nil || len(got) != 2 || got[0] != dests[1] || got[1] != dests[0] {
		t.Errorf("destinations %+v %v", got, err)
	}
	if ow := f.one(InboundFile, "SELECT on_wake FROM messages_in WHERE id = 'restart-1'"); ow != int64(1) {
		t.Errorf("on_wake = %v", ow)
	}
	// Wholesale rewrite.
	must(t, f.host.WriteDestinations(ctxb, f.ref, dests[:1]))
	if got, _ := a.Destinations(ctxb); len(got) != 1 {
		t.Errorf("after rewrite: %+v", got)
	}
	_, err = a.Destination(ctxb, "nobody")
	wantCode(t, err, sessiondb.ENOTFOUND)
	if !strings.Contains(err.Error(), "team") {
		t.Errorf("unknown destination error %q does not list known names", err)
	}
	badDests := []struct {
		name string
		d    []Destination
	}{
		{"no name", []Destination{{Type: "channel", ChannelType: "x", PlatformID: "y"}}},
		{"bad type", []Destination{{Name: "a", Type: "email"}}},
		{"channel without platform", []Destination{{Name: "a", Type: "channel", ChannelType: "slack"}}},
		{"agent without group", []Destination{{Name: "a", Type: "agent"}}},
		{"duplicate", []Destination{dests[1], dests[1]}},
	}
	for _, c := range badDests {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, f.host.WriteDestinations(ctxb, f.ref, c.d), sessiondb.EINVALID)
		})
	}
	must(t, f.host.WriteSessionRouting(ctxb, f.ref, Routing{}))
	if r, _ := a.SessionRouting(ctxb); r != (Routing{}) {
		t.Errorf("cleared routing %+v", r)
	}
	if r, err := a.DefaultRouting(ctxb); err != nil || r != (Routing{"slack", "C9", ""}) {
		t.Errorf("default routing with one destination: %+v %v", r, err)
	}
}

func TestLazyMigrationOfOldInbound(t *testing.T) {
	f := newFixture(t)
	// Replace inbound.db with an old-shape file.
	path, _ := f.host.layout.InboundPath(f.ref)
	old := `CREATE TABLE messages_in (id TEXT PRIMARY KEY, seq INTEGER UNIQUE, kind TEXT NOT NULL, timestamp TEXT NOT NULL,
 status TEXT DEFAULT 'pending', process_after TEXT, recurrence TEXT, tries INTEGER DEFAULT 0, platform_id TEXT,
 channel_type TEXT, thread_id TEXT, content TEXT NOT NULL);
CREATE TABLE delivered (message_out_id TEXT PRIMARY KEY, delivered_at TEXT NOT NULL);
INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES ('old', 2, 'chat', '2026-01-01 00:00:00', '{"text":"x"}');`
	writeRawDB(t, path, old)
	h2, _ := NewHost(HostOptions{Layout: f.host.layout, Now: f.clk.Now})
	a := f.openAgent()
	// Read-only readers degrade before migration: no on_wake column.
	batch, err := a.Poll(ctxb, PollOptions{})
	if err != nil || len(batch) != 1 {
		t.Fatalf("poll on old file: %v %v", ids(batch), err)
	}
	if _, _, err := h2.Enqueue(ctxb, f.ref, chat("new", "y")); err != nil {
		t.Fatal(err)
	}
	cols := map[string]bool{}
	for _, r := range f.query(InboundFile, "SELECT name FROM pragma_table_info('messages_in')") {
		cols[r[0].(string)] = true
	}
	for _, c := range []string{"series_id", "trigger", "source_session_id", "on_wake"} {
		if !cols[c] {
			t.Errorf("column %s not added", c)
		}
	}
	if s := f.one(InboundFile, "SELECT series_id FROM messages_in WHERE id = 'old'"); s != "old" {
		t.Errorf("series_id backfill = %v", s)
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM pragma_table_info('delivered') WHERE name IN ('platform_message_id', 'status')"); n != int64(2) {
		t.Errorf("delivered not migrated")
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM sqlite_master WHERE name = 'delivery_attempts'"); n != int64(1) {
		t.Errorf("delivery_attempts not created")
	}
}

func writeRawDB(t testing.TB, path, script string) {
	t.Helper()
	for _, suffix := range []string{"", "-journal"} {
		_ = removeIfExists(path + suffix)
	}
	if _, _, err := sqlitedb.CreateFile(path, 0o700, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA journal_mode=DELETE"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(script); err != nil {
		t.Fatal(err)
	}
}
