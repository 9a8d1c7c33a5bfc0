package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// scripted is a Deliverer whose answer per row id is set by the test.
type scripted struct {
	mu    sync.Mutex
	calls []OutboundRow
	fn    func(row OutboundRow) (string, error)
}

func (s *scripted) Deliver(_ context.Context, _ SessionRef, row OutboundRow) (string, error) {
	s.mu.Lock()
	s.calls = append(s.calls, row)
	s.mu.Unlock()
	return s.fn(row)
}

func (f *fixture) send(id, content string) int64 {
	f.t.Helper()
	seq, err := f.openAgent().Send(ctxb, OutboundMessage{ID: id, Content: json.RawMessage(content), Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
	if err != nil {
		f.t.Fatal(err)
	}
	return seq
}

func TestDrainRetriesThenFailsAndNotifies(t *testing.T) {
	f := newFixture(t)
	seq := f.send("o1", `{"text":"x"}`)
	d := &scripted{fn: func(OutboundRow) (string, error) { return "", errors.New("adapter down") }}
	wantDelays := []time.Duration{2 * time.Second, 4 * time.Second}
	for i, delay := range wantDelays {
		res, err := f.host.Drain(ctxb, f.ref, d)
		if err != nil || res.Retrying != 1 {
			t.Fatalf("attempt %d: %+v %v", i+1, res, err)
		}
		row := f.query(InboundFile, "SELECT attempts, last_error, next_attempt_at FROM delivery_attempts")[0]
		if row[0] != int64(i+1) || row[1] != "adapter down" || row[2] != FormatTime(f.clk.Now().Add(delay)) {
			t.Fatalf("attempt %d row %v", i+1, row)
		}
		// Not due yet: no call.
		before := len(d.calls)
		if _, err := f.host.Drain(ctxb, f.ref, d); err != nil || len(d.calls) != before {
			t.Fatalf("retried before next_attempt_at")
		}
		f.clk.Advance(delay)
	}
	res, err := f.host.Drain(ctxb, f.ref, d)
	if err != nil || res.Failed != 1 {
		t.Fatalf("third attempt: %+v %v", res, err)
	}
	if st := f.query(InboundFile, "SELECT status, platform_message_id FROM delivered WHERE message_out_id = 'o1'")[0]; st[0] != "failed" || st[1] != nil {
		t.Errorf("delivered row %v", st)
	}
	n := f.query(InboundFile, "SELECT kind, channel_type, platform_id, trigger, content, seq FROM messages_in")
	if len(n) != 1 {
		t.Fatalf("notifications %v", n)
	}
	want := `{"text":"Delivery failed (seq ` + itoa(seq) + `): adapter down","sender":"system","senderId":"system"}`
	if n[0][0] != "chat" || n[0][1] != "agent" || n[0][2] != "ag-1" || n[0][3] != int64(0) || n[0][4] != want || n[0][5].(int64)%2 != 0 {
		t.Errorf("notification %v", n[0])
	}
	if _, err := f.host.Drain(ctxb, f.ref, d); err != nil || len(d.calls) != 3 {
		t.Errorf("failed row delivered again (%d calls)", len(d.calls))
	}
}

func TestDrainOutcomes(t *testing.T) {
	cases := []struct {
		name      string
		content   string
		routing   Routing
		err       error
		want      DrainResult
		delivered string // status in delivered, "" = none
		calls     int
	}{
		{"success", `{"text":"x"}`, Routing{ChannelType: "slack", PlatformID: "C1"}, nil, DrainResult{Delivered: 1}, "delivered", 1},
		{"permanent at once", `{"text":"x"}`, Routing{ChannelType: "slack", PlatformID: "C1"}, Permanent(errors.New("ACL denied")), DrainResult{Failed: 1}, "failed", 1},
		{"not ready stays pending", `{"text":"x"}`, Routing{ChannelType: "slack", PlatformID: "C1"}, ErrNotReady, DrainResult{Deferred: 1}, "", 1},
		{"no channel is permanent", `{"text":"x"}`, Routing{}, nil, DrainResult{Failed: 1}, "failed", 0},
		{"missing outbox file is permanent", `{"text":"x","files":["gone.txt"]}`, Routing{ChannelType: "slack", PlatformID: "C1"}, nil, DrainResult{Failed: 1}, "failed", 0},
		{"hostile file name is permanent", `{"text":"x","files":["../inbound.db"]}`, Routing{ChannelType: "slack", PlatformID: "C1"}, nil, DrainResult{Failed: 1}, "failed", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.openAgent().Send(ctxb, OutboundMessage{ID: "o1", Content: json.RawMessage(c.content), Routing: c.routing})
			must(t, err)
			d := &scripted{fn: func(OutboundRow) (string, error) { return "P1", c.err }}
			res, err := f.host.Drain(ctxb, f.ref, d)
			if err != nil || res != c.want || len(d.calls) != c.calls {
				t.Fatalf("Drain = %+v, %v, %d calls; want %+v, %d calls", res, err, len(d.calls), c.want, c.calls)
			}
			got := f.query(InboundFile, "SELECT status FROM delivered")
			if c.delivered == "" && len(got) != 0 || c.delivered != "" && (len(got) != 1 || got[0][0] != c.delivered) {
				t.Errorf("delivered %v, want %q", got, c.delivered)
			}
		})
	}
}

func TestDrainMalformedStoredContent(t *testing.T) {
	f := newFixture(t)
	f.openAgent()
	f.withOut(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO messages_out (id, seq, timestamp, kind, channel_type, platform_id, content) VALUES ('bad', 1, '2026-03-01 12:00:00', 'chat', 'slack', 'C', 'not json')")
		return err
	})
	res, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(OutboundRow) (string, error) { return "", nil }})
	if err != nil || res.Failed != 1 {
		t.Fatalf("Drain = %+v, %v", res, err)
	}
	if c := f.one(InboundFile, "SELECT content FROM messages_in"); !strings.Contains(c.(string), "malformed content") {
		t.Errorf("notification %v", c)
	}
}

func TestDrainOrderAndDeliverAfter(t *testing.T) {
	f, a := newAgentFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.send(id, `{"text":"`+id+`"}`)
	}
	_, err := a.Send(ctxb, OutboundMessage{ID: "later", Content: json.RawMessage(`{"text":"l"}`), Routing: Routing{ChannelType: "slack", PlatformID: "C1"}, DeliverAfter: f.clk.Now().Add(time.Minute)})
	must(t, err)
	// NanoClaw's agent writes zone-less timestamps and NULL seqs in tests.
	f.withOut(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO messages_out (id, seq, timestamp, kind, channel_type, platform_id, content) VALUES ('noseq', NULL, '2026-03-01 11:00:00', 'chat', 'slack', 'C', '{}')")
		return err
	})
	d := &scripted{fn: func(row OutboundRow) (string, error) { return "P-" + row.ID, nil }}
	_, err = f.host.Drain(ctxb, f.ref, d)
	must(t, err)
	var got []string
	for _, c := range d.calls {
		got = append(got, c.ID)
	}
	if strings.Join(got, ",") != "a,b,c,noseq" {
		t.Fatalf("order %v", got)
	}
	f.clk.Advance(time.Minute)
	_, err = f.host.Drain(ctxb, f.ref, d)
	must(t, err)
	if len(d.calls) != 5 || d.calls[4].ID != "later" {
		t.Fatalf("deliver_after row not delivered when due: %d calls", len(d.calls))
	}
}

func TestDrainEditTargeting(t *testing.T) {
	f := newFixture(t)
	f.enqueue(chat("slack:C1:1.5:ag-1", "user msg"))
	f.send("orig", `{"text":"v1"}`)
	f.send("edit", `{"operation":"edit","messageId":"orig","text":"v2"}`)
	f.send("react", `{"operation":"reaction","messageId":"slack:C1:1.5:ag-1","emoji":"thumbs_up"}`)
	f.send("react-raw", `{"operation":"reaction","messageId":"P-external","emoji":"eyes"}`)
	var allow atomic.Bool
	d := &scripted{fn: func(row OutboundRow) (string, error) {
		if row.ID == "orig" && !allow.Load() {
			return "", errors.New("flaky")
		}
		return "P-" + row.ID, nil
	}}
	res, err := f.host.Drain(ctxb, f.ref, d)
	must(t, err)
	// orig failed once → the edit waits without counting an attempt.
	if res.Retrying != 1 || res.Deferred != 1 || res.Delivered != 2 {
		t.Fatalf("first drain %+v", res)
	}
	contents := map[string]string{}
	for _, c := range d.calls {
		contents[c.ID] = string(c.Content)
	}
	if contents["react"] != `{"operation":"reaction","messageId":"slack:C1:1.5","emoji":"thumbs_up"}` {
		t.Errorf("namespaced inbound target not stripped: %s", contents["react"])
	}
	if contents["react-raw"] != `{"operation":"reaction","messageId":"P-external","emoji":"eyes"}` {
		t.Errorf("platform id target changed: %s", contents["react-raw"])
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM delivery_attempts WHERE message_out_id = 'edit'"); n != int64(0) {
		t.Errorf("deferred edit counted an attempt")
	}
	if p := f.query(InboundFile, "SELECT platform_message_id FROM delivered WHERE message_out_id = 'react'")[0][0]; p != nil {
		t.Errorf("reaction stored platform id %v", p)
	}
	allow.Store(true)
	f.clk.Advance(2 * time.Second)
	res, err = f.host.Drain(ctxb, f.ref, d)
	must(t, err)
	if res.Delivered != 2 {
		t.Fatalf("second drain %+v", res)
	}
	last := d.calls[len(d.calls)-1]
	if last.ID != "edit" || string(last.Content) != `{"operation":"edit","messageId":"P-orig","text":"v2"}` {
		t.Errorf("edit retargeted to %s", last.Content)
	}
	// An edit of a failed row fails at once.
	f.send("orig2", `{"text":"x"}`)
	f.send("edit2", `{"operation":"edit","messageId":"orig2","text":"y"}`)
	d.fn = func(row OutboundRow) (string, error) {
		if row.ID == "orig2" {
			return "", Permanent(errors.New("denied"))
		}
		return "P", nil
	}
	res, err = f.host.Drain(ctxb, f.ref, d)
	must(t, err)
	if res.Failed != 2 {
		t.Errorf("edit of a failed row: %+v", res)
	}
}

func TestDrainOnePerSession(t *testing.T) {
	f := newFixture(t)
	f.send("o1", `{"text":"x"}`)
	started := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	d := DelivererFunc(func(context.Context, SessionRef, OutboundRow) (string, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return "P", nil
	})
	done := make(chan DrainResult)
	go func() {
		r, _ := f.host.Drain(ctxb, f.ref, d)
		done <- r
	}()
	<-started
	res, err := f.host.Drain(ctxb, f.ref, d)
	if err != nil || !res.Skipped {
		t.Fatalf("overlapping drain %+v %v, want skipped", res, err)
	}
	close(release)
	if r := <-done; r.Delivered != 1 || calls.Load() != 1 {
		t.Fatalf("first drain %+v, %d calls", r, calls.Load())
	}
}

func TestForwardAgentToAgent(t *testing.T) {
	f := newFixture(t)
	dst := SessionRef{AgentGroupID: "ag-2", SessionID: "s-9"}
	must(t, f.host.InitSession(ctxb, dst))
	row := OutboundRow{ID: "o1", Content: json.RawMessage(`{"text":"hello peer","files":["a.txt"]}`),
		Files: []OutboxFile{{Name: "a.txt", Path: writeTemp(t, "a.txt", "data")}}}
	id, seq, err := f.host.Forward(ctxb, f.ref, row, dst)
	if err != nil || seq != 2 {
		t.Fatalf("Forward = %s %d %v", id, seq, err)
	}
	r, err := f.host.InboundRow(ctxb, dst, id)
	must(t, err)
	want := `{"text":"hello peer","attachments":[{"filename":"a.txt","localPath":"inbox/` + id + `/a.txt","name":"a.txt","type":"file"}]}`
	if r.Kind != KindChat || r.Routing.ChannelType != "agent" || r.Routing.PlatformID != "ag-1" || r.SourceSessionID != "sess-1" || string(r.Content) != want {
		t.Errorf("forwarded row %+v content %s", r, r.Content)
	}
}

// TestRequeueByAnotherHostIsDeliveredAgain: a delivery that failed for
// good lies below the running host's drain watermark; a Requeue through
// another Host (another process, as `sessiondb mailbox requeue` is) leaves
// a mark that host's next drain honours: the row is delivered again, once,
// and the mark is gone.
func TestRequeueByAnotherHostIsDeliveredAgain(t *testing.T) {
	f := newFixture(t)
	f.send("o1", `{"text":"first"}`)
	down := true
	d := &scripted{fn: func(row OutboundRow) (string, error) {
		if down && row.ID == "o1" {
			return "", Permanent(errors.New("adapter refused"))
		}
		return "P-" + row.ID, nil
	}}
	if res, err := f.host.Drain(ctxb, f.ref, d); err != nil || res.Failed != 1 {
		t.Fatalf("first drain %+v %v", res, err)
	}
	// A later row is delivered, so the watermark passes o1 as resolved.
	f.send("o2", `{"text":"second"}`)
	if res, err := f.host.Drain(ctxb, f.ref, d); err != nil || res.Delivered != 1 {
		t.Fatalf("second drain %+v %v", res, err)
	}
	down = false

	other, err := NewHost(HostOptions{Layout: f.host.Layout(), Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := other.Requeue(ctxb, f.ref, []string{"o1"}); err != nil || res.Outbound != 1 {
		t.Fatalf("requeue %+v %v", res, err)
	}
	before := len(d.calls)
	res, err := f.host.Drain(ctxb, f.ref, d)
	if err != nil || res.Delivered != 1 || len(d.calls) != before+1 || d.calls[before].ID != "o1" {
		t.Fatalf("drain after another host's requeue: %+v %v; calls %d → %d", res, err, before, len(d.calls))
	}
	if st := f.query(InboundFile, "SELECT status, platform_message_id FROM delivered WHERE message_out_id = 'o1'"); len(st) != 1 || st[0][0] != DeliveredOK || st[0][1] != "P-o1" {
		t.Fatalf("delivered row %v", st)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, RequeueMarkFile)); !os.IsNotExist(err) {
		t.Fatalf("the requeue mark stayed: %v", err)
	}
	if _, err := f.host.Drain(ctxb, f.ref, d); err != nil || len(d.calls) != before+1 {
		t.Fatalf("o1 delivered more than once (%d calls)", len(d.calls)-before)
	}
}

// TestDrainLogsWhyARowFailedForGood: a row given up on is logged at warn
// level with its id, where it was going and the deliverer's reason, control
// characters escaped; a row that will be retried is not.
func TestDrainLogsWhyARowFailedForGood(t *testing.T) {
	var logs bytes.Buffer
	clk := newClock()
	h, err := NewHost(HostOptions{Layout: Layout{Root: filepath.Join(t.TempDir(), "v2-sessions")}, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	ref := SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	must(t, h.InitSession(ctxb, ref))
	dir, _ := h.layout.SessionDir(ref)
	f := &fixture{t: t, clk: clk, host: h, ref: ref, dir: dir}
	f.send("o-retry", `{"text":"x"}`)
	res, err := h.Drain(ctxb, ref, &scripted{fn: func(OutboundRow) (string, error) { return "", errors.New("adapter down") }})
	if err != nil || res.Retrying != 1 {
		t.Fatalf("Drain = %+v, %v", res, err)
	}
	if strings.Contains(logs.String(), "for good") {
		t.Errorf("a row to retry was logged as given up:\n%s", logs.String())
	}
	f.send("o-denied", `{"text":"y"}`)
	res, err = h.Drain(ctxb, ref, &scripted{fn: func(row OutboundRow) (string, error) {
		if row.ID == "o-denied" {
			return "", Permanent(errors.New("ACL denied \x1b[31mred"))
		}
		return "", ErrNotReady
	}})
	if err != nil || res.Failed != 1 {
		t.Fatalf("Drain = %+v, %v", res, err)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "for good") {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "id=o-denied", "channel_type=slack", "platform_id=C1", "permanent=true", "ACL denied"} {
		if !strings.Contains(line, want) {
			t.Errorf("the failure's log line lacks %q: %q", want, line)
		}
	}
	if strings.Contains(line, "\x1b") {
		t.Errorf("the reason reached the log with a raw escape: %q", line)
	}
}

// DrainOptions.Read runs while the drain's read holds outbound.db: a reply
// committed before it is delivered by this drain, and one whose commit
// begins during it ends only after the read, so its wake (the journal's
// removal) comes after the call, for the next drain. Were Read called
// after the read, the second reply could commit meanwhile and a caller
// dropping its wakes there would never deliver it.
func TestDrainReadHookRunsUnderTheReadLock(t *testing.T) {
	f := newFixture(t)
	a := f.openAgent()
	f.send("o1", `{"text":"first"}`)
	var sent atomic.Bool
	done := make(chan error, 1)
	var duringRead bool
	d := &scripted{fn: func(OutboundRow) (string, error) { return "P1", nil }}
	res, err := f.host.DrainWith(ctxb, f.ref, d, DrainOptions{Read: func() {
		go func() {
			_, err := a.Send(ctxb, OutboundMessage{ID: "o2", Content: json.RawMessage(`{"text":"second"}`), Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
			sent.Store(true)
			done <- err
		}()
		// Long enough for the reply to commit had nothing held it back.
		time.Sleep(300 * time.Millisecond)
		duringRead = !sent.Load()
	}})
	if err != nil || res.Delivered != 1 || len(d.calls) != 1 || d.calls[0].ID != "o1" {
		t.Fatalf("drain: %+v, %v, calls %v; want o1 delivered alone", res, err, d.calls)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !duringRead {
		t.Fatal("the agent committed a reply while Read ran: Read is not inside the drain's read transaction")
	}
	res, err = f.host.Drain(ctxb, f.ref, d)
	if err != nil || res.Delivered != 1 || d.calls[1].ID != "o2" {
		t.Fatalf("next drain: %+v, %v; want o2 delivered", res, err)
	}
}
