package mailbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func TestPollWindow(t *testing.T) {
	type row struct {
		id      string
		kind    string
		ctxOnly bool
		onWake  bool
		acked   bool
		later   bool // process_after in the future
		status  string
	}
	chatRow := func(id string) row { return row{id: id, kind: KindChat} }
	cases := []struct {
		name string
		rows []row
		opts PollOptions
		want []string
	}{
		{"oldest first", []row{chatRow("a"), chatRow("b"), chatRow("c")}, PollOptions{}, []string{"a", "b", "c"}},
		{"limit keeps newest", []row{chatRow("a"), chatRow("b"), chatRow("c")}, PollOptions{Limit: 2}, []string{"b", "c"}},
		{"acked excluded before the limit", []row{chatRow("a"), chatRow("b"), {id: "c", kind: KindChat, acked: true}}, PollOptions{Limit: 2}, []string{"a", "b"}},
		{"system rows excluded before the limit",
			[]row{chatRow("a"), {id: "s1", kind: KindSystem}, {id: "s2", kind: KindSystem}, {id: "s3", kind: KindSystem}},
			PollOptions{Limit: 2}, []string{"a"}},
		{"context rows ride along", []row{chatRow("a"), {id: "b", kind: KindChat, ctxOnly: true}}, PollOptions{}, []string{"a", "b"}},
		{"no trigger, nothing to do", []row{{id: "a", kind: KindChat, ctxOnly: true}}, PollOptions{}, nil},
		{"window ends at the newest trigger",
			[]row{chatRow("t"), {id: "c1", kind: KindChat, ctxOnly: true}, {id: "c2", kind: KindChat, ctxOnly: true}, {id: "c3", kind: KindChat, ctxOnly: true}},
			PollOptions{Limit: 2}, []string{"t"}},
		{"window ends at the newest trigger with older context",
			[]row{{id: "c0", kind: KindChat, ctxOnly: true}, chatRow("t"), {id: "c1", kind: KindChat, ctxOnly: true}, {id: "c2", kind: KindChat, ctxOnly: true}},
			PollOptions{Limit: 2}, []string{"c0", "t"}},
		{"on_wake hidden after the first poll", []row{chatRow("a"), {id: "w", kind: KindChat, onWake: true}}, PollOptions{}, []string{"a"}},
		{"on_wake on the first poll", []row{chatRow("a"), {id: "w", kind: KindChat, onWake: true}}, PollOptions{FirstPoll: true}, []string{"a", "w"}},
		{"not yet due", []row{chatRow("a"), {id: "l", kind: KindChat, later: true}}, PollOptions{}, []string{"a"}},
		{"completed ignored", []row{chatRow("a"), {id: "done", kind: KindChat, status: "completed"}}, PollOptions{}, []string{"a"}},
		{"tasks and webhooks are work", []row{{id: "t", kind: KindTask}, {id: "w", kind: KindWebhook}}, PollOptions{}, []string{"t", "w"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.openAgent()
			for _, r := range c.rows {
				m := InboundMessage{ID: r.id, Kind: r.kind, Content: json.RawMessage(`{"text":"x"}`), ContextOnly: r.ctxOnly, OnWake: r.onWake}
				if r.later {
					m.ProcessAfter = f.clk.Now().Add(time.Hour)
				}
				f.enqueue(m)
				if r.acked {
					must(t, a.MarkProcessing(ctxb, r.id))
				}
				if r.status != "" {
					f.withIn(func(tx *sqlitedb.Tx) error {
						_, err := tx.Exec("UPDATE messages_in SET status = ? WHERE id = ?", r.status, r.id)
						return err
					})
				}
			}
			got, err := a.Poll(ctxb, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), c.want) {
				t.Fatalf("Poll = %v, want %v", ids(got), c.want)
			}
		})
	}
}

func TestSendShapesAndSeq(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("in-1", "x")) // seq 2
	rt := Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T"}
	shapes := []struct {
		name    string
		kind    string
		content string
	}{
		{"chat", "", `{"text":"hi"}`},
		{"markdown", "", `{"markdown":"*hi*"}`},
		{"edit", "", `{"operation":"edit","messageId":"P-1","text":"fixed"}`},
		{"reaction", "", `{"operation":"reaction","messageId":"P-1","emoji":"thumbs_up"}`},
		{"card", KindChatSDK, `{"type":"card","card":{"title":"T","children":["a",{"text":"b"}],"actions":[{"label":"go","url":"https://x"}]},"fallbackText":"T"}`},
		{"question", KindChatSDK, `{"type":"ask_question","questionId":"q1","title":"T","question":"?","options":[{"label":"Yes","selectedLabel":"Yes!","value":"y"}]}`},
		{"system action", KindSystem, `{"action":"cancel_task","taskId":"task-1"}`},
	}
	want := int64(3)
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			seq, err := a.Send(ctxb, OutboundMessage{Kind: s.kind, Content: json.RawMessage(" " + s.content + "\n"), Routing: rt})
			if err != nil {
				t.Fatal(err)
			}
			if seq != want {
				t.Fatalf("seq %d, want %d", seq, want)
			}
			want += 2
			got := f.query(OutboundFile, "SELECT content, kind, timestamp FROM messages_out WHERE seq = ?", seq)[0]
			kind := s.kind
			if kind == "" {
				kind = KindChat
			}
			if got[0] != s.content || got[1] != kind || got[2] != "2026-03-01T12:00:00.000Z" {
				t.Errorf("stored %v", got)
			}
		})
	}
	bad := []struct {
		name string
		m    OutboundMessage
	}{
		{"not an object", OutboundMessage{Content: json.RawMessage(`"x"`)}},
		{"hostile id", OutboundMessage{ID: "../../etc", Content: json.RawMessage(`{}`)}},
		{"bad cron", OutboundMessage{Content: json.RawMessage(`{}`), Recurrence: "* *"}},
		{"hostile file name", OutboundMessage{Content: json.RawMessage(`{}`), Files: []string{"/tmp/"}}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.Send(ctxb, c.m)
			wantCode(t, err, sessiondb.EINVALID)
		})
	}
	_, err := a.Send(ctxb, OutboundMessage{ID: "dup", Content: json.RawMessage(`{}`)})
	must(t, err)
	_, err = a.Send(ctxb, OutboundMessage{ID: "dup", Content: json.RawMessage(`{}`)})
	wantCode(t, err, sessiondb.ECONFLICT)
}

func TestSendFilesGoToOutbox(t *testing.T) {
	f, a := newAgentFixture(t)
	src := filepath.Join(t.TempDir(), "report.pdf")
	must(t, os.WriteFile(src, []byte("%PDF"), 0o644))
	_, err := a.Send(ctxb, OutboundMessage{ID: "out-1", Content: json.RawMessage(`{"text":"see"}`), Files: []string{src},
		Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
	must(t, err)
	if c := f.one(OutboundFile, "SELECT content FROM messages_out"); c != `{"text":"see","files":["report.pdf"]}` {
		t.Errorf("content %v", c)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, "outbox", "out-1", "report.pdf"))
	if err != nil || string(b) != "%PDF" {
		t.Fatalf("outbox file: %q %v", b, err)
	}
	var got OutboundRow
	_, err = f.host.Drain(ctxb, f.ref, DelivererFunc(func(_ ctxT, _ SessionRef, row OutboundRow) (string, error) {
		got = row
		return "P", nil
	}))
	must(t, err)
	if len(got.Files) != 1 || got.Files[0].Name != "report.pdf" {
		t.Fatalf("deliverer saw files %+v", got.Files)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "outbox", "out-1")); !os.IsNotExist(err) {
		t.Errorf("outbox folder not removed after delivery: %v", err)
	}
}

func TestMessageIDAndRoutingBySeq(t *testing.T) {
	f, a := newAgentFixture(t)
	in := chat("slack:C1:1.1", "x")
	in.Routing.ThreadID = "T1"
	f.enqueue(in)                                                                                                                                                  // 2
	_, err := a.Send(ctxb, OutboundMessage{ID: "o-delivered", Content: json.RawMessage(`{"text":"a"}`), Routing: Routing{ChannelType: "slack", PlatformID: "C1"}}) // 3
	must(t, err)
	_, err = a.Send(ctxb, OutboundMessage{ID: "o-pending", Content: json.RawMessage(`{"text":"b"}`), Routing: Routing{ChannelType: "discord", PlatformID: "D"}}) // 5
	must(t, err)
	f.withIn(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO delivered VALUES ('o-delivered', 'P-77', 'delivered', '2026-03-01 12:00:00')")
		return err
	})
	// A legacy row with an odd seq in messages_in is found by the fallback.
	f.withIn(func(tx *sqlitedb.Tx) error {
		_, err := tx.Exec("INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES ('legacy-odd', 9, 'chat', '2026-01-01 00:00:00', '{}')")
		return err
	})
	cases := []struct {
		seq     int64
		id      string
		routing Routing
		code    string
	}{
		{2, "slack:C1:1.1", Routing{"slack", "C1", "T1"}, ""},
		{3, "P-77", Routing{"slack", "C1", ""}, ""},
		{5, "o-pending", Routing{"discord", "D", ""}, ""},
		{9, "legacy-odd", Routing{}, ""},
		{11, "", Routing{}, sessiondb.ENOTFOUND},
		{0, "", Routing{}, sessiondb.EINVALID},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.seq), func(t *testing.T) {
			id, err := a.MessageIDBySeq(ctxb, c.seq)
			if c.code != "" {
				wantCode(t, err, c.code)
				return
			}
			if err != nil || id != c.id {
				t.Fatalf("MessageIDBySeq = %q, %v; want %q", id, err, c.id)
			}
			r, err := a.RoutingBySeq(ctxb, c.seq)
			if err != nil || r != c.routing {
				t.Fatalf("RoutingBySeq = %+v, %v; want %+v", r, err, c.routing)
			}
		})
	}
}

func TestStateContinuationAndLegacyAdoption(t *testing.T) {
	cases := []struct {
		name     string
		existing string // current continuation before open
		provider string
		want     string
	}{
		{"adopted when empty", "", "Claude", "legacy-1"},
		{"kept when set", "current-9", "claude", "current-9"},
		{"no provider, legacy dropped", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			db := filepath.Join(f.dir, OutboundFile)
			script := "INSERT INTO session_state VALUES ('sdk_session_id', 'legacy-1', '2026-01-01 00:00:00');"
			if c.existing != "" {
				script += "INSERT INTO session_state VALUES ('continuation:claude', '" + c.existing + "', '2026-01-01 00:00:00');"
			}
			execFile(t, db, script)
			a, err := OpenAgent(ctxb, f.dir, AgentOptions{Now: f.clk.Now, Provider: c.provider})
			must(t, err)
			defer a.Close()
			if c.provider != "" {
				got, err := a.Continuation(ctxb, c.provider)
				if err != nil || got != c.want {
					t.Fatalf("Continuation = %q, %v; want %q", got, err, c.want)
				}
			}
			if _, found, _ := a.StateGet(ctxb, "sdk_session_id"); found {
				t.Error("legacy sdk_session_id not deleted")
			}
		})
	}
	f, a := newAgentFixture(t)
	must(t, a.SetContinuation(ctxb, "OpenAI", "resp-1"))
	if v, _, _ := a.StateGet(ctxb, "continuation:openai"); v != "resp-1" {
		t.Errorf("continuation key not lowercased: %q", v)
	}
	must(t, a.StateSet(ctxb, "k", "v"))
	if row := f.query(OutboundFile, "SELECT updated_at FROM session_state WHERE key = 'k'")[0]; row[0] != "2026-03-01T12:00:00.000Z" {
		t.Errorf("updated_at %v", row[0])
	}
	all, err := a.StateList(ctxb)
	if err != nil || len(all) != 2 || all["k"] != "v" {
		t.Errorf("StateList %v %v", all, err)
	}
	must(t, a.ClearContinuation(ctxb, "openai"))
	must(t, a.StateDelete(ctxb, "k"))
	must(t, a.StateDelete(ctxb, "k"))
	if all, _ := a.StateList(ctxb); len(all) != 0 {
		t.Errorf("after deletes: %v", all)
	}
	wantCode(t, a.StateSet(ctxb, "", "v"), sessiondb.EINVALID)
	wantCode(t, a.SetContinuation(ctxb, "", "v"), sessiondb.EINVALID)
}

func execFile(t testing.TB, path, script string) {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA busy_timeout=5000"}})
	must(t, err)
	defer db.Close()
	if _, err := db.Exec(script); err != nil {
		t.Fatal(err)
	}
}

func TestHeartbeatToolInFlightAndStuck(t *testing.T) {
	f, a := newAgentFixture(t)
	if hb, _ := f.host.Heartbeat(f.ref); !hb.IsZero() {
		t.Fatal("heartbeat present before any touch")
	}
	must(t, a.TouchHeartbeat())
	hb, err := f.host.Heartbeat(f.ref)
	if err != nil || !hb.Equal(f.clk.Now()) {
		t.Fatalf("heartbeat %v %v, want %v", hb, err, f.clk.Now())
	}
	if fi, _ := os.Stat(filepath.Join(f.dir, HeartbeatFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("heartbeat mode %v", fi.Mode().Perm())
	}
	must(t, a.SetToolInFlight(ctxb, "Bash", 3_600_000))
	st, err := f.host.ContainerState(ctxb, f.ref)
	if err != nil || st.CurrentTool != "Bash" || st.ToolDeclaredTimeoutMS != 3_600_000 {
		t.Fatalf("container state %+v %v", st, err)
	}
	must(t, a.MarkProcessing(ctxb, "m1"))
	f.clk.Advance(45 * time.Minute)
	if v, err := f.host.CheckStuck(ctxb, f.ref); err != nil || v != StuckOK {
		t.Errorf("a declared one-hour Bash call was judged %v (%v)", v, err)
	}
	must(t, a.ClearToolInFlight(ctxb))
	if v, err := f.host.CheckStuck(ctxb, f.ref); err != nil || v != StuckKillCeiling {
		t.Errorf("45 min silent without a tool: %v (%v), want kill-ceiling", v, err)
	}
	// A fresh beat, then a claim with no beat since for over a minute.
	must(t, a.TouchHeartbeat())
	must(t, a.MarkProcessing(ctxb, "m2"))
	f.clk.Advance(2 * time.Minute)
	if v, err := f.host.CheckStuck(ctxb, f.ref); err != nil || v != StuckKillClaim {
		t.Errorf("claim 2 min old, no beat since: %v (%v), want kill-claim", v, err)
	}
	if st, _ := f.host.ContainerState(ctxb, f.ref); st.CurrentTool != "" {
		t.Errorf("tool not cleared: %+v", st)
	}
	wantCode(t, a.SetToolInFlight(ctxb, "", 0), sessiondb.EINVALID)
}

func TestDecideStuck(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(ago time.Duration) Claim {
		return Claim{MessageID: "m", Status: AckProcessing, StatusChanged: FormatTime(now.Add(-ago))}
	}
	bash := ContainerState{CurrentTool: "Bash", ToolDeclaredTimeoutMS: int64(2 * time.Hour / time.Millisecond)}
	cases := []struct {
		name   string
		hbAgo  time.Duration // -1 = absent
		state  ContainerState
		claims []Claim
		want   StuckVerdict
	}{
		{"fresh spawn, no claims", -1, ContainerState{}, nil, StuckOK},
		{"recent heartbeat", time.Minute, ContainerState{}, nil, StuckOK},
		{"ceiling passed", 31 * time.Minute, ContainerState{}, nil, StuckKillCeiling},
		{"ceiling extended by bash", 31 * time.Minute, bash, nil, StuckOK},
		{"bash timeout passed", 121 * time.Minute, bash, nil, StuckKillCeiling},
		{"non-bash tool does not extend", 31 * time.Minute, ContainerState{CurrentTool: "Read", ToolDeclaredTimeoutMS: 1e9}, nil, StuckKillCeiling},
		{"claim young", -1, ContainerState{}, []Claim{claim(30 * time.Second)}, StuckOK},
		{"claim old, no heartbeat", -1, ContainerState{}, []Claim{claim(61 * time.Second)}, StuckKillClaim},
		{"claim old, heartbeat since", 10 * time.Second, ContainerState{}, []Claim{claim(61 * time.Second)}, StuckOK},
		{"claim old, heartbeat before", 70 * time.Second, ContainerState{}, []Claim{claim(61 * time.Second)}, StuckKillClaim},
		{"claim old under bash", -1, bash, []Claim{claim(10 * time.Minute)}, StuckOK},
		{"zone-less claim time", -1, ContainerState{}, []Claim{{Status: AckProcessing, StatusChanged: now.Add(-2 * time.Minute).Format("2006-01-02 15:04:05")}}, StuckKillClaim},
		{"unparseable claim skipped", -1, ContainerState{}, []Claim{{Status: AckProcessing, StatusChanged: "soon"}}, StuckOK},
		{"completed acks ignored", -1, ContainerState{}, []Claim{{Status: AckCompleted, StatusChanged: FormatTime(now.Add(-time.Hour))}}, StuckOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hb time.Time
			if c.hbAgo >= 0 {
				hb = now.Add(-c.hbAgo)
			}
			if got := DecideStuck(now, hb, c.state, c.claims); got != c.want {
				t.Fatalf("DecideStuck = %v, want %v", got, c.want)
			}
		})
	}
}

func TestClearStaleProcessing(t *testing.T) {
	f, a := newAgentFixture(t)
	must(t, a.MarkProcessing(ctxb, "a", "b"))
	must(t, a.MarkCompleted(ctxb, "c"))
	n, err := a.ClearStaleProcessing(ctxb)
	if err != nil || n != 2 {
		t.Fatalf("ClearStaleProcessing = %d, %v", n, err)
	}
	if got := f.one(OutboundFile, "SELECT group_concat(message_id) FROM processing_ack"); got != "c" {
		t.Errorf("left %v", got)
	}
}

func TestAwaitResponsesWokenByChange(t *testing.T) {
	f := newFixture(t)
	// Start the watcher before the write so the change is seen.
	a := watchingAgent(t, f)
	done := make(chan struct{})
	var got InboundRow
	var werr error
	go func() {
		defer close(done)
		got, werr = a.AwaitQuestionResponse(ctxb, "q-7", 30*time.Second)
	}()
	// Other system rows and a near-miss id do not answer.
	f.enqueue(InboundMessage{ID: "qr-q-70-1", Kind: KindSystem, Content: json.RawMessage(`{"type":"question_response","questionId":"q-70"}`)})
	f.enqueue(InboundMessage{ID: "qr-q-7-1", Kind: KindSystem, Content: json.RawMessage(`{"type":"question_response","questionId":"q-7","selectedOption":"y","userId":"u"}`)})
	<-done
	if werr != nil || got.ID != "qr-q-7-1" {
		t.Fatalf("AwaitQuestionResponse = %+v, %v", got.ID, werr)
	}
	if st := f.one(OutboundFile, "SELECT status FROM processing_ack WHERE message_id = 'qr-q-7-1'"); st != "completed" {
		t.Errorf("answer not acked: %v", st)
	}
	// CLI response, already there.
	f.enqueue(InboundMessage{ID: "cli-resp-r1", Kind: KindSystem, ContextOnly: true, Content: json.RawMessage(`{"type":"cli_response","requestId":"r1","frame":{}}`)})
	r, err := a.AwaitCLIResponse(ctxb, "r1", time.Second)
	if err != nil || r.ID != "cli-resp-r1" {
		t.Fatalf("AwaitCLIResponse = %v, %v", r.ID, err)
	}
	// Timeout.
	_, err = a.AwaitCLIResponse(ctxb, "never", 50*time.Millisecond)
	wantCode(t, err, sessiondb.ENOTFOUND)
	if !strings.Contains(err.Error(), "never") {
		t.Errorf("timeout error %q", err)
	}
}
