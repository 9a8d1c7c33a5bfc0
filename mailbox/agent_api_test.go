package mailbox

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestPendingReadsEveryDueRow(t *testing.T) {
	f, a := newAgentFixture(t)
	ctxOnly := chat("c1", "context")
	ctxOnly.ContextOnly = true
	f.enqueue(ctxOnly)
	f.enqueue(InboundMessage{ID: "sys1", Kind: KindSystem, Content: json.RawMessage(`{"type":"question_response","questionId":"q"}`)})
	later := chat("later", "not yet")
	later.ProcessAfter = f.clk.Now().Add(time.Hour)
	f.enqueue(later)
	wake := chat("w1", "restart note")
	wake.OnWake = true
	f.enqueue(wake)

	// Nothing wakes the agent: Poll has no batch, Pending shows the rows.
	if batch, err := a.Poll(ctxb, PollOptions{}); err != nil || batch != nil {
		t.Fatalf("Poll = %v, %v; want no batch (no trigger=1 row)", ids(batch), err)
	}
	got, err := a.Pending(ctxb, PendingOptions{})
	if err != nil || !slices.Equal(ids(got), []string{"c1", "sys1"}) {
		t.Fatalf("Pending = %v, %v; want [c1 sys1]", ids(got), err)
	}
	got, _ = a.Pending(ctxb, PendingOptions{FirstPoll: true})
	if !slices.Equal(ids(got), []string{"c1", "sys1", "w1"}) {
		t.Fatalf("Pending(first) = %v; want the on_wake row too", ids(got))
	}
	f.enqueue(chat("m1", "hello"))
	must(t, a.MarkProcessing(ctxb, "c1"))
	got, _ = a.Pending(ctxb, PendingOptions{Limit: 2})
	if !slices.Equal(ids(got), []string{"sys1", "m1"}) {
		t.Fatalf("Pending(limit 2) = %v; want the newest two unacked [sys1 m1]", ids(got))
	}
	if batch, _ := a.Poll(ctxb, PollOptions{}); !slices.Equal(ids(batch), []string{"m1"}) {
		t.Fatalf("Poll = %v, want [m1] (no system rows, no acked rows)", ids(batch))
	}
}

// TestPendingFollowsNanoClawsOrder: with a limit, Pending takes the newest
// due rows first and leaves out the acked among them after, as NanoClaw's
// getPendingMessages does (container/agent-runner/src/db/messages-in.ts):
// its query and its ack filter, run on the same files, give the same rows
// at every limit.
func TestPendingFollowsNanoClawsOrder(t *testing.T) {
	f, a := newAgentFixture(t)
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		f.enqueue(chat(id, id))
	}
	must(t, a.MarkProcessing(ctxb, "m5"))
	must(t, a.MarkCompleted(ctxb, "m3"))
	nanoclaw := func(limit int) []string {
		acked := map[string]bool{}
		for _, id := range column(f.query(OutboundFile, "SELECT message_id FROM processing_ack"), 0) {
			acked[id] = true
		}
		rows := column(f.query(InboundFile, nanoclawPending, 0, limit), 0)
		var out []string
		for i := len(rows) - 1; i >= 0; i-- {
			if !acked[rows[i]] {
				out = append(out, rows[i])
			}
		}
		return out
	}
	for limit := 1; limit <= 6; limit++ {
		got, err := a.Pending(ctxb, PendingOptions{Limit: limit})
		if want := nanoclaw(limit); err != nil || !slices.Equal(ids(got), want) {
			t.Errorf("Pending(limit %d) = %v, %v; NanoClaw's poll reads %v", limit, ids(got), err, want)
		}
	}
	// The newest two due rows are m5 (acked) and m4: only m4 is left.
	if got, _ := a.Pending(ctxb, PendingOptions{Limit: 2}); !slices.Equal(ids(got), []string{"m4"}) {
		t.Errorf("Pending(limit 2) = %v, want [m4]", ids(got))
	}
}

func TestRequireInbound(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("m1", "a"))
	f.enqueue(chat("m2", "b"))
	must(t, a.RequireInbound(ctxb, "m1", "m2"))
	err := a.RequireInbound(ctxb, "m1", "nope", "gone")
	wantCode(t, err, sessiondb.ENOTFOUND)
	if !strings.Contains(err.Error(), `"nope", "gone"`) || strings.Contains(err.Error(), `"m1"`) {
		t.Fatalf("error %v should name exactly the unknown ids", err)
	}
}

// TestInboundByID: the row --reply-to names, with its routing; an unknown
// id is not_found naming it; a file from before on_wake is read too.
func TestInboundByID(t *testing.T) {
	f, a := newAgentFixture(t)
	m := chat("m1", "deploy?")
	m.Routing.ThreadID = "T1"
	f.enqueue(chat("m0", "earlier"))
	f.enqueue(m)
	r, err := a.InboundByID(ctxb, "m1")
	if err != nil || r.ID != "m1" || r.Seq != 4 || r.Kind != KindChat || r.Routing != (Routing{"slack", "C1", "T1"}) ||
		string(r.Content) != `{"sender":"u","senderId":"u1","text":"deploy?"}` {
		t.Fatalf("InboundByID(m1) = %+v, %v", r, err)
	}
	_, err = a.InboundByID(ctxb, "nope")
	wantCode(t, err, sessiondb.ENOTFOUND)
	if !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("error %v should name the id", err)
	}

	// A file an older host made: a fresh agent reads it unmigrated.
	f = newFixture(t)
	path, _ := f.host.layout.InboundPath(f.ref)
	writeRawDB(t, path, `CREATE TABLE messages_in (id TEXT PRIMARY KEY, seq INTEGER UNIQUE, kind TEXT NOT NULL, timestamp TEXT NOT NULL,
 status TEXT DEFAULT 'pending', process_after TEXT, recurrence TEXT, tries INTEGER DEFAULT 0, platform_id TEXT,
 channel_type TEXT, thread_id TEXT, content TEXT NOT NULL);
INSERT INTO messages_in (id, seq, kind, timestamp, platform_id, channel_type, content) VALUES ('old', 2, 'chat', '2026-01-01 00:00:00', 'C7', 'slack', '{"text":"x"}');`)
	if r, err := f.openAgent().InboundByID(ctxb, "old"); err != nil || r.Seq != 2 || r.OnWake || r.Routing != (Routing{"slack", "C7", ""}) {
		t.Fatalf("InboundByID on a file without on_wake = %+v, %v", r, err)
	}
}

// threadWithReply is a session whose inbound chat m1 (seq 2) came in thread
// T1 and whose outbound o1 (seq 3) was delivered as platform message P-3.
func threadWithReply(t *testing.T) (*fixture, *Agent) {
	t.Helper()
	f, a := newAgentFixture(t)
	m := chat("m1", "a")
	m.Routing.ThreadID = "T1"
	f.enqueue(m) // 2
	f.send("o1", `{"text":"x"}`)
	if _, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(OutboundRow) (string, error) { return "P-3", nil }}); err != nil {
		t.Fatal(err)
	}
	return f, a
}

func TestLookupSeq(t *testing.T) {
	f, a := threadWithReply(t)
	f.send("o2", `{"text":"y"}`) // 5, not delivered
	for _, c := range []struct {
		seq  int64
		want SeqTarget
	}{
		{2, SeqTarget{Seq: 2, ID: "m1", MessageID: "m1", Routing: Routing{"slack", "C1", "T1"}}},
		{3, SeqTarget{Seq: 3, Outbound: true, ID: "o1", MessageID: "P-3", Routing: Routing{"slack", "C1", ""}}},
		{5, SeqTarget{Seq: 5, Outbound: true, ID: "o2", MessageID: "o2", Routing: Routing{"slack", "C1", ""}}},
	} {
		got, err := a.LookupSeq(ctxb, c.seq)
		if err != nil || got != c.want {
			t.Errorf("LookupSeq(%d) = %+v, %v; want %+v", c.seq, got, err, c.want)
		}
	}
	_, err := a.LookupSeq(ctxb, 7)
	wantCode(t, err, sessiondb.ENOTFOUND)
	_, err = a.LookupSeq(ctxb, 0)
	wantCode(t, err, sessiondb.EINVALID)
}

func TestAgentReadsItsOwnRows(t *testing.T) {
	f, a := newAgentFixture(t)
	f.enqueue(chat("m1", "a"))
	must(t, a.MarkProcessing(ctxb, "m1"))
	f.send("o1", `{"text":"one"}`)
	f.send("o2", `{"text":"two"}`)
	if _, err := f.host.Drain(ctxb, f.ref, &scripted{fn: func(r OutboundRow) (string, error) {
		if r.ID == "o2" {
			return "", errors.New("adapter down")
		}
		return "P-1", nil
	}}); err != nil {
		t.Fatal(err)
	}
	rows, err := a.OutboundRows(ctxb, 0)
	if err != nil || len(rows) != 2 || rows[0].ID != "o2" || rows[1].ID != "o1" {
		t.Fatalf("OutboundRows = %+v, %v; want o2, o1", rows, err)
	}
	if rows, _ := a.OutboundRows(ctxb, 1); len(rows) != 1 || rows[0].ID != "o2" {
		t.Fatalf("OutboundRows(1) = %+v", rows)
	}
	st, err := a.DeliveryStates(ctxb)
	if err != nil || st["o1"].Status != DeliveredOK || st["o1"].PlatformMessageID != "P-1" ||
		st["o2"].Status != DeliveryRetrying || st["o2"].Attempts != 1 || st["o2"].LastError != "adapter down" {
		t.Fatalf("DeliveryStates = %+v, %v", st, err)
	}
	acks, err := a.Acks(ctxb)
	if err != nil || len(acks) != 1 || acks[0].MessageID != "m1" || acks[0].Status != AckProcessing {
		t.Fatalf("Acks = %+v, %v", acks, err)
	}
}

func TestEditAndReactBySeq(t *testing.T) {
	f, a := threadWithReply(t)
	e, err := a.Edit(ctxb, 3, "fixed")
	if err != nil || e.Kind != KindChat || string(e.Content) != `{"operation":"edit","messageId":"P-3","text":"fixed"}` ||
		e.Routing != (Routing{"slack", "C1", ""}) {
		t.Fatalf("Edit(3) = %+v %s, %v", e, e.Content, err)
	}
	r, err := a.React(ctxb, 2, "thumbs_up")
	if err != nil || string(r.Content) != `{"operation":"reaction","messageId":"m1","emoji":"thumbs_up"}` ||
		r.Routing != (Routing{"slack", "C1", "T1"}) {
		t.Fatalf("React(2) = %+v %s, %v", r, r.Content, err)
	}
	if _, err := a.Send(ctxb, r); err != nil {
		t.Fatal(err)
	}
	_, err = a.Edit(ctxb, 99, "x")
	wantCode(t, err, sessiondb.ENOTFOUND)
	_, err = a.React(ctxb, 2, "")
	wantCode(t, err, sessiondb.EINVALID)
	f.enqueue(InboundMessage{ID: "n1", Kind: KindTask, Content: json.RawMessage(`{"prompt":"p"}`)}) // no channel
	_, err = a.Edit(ctxb, 6, "x")
	wantCode(t, err, sessiondb.EINVALID)
}

func TestOutboundShapes(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rt := Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T1"}
	script := "echo hi"
	prompt := "new prompt"
	at := now.Add(time.Hour)
	every := "0 9 * * *"
	q, qerr := Question("q1", "Deploy?", "Ship it now?", []QuestionOption{{Label: "Yes"}, {Label: "No", SelectedLabel: "Not now", Value: "no"}}, rt, now)
	card, cerr := Card(json.RawMessage(`{"title":"T","children":["a"]}`), "T", rt)
	sched, serr := ScheduleTaskAction(Task{ID: "task-1", Prompt: "report", ProcessAfter: at, Recurrence: every, Routing: rt}, now)
	oneShot, oerr := ScheduleTaskAction(Task{Prompt: "once", Script: &script}, now)
	cancel, xerr := TaskAction(ActionCancelTask, "task-1", now)
	upd, uerr := UpdateTaskAction("task-1", TaskUpdate{Prompt: &prompt, ProcessAfter: &at, ClearRecurrence: true}, now)
	agent, aerr := Action(ActionCreateAgent, json.RawMessage(`{"name":"helper"}`), now)
	pkgs, perr := Action(ActionInstallPackages, json.RawMessage(`{"apt":["jq"],"reason":"parse JSON"}`), now)
	mcp, merr := Action(ActionAddMCPServer, json.RawMessage(`{"name":"fs","command":"npx","args":["-y","fs"]}`), now)
	cliReq, rerr := Action(ActionCLIRequest, json.RawMessage(`{"requestId":"r1","command":"groups list","args":{"all":true}}`), now)
	for _, err := range []error{qerr, cerr, serr, oerr, xerr, uerr, aerr, perr, merr, rerr} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name         string
		m            OutboundMessage
		kind, id     string // id "": a generated one with the prefix idPrefix
		idPrefix     string
		content      string
		keepsRouting bool
	}{
		{"question", q, KindChatSDK, "q1", "", `{"type":"ask_question","questionId":"q1","title":"Deploy?","question":"Ship it now?","options":[{"label":"Yes","selectedLabel":"Yes","value":"Yes"},{"label":"No","selectedLabel":"Not now","value":"no"}]}`, true},
		{"card", card, KindChatSDK, "", "", `{"type":"card","card":{"title":"T","children":["a"]},"fallbackText":"T"}`, true},
		{"schedule", sched, KindSystem, "task-1", "", `{"action":"schedule_task","taskId":"task-1","prompt":"report","script":null,"processAfter":"2026-03-01T13:00:00.000Z","recurrence":"0 9 * * *","platformId":"C1","channelType":"slack","threadId":"T1"}`, true},
		{"one-shot", oneShot, KindSystem, "", "msg-", `{"action":"schedule_task","taskId":"` + oneShot.ID + `","prompt":"once","script":"echo hi","processAfter":"2026-03-01T12:00:00.000Z","recurrence":null,"platformId":null,"channelType":null,"threadId":null}`, false},
		{"cancel", cancel, KindSystem, "", "sys-", `{"action":"cancel_task","taskId":"task-1"}`, false},
		{"update", upd, KindSystem, "", "sys-", `{"action":"update_task","taskId":"task-1","prompt":"new prompt","processAfter":"2026-03-01T13:00:00.000Z","recurrence":null}`, false},
		{"create_agent", agent, KindSystem, "", "msg-", `{"action":"create_agent","requestId":"` + agent.ID + `","name":"helper","instructions":null}`, false},
		{"install_packages", pkgs, KindSystem, "", "msg-", `{"action":"install_packages","apt":["jq"],"npm":[],"reason":"parse JSON"}`, false},
		{"add_mcp_server", mcp, KindSystem, "", "msg-", `{"action":"add_mcp_server","name":"fs","command":"npx","args":["-y","fs"],"env":{}}`, false},
		{"cli_request", cliReq, KindSystem, "r1", "", `{"action":"cli_request","requestId":"r1","command":"groups list","args":{"all":true}}`, false},
	} {
		if c.m.Kind != c.kind || string(c.m.Content) != c.content {
			t.Errorf("%s: kind %q content %s\nwant kind %q content %s", c.name, c.m.Kind, c.m.Content, c.kind, c.content)
		}
		if (c.id != "" && c.m.ID != c.id) || (c.id == "" && c.idPrefix != "" && !strings.HasPrefix(c.m.ID, c.idPrefix)) {
			t.Errorf("%s: id %q, want %q%s", c.name, c.m.ID, c.id, c.idPrefix)
		}
		if c.keepsRouting != (c.m.Routing == rt) {
			t.Errorf("%s: routing %+v", c.name, c.m.Routing)
		}
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"question without options", errOf(Question("", "T", "Q", nil, rt, now)), "at least one option"},
		{"card without title", errOf(Card(json.RawMessage(`{"x":1}`), "", rt)), "title"},
		{"schedule bad cron", errOf(ScheduleTaskAction(Task{Prompt: "p", Recurrence: "* *"}, now)), "recurrence"},
		{"schedule no prompt", errOf(ScheduleTaskAction(Task{}, now)), "prompt"},
		{"unknown task action", errOf(TaskAction("drop_task", "t", now)), "drop_task"},
		{"update nothing", errOf(UpdateTaskAction("t", TaskUpdate{}, now)), "nothing to change"},
		{"unknown action", errOf(Action("launch_rockets", nil, now)), "launch_rockets"},
		{"missing field", errOf(Action(ActionAddMCPServer, json.RawMessage(`{"name":"fs"}`), now)), "command is required"},
		{"wrong type", errOf(Action(ActionInstallPackages, json.RawMessage(`{"apt":"jq"}`), now)), "apt must be a JSON array of strings"},
		{"unknown field", errOf(Action(ActionCreateAgent, json.RawMessage(`{"name":"a","colour":"red"}`), now)), `unknown field "colour"`},
	} {
		if sessiondb.ErrorCode(c.err) != sessiondb.EINVALID || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid mentioning %q", c.name, c.err, c.want)
		}
	}
}

func errOf(_ OutboundMessage, err error) error { return err }
