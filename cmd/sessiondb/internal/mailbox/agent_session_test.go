package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentJSON runs an agent command with --json and decodes its output.
func agentJSON(t *testing.T, s []string, v any, args ...string) {
	t.Helper()
	mbJSON(t, v, with(s, append([]string{"--json", "mailbox", "agent"}, args...)...)...)
}

// sent is an `agent send --json` answer.
type sentAnswer struct {
	ID  string
	Seq int64
}

func agentSend(t *testing.T, s []string, args ...string) sentAnswer {
	t.Helper()
	var a sentAnswer
	agentJSON(t, s, &a, append([]string{"send"}, args...)...)
	return a
}

// hostSide is the host of the session under test, in Go, as the daemon
// behind `sessiondb host` drives it: it delivers what the agent sends,
// recording each row and answering with platform ids P-<seq>; system rows
// (the host actions) go through hostd's HostDeliverer, which carries them
// out in the session's files.
type hostSide struct {
	t         *testing.T
	h         *mailbox.Host
	ref       mailbox.SessionRef
	delivered []mailbox.OutboundRow
}

func (hs *hostSide) drain() mailbox.DrainResult {
	hs.t.Helper()
	actions := &hostd.HostDeliverer{Host: hs.h}
	res, err := hs.h.Drain(context.Background(), hs.ref, mailbox.DelivererFunc(func(ctx context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		hs.delivered = append(hs.delivered, row)
		switch {
		case row.Kind == mailbox.KindSystem:
			return actions.Deliver(ctx, ref, row)
		case strings.Contains(string(row.Content), `"operation"`):
			return "", nil
		}
		return "P-" + strconv.FormatInt(row.Seq, 10), nil
	}))
	if err != nil {
		hs.t.Fatal(err)
	}
	return res
}

func (hs *hostSide) last() mailbox.OutboundRow {
	hs.t.Helper()
	if len(hs.delivered) == 0 {
		hs.t.Fatal("nothing delivered")
	}
	return hs.delivered[len(hs.delivered)-1]
}

// sessionFiles reads a session's inbound.db and outbound.db as another
// process would (a fresh read-only connection per query), so a test sees
// what is in the files, not what a command printed.
type sessionFiles struct {
	t   *testing.T
	dir string
}

func (f sessionFiles) in(q string, args ...any) [][]any {
	f.t.Helper()
	return sqlitetest.QueryFile(f.t, filepath.Join(f.dir, mailbox.InboundFile), q, args...)
}

func (f sessionFiles) out(q string, args ...any) [][]any {
	f.t.Helper()
	return sqlitetest.QueryFile(f.t, filepath.Join(f.dir, mailbox.OutboundFile), q, args...)
}

// outRow is the agent's row id in outbound.db: kind, in_reply_to,
// routing, content and deliver_after, NULLs as "<nil>".
func (f sessionFiles) outRow(id string) []string {
	f.t.Helper()
	rows := f.out("SELECT kind, in_reply_to, channel_type, platform_id, thread_id, content, deliver_after FROM messages_out WHERE id = ?", id)
	if len(rows) != 1 {
		f.t.Fatalf("outbound.db has %d rows with id %s, want 1", len(rows), id)
	}
	return texts(rows[0])
}

// acks is processing_ack as message id → status.
func (f sessionFiles) acks() map[string]string {
	f.t.Helper()
	return keyed(f.out("SELECT message_id, status FROM processing_ack"))
}

// inStates is messages_in as id → status.
func (f sessionFiles) inStates() map[string]string {
	f.t.Helper()
	return keyed(f.in("SELECT id, status FROM messages_in"))
}

// keyed is rows of two text columns as first → second.
func keyed(rows [][]any) map[string]string {
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		m[r[0].(string)] = r[1].(string)
	}
	return m
}

func texts(row []any) []string {
	out := make([]string, len(row))
	for i, v := range row {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// TestAgentSessionFromTheShell runs a whole agent session through the
// `mailbox agent` command line alone, against a host driven in Go: poll and
// claim a batch, reply, edit the reply by its seq, react, ask a question
// and get the answer, delay a message, keep state, record a tool in flight,
// ack one message completed and fail another. Each step is checked in the
// commands' output and in the session's two files.
func TestAgentSessionFromTheShell(t *testing.T) {
	data, s := mbSession(t)
	dir := filepath.Join(data, "g1", "s1")
	files := sessionFiles{t, dir}
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: data}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &hostSide{t: t, h: h, ref: mailbox.SessionRef{AgentGroupID: "g1", SessionID: "s1"}}

	// The host side: the session's chat and destinations, then traffic.
	mustMB(t, with(s, "mailbox", "project", "--channel-type", "slack", "--platform-id", "C1", "--thread-id", "T9",
		"--channel", "home=slack:C1", "--channel", "ops=slack:C2", "--agent", "research=g-research")...)
	if got := files.in("SELECT channel_type, platform_id, thread_id FROM session_routing"); len(got) != 1 || !slices.Equal(texts(got[0]), []string{"slack", "C1", "T9"}) {
		t.Fatalf("session_routing in inbound.db: %v", got)
	}
	if got := files.in("SELECT name, type, channel_type, platform_id, agent_group_id FROM destinations ORDER BY name"); len(got) != 3 ||
		!slices.Equal(texts(got[0]), []string{"home", "channel", "slack", "C1", "<nil>"}) ||
		!slices.Equal(texts(got[2]), []string{"research", "agent", "<nil>", "<nil>", "g-research"}) {
		t.Fatalf("destinations in inbound.db: %v", got)
	}
	mustMB(t, with(s, "mailbox", "send", "--id", "c1", "--text", "earlier chatter", "--context-only", "--channel-type", "slack", "--platform-id", "C1")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "deploy please", "--sender", "Ada", "--sender-id", "U7",
		"--channel-type", "slack", "--platform-id", "C1", "--thread-id", "T9")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "t1", "--task", "--prompt", "nightly report")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "note", "--text", "you were restarted", "--on-wake")...)
	var inbound [][]string
	for _, r := range files.in("SELECT id, seq, kind, trigger, on_wake, status FROM messages_in ORDER BY seq") {
		inbound = append(inbound, texts(r))
	}
	if want := [][]string{
		{"c1", "2", "chat", "0", "0", "pending"}, {"m1", "4", "chat", "1", "0", "pending"},
		{"t1", "6", "task", "1", "0", "pending"}, {"note", "8", "chat", "1", "1", "pending"},
	}; !slices.EqualFunc(inbound, want, slices.Equal) {
		t.Fatalf("messages_in = %v, want %v (the host's even seqs; context and on-wake flags)", inbound, want)
	}

	// pending shows every due row, waking or not; poll the batch.
	var pending []mailbox.InboundRow
	agentJSON(t, s, &pending, "pending")
	if got := ids(pending); !slices.Equal(got, []string{"c1", "m1", "t1"}) {
		t.Fatalf("pending = %v, want c1 m1 t1 (the on_wake row only on a first poll)", got)
	}
	if got := files.acks(); len(got) != 0 {
		t.Fatalf("pending wrote acks: %v", got)
	}
	var batch []mailbox.InboundRow
	agentJSON(t, s, &batch, "poll", "--claim", "--first")
	if got := ids(batch); !slices.Equal(got, []string{"c1", "m1", "t1", "note"}) || batch[0].Trigger {
		t.Fatalf("first poll = %v, want c1 (context) m1 t1 note", got)
	}
	var content struct{ Sender, SenderID string }
	json.Unmarshal(batch[1].Content, &content)
	if content.Sender != "Ada" || content.SenderID != "U7" {
		t.Fatalf("m1 content %s: want sender Ada, senderId U7", batch[1].Content)
	}
	var acks []mailbox.Claim
	agentJSON(t, s, &acks, "acks")
	if len(acks) != 4 || acks[0].Status != mailbox.AckProcessing {
		t.Fatalf("acks after --claim: %+v, want four processing claims", acks)
	}
	if got := files.acks(); !maps.Equal(got, map[string]string{"c1": "processing", "m1": "processing", "t1": "processing", "note": "processing"}) {
		t.Fatalf("processing_ack in outbound.db after poll --claim: %v", got)
	}
	// The agent writes only outbound.db: inbound.db's rows are as the host left them.
	for id, st := range files.inStates() {
		if st != "pending" {
			t.Fatalf("inbound.db's %s is %s after the agent's poll, want pending", id, st)
		}
	}

	// Reply in the thread, then edit the delivered reply by its seq.
	reply := agentSend(t, s, "--reply-to", "m1", "--text", "deploying now")
	if reply.Seq%2 != 1 || reply.Seq < 9 || !strings.HasPrefix(reply.ID, "msg-") {
		t.Fatalf("send --json = %+v, want a msg- id and an odd seq after the host's 8", reply)
	}
	if got := files.outRow(reply.ID); !slices.Equal(got, []string{"chat", "m1", "slack", "C1", "T9", `{"text":"deploying now"}`, "<nil>"}) {
		t.Fatalf("the reply in outbound.db: %v", got)
	}
	if got := files.out("SELECT seq FROM messages_out WHERE id = ?", reply.ID); got[0][0] != reply.Seq {
		t.Fatalf("the reply's seq in outbound.db %v, send said %d", got[0][0], reply.Seq)
	}
	hs.drain()
	if r := hs.last(); r.ID != reply.ID || r.InReplyTo != "m1" || r.Routing != (mailbox.Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T9"}) {
		t.Fatalf("reply delivered as %+v", r)
	}
	replyPID := "P-" + strconv.FormatInt(reply.Seq, 10)
	if got := files.in("SELECT platform_message_id, status FROM delivered WHERE message_out_id = ?", reply.ID); len(got) != 1 ||
		!slices.Equal(texts(got[0]), []string{replyPID, "delivered"}) {
		t.Fatalf("delivered row of the reply in inbound.db: %v", got)
	}
	edit := agentSend(t, s, "--edit", strconv.FormatInt(reply.Seq, 10), "--text", "deploying now (v2)")
	if edit.Seq <= reply.Seq || edit.Seq%2 != 1 {
		t.Fatalf("edit seq %d after reply seq %d", edit.Seq, reply.Seq)
	}
	wantEdit := `{"operation":"edit","messageId":"` + replyPID + `","text":"deploying now (v2)"}`
	if got := files.outRow(edit.ID); !slices.Equal(got, []string{"chat", "<nil>", "slack", "C1", "T9", wantEdit, "<nil>"}) {
		t.Fatalf("the edit in outbound.db: %v (want the reply's platform id and chat)", got)
	}
	hs.drain()
	if c := string(hs.last().Content); c != wantEdit {
		t.Fatalf("edit delivered as %s", c)
	}
	react := agentSend(t, s, "--react", "2", "--emoji", "thumbs_up") // seq 2 is c1, the host's first row
	wantReact := `{"operation":"reaction","messageId":"c1","emoji":"thumbs_up"}`
	if got := files.outRow(react.ID); !slices.Equal(got, []string{"chat", "<nil>", "slack", "C1", "<nil>", wantReact, "<nil>"}) {
		t.Fatalf("the reaction in outbound.db: %v (want c1's chat, which has no thread)", got)
	}
	hs.drain()
	if c := string(hs.last().Content); c != wantReact {
		t.Fatalf("reaction delivered as %s", c)
	}
	var look mailbox.SeqTarget
	agentJSON(t, s, &look, "lookup", strconv.FormatInt(reply.Seq, 10))
	if look.ID != reply.ID || look.MessageID != replyPID || !look.Outbound {
		t.Fatalf("lookup %d = %+v", reply.Seq, look)
	}

	// Ask a question and wait for the answer.
	out, errOut, stop := mbStart(with(s, "mailbox", "agent", "send", "--id", "q1", "--question", "Roll back?",
		"--option", "Yes", "--option", "Not yet=later", "--wait", "--poll", "10ms")...)
	testkit.WaitFor(t, "the question to be written", func() bool {
		hs.drain()
		return len(hs.delivered) > 0 && hs.last().ID == "q1"
	})
	wantQ := `{"type":"ask_question","questionId":"q1","title":"Roll back?","question":"Roll back?","options":[{"label":"Yes","selectedLabel":"Yes","value":"Yes"},{"label":"Not yet","selectedLabel":"Not yet","value":"later"}]}`
	if c := string(hs.last().Content); c != wantQ {
		t.Fatalf("question delivered as %s", c)
	}
	if got := files.outRow("q1"); !slices.Equal(got, []string{mailbox.KindChatSDK, "<nil>", "slack", "C1", "T9", wantQ, "<nil>"}) {
		t.Fatalf("the question in outbound.db: %v", got)
	}
	ans, err := mailbox.QuestionResponse("q1", "later", "U7", hs.last().Routing, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Enqueue(context.Background(), hs.ref, ans); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the answer", func() bool { return out.String() == "later\n" })
	if code := stop(); code != 0 {
		t.Fatalf("send --question --wait exit %d: %s", code, errOut.String())
	}
	if got := files.acks()[ans.ID]; got != mailbox.AckCompleted {
		t.Fatalf("the answer %s is %q in processing_ack, want completed (the waiting send consumed it)", ans.ID, got)
	}

	// A delayed message is not delivered yet, and says so; its
	// deliver_after is an hour on, in the form NanoClaw's host compares.
	before := time.Now().UTC()
	later := agentSend(t, s, "--text", "reminder", "--after", "+1h")
	after := time.Now().UTC()
	if res := hs.drain(); res.Delivered != 0 {
		t.Fatalf("a message delayed by an hour was delivered: %+v", res)
	}
	var own []sentRow
	agentJSON(t, s, &own, "sent", "--limit", "1")
	if len(own) != 1 || own[0].ID != later.ID || own[0].Delivery.Status != mailbox.DeliveryUndelivered ||
		!regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`).MatchString(sqlitetest.QueryFile(t, filepath.Join(dir, "outbound.db"),
			"SELECT deliver_after FROM messages_out WHERE id = ?", later.ID)[0][0].(string)) {
		t.Fatalf("sent = %+v", own)
	}
	da, err := time.Parse(time.DateTime, files.outRow(later.ID)[6])
	if err != nil || da.Before(before.Add(time.Hour).Truncate(time.Second)) || da.After(after.Add(time.Hour+time.Second)) {
		t.Fatalf("deliver_after %v (%v), want an hour after %v", da, err, before)
	}
	if got := files.in("SELECT count(*) FROM delivered WHERE message_out_id = ?", later.ID); got[0][0] != int64(0) {
		t.Fatalf("the delayed message has a delivered row")
	}
	due := files.out("SELECT id FROM messages_out WHERE deliver_after IS NULL OR deliver_after <= datetime('now')") // NanoClaw's host
	for _, r := range due {
		if r[0] == later.ID {
			t.Fatalf("NanoClaw's delivery query selects the delayed message now")
		}
	}
	if len(due) == 0 {
		t.Fatalf("NanoClaw's delivery query selects nothing: the undelayed rows are due")
	}

	// To its own chat by name: the thread is kept. To another agent.
	home := agentSend(t, s, "--to", "home", "--text", "status: green")
	research := agentSend(t, s, "--to", "research", "--text", "look into the outage")
	if got := files.outRow(home.ID); !slices.Equal(got[2:5], []string{"slack", "C1", "T9"}) {
		t.Fatalf("--to home in outbound.db: %v", got)
	}
	if got := files.outRow(research.ID); !slices.Equal(got[2:5], []string{mailbox.ChannelAgent, "g-research", "<nil>"}) {
		t.Fatalf("--to research in outbound.db: %v", got)
	}
	hs.drain()
	byID := map[string]mailbox.OutboundRow{}
	for _, r := range hs.delivered {
		byID[r.ID] = r
	}
	if r := byID[home.ID].Routing; r.ThreadID != "T9" {
		t.Fatalf("--to its own chat: routing %+v, want the thread kept", r)
	}
	if r := hs.last().Routing; r != (mailbox.Routing{ChannelType: mailbox.ChannelAgent, PlatformID: "g-research"}) {
		t.Fatalf("--to research: routing %+v", r)
	}

	// A host action: schedule a task. The host turns it into a task row.
	task := agentSend(t, s, "--action", "schedule_task", "--prompt", "weekly digest", "--at", "2030-01-07T09:00:00Z", "--every", "0 9 * * 1")
	hs.drain()
	if c := string(hs.last().Content); hs.last().Kind != mailbox.KindSystem || c != `{"action":"schedule_task","taskId":"`+task.ID+
		`","prompt":"weekly digest","script":null,"processAfter":"2030-01-07T09:00:00.000Z","recurrence":"0 9 * * 1","platformId":"C1","channelType":"slack","threadId":"T9"}` {
		t.Fatalf("schedule_task delivered as %s %s", hs.last().Kind, c)
	}
	if got := files.in("SELECT kind, status, process_after, recurrence, series_id, channel_type, platform_id, thread_id FROM messages_in WHERE id = ?", task.ID); len(got) != 1 ||
		!slices.Equal(texts(got[0]), []string{"task", "pending", "2030-01-07T09:00:00.000Z", "0 9 * * 1", task.ID, "slack", "C1", "T9"}) {
		t.Fatalf("the scheduled task in inbound.db: %v", got)
	}

	// State, the tool in flight, the heartbeat.
	mustMB(t, with(s, "mailbox", "agent", "state", "set", "topic", "deploys")...)
	if got := files.out("SELECT value FROM session_state WHERE key = 'topic'"); len(got) != 1 || got[0][0] != "deploys" {
		t.Fatalf("session_state in outbound.db: %v", got)
	}
	if got := mustMB(t, with(s, "mailbox", "agent", "state", "get", "topic")...); got != "deploys\n" {
		t.Fatalf("state get = %q", got)
	}
	var kv map[string]string
	agentJSON(t, s, &kv, "state", "get", "topic")
	if !maps.Equal(kv, map[string]string{"key": "topic", "value": "deploys"}) {
		t.Fatalf("state get --json = %v", kv)
	}
	mustMB(t, with(s, "mailbox", "agent", "state", "clear", "topic")...)
	if got := files.out("SELECT count(*) FROM session_state WHERE key = 'topic'"); got[0][0] != int64(0) {
		t.Fatalf("state clear left the row in outbound.db")
	}
	if r := mb(t, with(s, "mailbox", "agent", "state", "get", "topic")...); r.Code != cli.ExitNotFound {
		t.Fatalf("state get after clear: exit %d", r.Code)
	}
	var st mailbox.ContainerState
	agentJSON(t, s, &st, "tool", "start", "Bash", "--timeout-ms", "600000")
	if st.CurrentTool != "Bash" || st.ToolDeclaredTimeoutMS != 600000 {
		t.Fatalf("tool start: %+v", st)
	}
	if got := files.out("SELECT current_tool, tool_declared_timeout_ms FROM container_state"); len(got) != 1 || !slices.Equal(texts(got[0]), []string{"Bash", "600000"}) {
		t.Fatalf("container_state in outbound.db: %v", got)
	}
	if got, err := h.ContainerState(context.Background(), hs.ref); err != nil || got.CurrentTool != "Bash" {
		t.Fatalf("the host reads the tool in flight as %+v, %v", got, err)
	}
	st = mailbox.ContainerState{}
	agentJSON(t, s, &st, "tool", "end")
	if st.CurrentTool != "" {
		t.Fatalf("tool end: %+v", st)
	}
	if got := files.out("SELECT current_tool FROM container_state"); len(got) > 1 || (len(got) == 1 && got[0][0] != nil) {
		t.Fatalf("container_state after tool end: %v, want no tool", got)
	}
	os.Remove(filepath.Join(dir, ".heartbeat"))
	mustMB(t, with(s, "mailbox", "agent", "heartbeat")...)
	if hb, err := h.Heartbeat(hs.ref); err != nil || hb.IsZero() {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}

	// Ack: an unknown id is refused and nothing is written; then m1 is
	// done and the task failed.
	if r := mb(t, with(s, "mailbox", "agent", "ack", "m1", "no-such-id")...); r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "no-such-id") {
		t.Fatalf("ack of an unknown id: exit %d %q", r.Code, r.Stderr)
	}
	agentJSON(t, s, &acks, "acks")
	for _, a := range acks {
		if a.MessageID == "m1" && a.Status != mailbox.AckProcessing {
			t.Fatalf("the refused ack wrote m1 as %s", a.Status)
		}
	}
	if got := files.acks(); got["m1"] != mailbox.AckProcessing || got["no-such-id"] != "" {
		t.Fatalf("processing_ack after the refused ack: %v", got)
	}
	var acked struct {
		Acked  []string
		Status string
	}
	agentJSON(t, s, &acked, "ack", "m1", "c1", "note")
	if !slices.Equal(acked.Acked, []string{"m1", "c1", "note"}) || acked.Status != mailbox.AckCompleted {
		t.Fatalf("ack --json = %+v", acked)
	}
	agentJSON(t, s, &acked, "fail", "t1")
	if !slices.Equal(acked.Acked, []string{"t1"}) || acked.Status != mailbox.AckFailed {
		t.Fatalf("fail --json = %+v", acked)
	}
	if got := files.acks(); got["m1"] != "completed" || got["c1"] != "completed" || got["note"] != "completed" || got["t1"] != "failed" {
		t.Fatalf("processing_ack after ack and fail: %v", got)
	}
	hs.drain()
	states := map[string]string{}
	for _, r := range lsJSON(t, s).Inbound {
		states[r.ID] = r.State
	}
	if states["m1"] != "completed" || states["t1"] != "failed" || states["c1"] != "completed" {
		t.Fatalf("inbound states after the acks: %v", states)
	}
	// The host mirrored the acks into inbound.db.
	if got := files.inStates(); got["m1"] != "completed" || got["c1"] != "completed" || got["note"] != "completed" || got["t1"] != "failed" || got[task.ID] != "pending" {
		t.Fatalf("messages_in after the host synced the acks: %v", got)
	}
	if out := mustMB(t, with(s, "mailbox", "agent", "poll")...); out != "" {
		t.Fatalf("poll after everything was acked: %q", out)
	}
}

func ids(rows []mailbox.InboundRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// TestAgentPollClearsStaleClaims: a poll starts as a fresh agent, so the
// claims of a crashed run come back; --keep-claims leaves them.
func TestAgentPollClearsStaleClaims(t *testing.T) {
	_, s := mbSession(t)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "one", "--channel-type", "cli", "--platform-id", "me")...)
	if out := mustMB(t, with(s, "mailbox", "agent", "poll", "--claim")...); !strings.HasPrefix(out, "m1\t") {
		t.Fatalf("first poll %q", out)
	}
	// Work in flight: still claimed.
	if out := mustMB(t, with(s, "mailbox", "agent", "poll", "--keep-claims")...); out != "" {
		t.Fatalf("poll --keep-claims while m1 is claimed: %q", out)
	}
	// The run crashed: the next run's poll takes m1 back.
	if out := mustMB(t, with(s, "mailbox", "agent", "poll")...); !strings.HasPrefix(out, "m1\t") {
		t.Fatalf("poll of a new run: %q, want m1 again", out)
	}
}

// TestAgentPollWaitInterrupted: Ctrl-C ends poll --wait with status 130
// and nothing on stderr.
func TestAgentPollWaitInterrupted(t *testing.T) {
	_, s := mbSession(t)
	out, errOut, stop := mbStart(with(s, "mailbox", "agent", "poll", "--wait", "--poll", "10ms")...)
	if code := stop(); code != cli.ExitInterrupted || out.String() != "" || errOut.String() != "" {
		t.Fatalf("interrupted poll --wait: exit %d, stdout %q, stderr %q; want 130 and no output", code, out.String(), errOut.String())
	}
}

func TestAgentCLIBadInput(t *testing.T) {
	_, s := mbSession(t)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "one", "--channel-type", "cli", "--platform-id", "me")...)
	a := func(args ...string) []string { return with(s, append([]string{"mailbox", "agent"}, args...)...) }
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"two shapes", a("send", "--markdown", "x", "--content", "{}"), cli.ExitInvalid, "not several"},
		{"text with react", a("send", "--react", "2", "--emoji", "x", "--text", "y"), cli.ExitInvalid, "--text does not go with --react"},
		{"emoji alone", a("send", "--text", "x", "--emoji", "y"), cli.ExitInvalid, "--emoji goes with --react"},
		{"edit unknown seq", a("send", "--edit", "99", "--text", "x"), cli.ExitNotFound, "seq 99"},
		{"react without emoji", a("send", "--react", "2"), cli.ExitInvalid, "emoji"},
		{"question without options", a("send", "--question", "Q?"), cli.ExitInvalid, "option"},
		{"wait without question", a("send", "--text", "x", "--wait"), cli.ExitInvalid, "--wait goes with --question"},
		{"unknown action", a("send", "--action", "launch"), cli.ExitInvalid, "launch"},
		{"action fields missing", a("send", "--action", "add_mcp_server", "--args", `{"name":"fs"}`), cli.ExitInvalid, "command is required"},
		{"task flag without action", a("send", "--text", "x", "--prompt", "p"), cli.ExitInvalid, "--prompt goes with --action"},
		{"cancel without task id", a("send", "--action", "cancel_task"), cli.ExitInvalid, "task id"},
		{"update with nothing", a("send", "--action", "update_task", "--task-id", "t"), cli.ExitInvalid, "nothing to change"},
		{"kind with text", a("send", "--text", "x", "--kind", "system"), cli.ExitInvalid, "--kind goes with --content"},
		{"no default target", a("send", "--text", "x"), cli.ExitNotFound, "no default target"},
		{"reply to unknown", a("send", "--reply-to", "nope", "--text", "x"), cli.ExitNotFound, "nope"},
		{"fail unknown", a("fail", "nope"), cli.ExitNotFound, "nope"},
		{"lookup not a number", a("lookup", "x"), cli.ExitInvalid, "seq"},
		{"lookup unknown", a("lookup", "41"), cli.ExitNotFound, "seq 41"},
		{"tool verb", a("tool", "begin"), cli.ExitInvalid, "start NAME"},
		{"tool start without name", a("tool", "start"), cli.ExitInvalid, "start NAME"},
		{"state list with provider", a("state", "list", "--continuation", "claude"), cli.ExitInvalid, "--continuation"},
		{"negative pending limit", a("pending", "--limit", "-1"), cli.ExitInvalid, "--limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mb(t, c.args...)
			if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", r.Code, r.Stderr, c.code, c.want)
			}
		})
	}
	if out := mustMB(t, a("sent")...); strings.Count(out, "\n") != 1 {
		t.Fatalf("the refused sends wrote rows:\n%s", out)
	}
}

func TestProjectCommand(t *testing.T) {
	_, s := mbSession(t)
	var p projection
	decode := func(out string) {
		t.Helper()
		p = projection{}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	decode(mustMB(t, with(s, "--json", "mailbox", "project", "--channel-type", "slack", "--platform-id", "C1",
		"--channel", "team=slack:C2:with:colons", "--agent", "research=g-research")...))
	if p.Routing != (mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}) || len(p.Destinations) != 2 ||
		p.Destinations[1] != (mailbox.Destination{Name: "team", DisplayName: "team", Type: "channel", ChannelType: "slack", PlatformID: "C2:with:colons"}) ||
		p.Destinations[0] != (mailbox.Destination{Name: "research", DisplayName: "research", Type: "agent", AgentGroupID: "g-research"}) {
		t.Fatalf("projection %+v", p)
	}
	// Routing alone keeps the destinations; destinations alone replace the
	// table and keep the routing.
	decode(mustMB(t, with(s, "--json", "mailbox", "project", "--channel-type", "cli", "--platform-id", "me", "--thread-id", "t")...))
	if p.Routing.ThreadID != "t" || len(p.Destinations) != 2 {
		t.Fatalf("after a routing change %+v", p)
	}
	decode(mustMB(t, with(s, "--json", "mailbox", "project", "--destinations", `[{"name":"x","type":"agent","agent_group_id":"g2"}]`)...))
	if p.Routing.PlatformID != "me" || len(p.Destinations) != 1 || p.Destinations[0].Name != "x" {
		t.Fatalf("after a table change %+v", p)
	}
	decode(mustMB(t, with(s, "--json", "mailbox", "project", "--no-routing", "--no-destinations")...))
	if !p.Routing.IsZero() || len(p.Destinations) != 0 {
		t.Fatalf("after clearing %+v", p)
	}
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"bad channel", "NAME=CHANNEL_TYPE:PLATFORM_ID", []string{"--channel", "team=slack"}},
		{"bad agent", "NAME=AGENT_GROUP", []string{"--agent", "research"}},
		{"bad json", "--destinations", []string{"--destinations", `{"name":"x"}`}},
		{"unknown field", "--destinations", []string{"--destinations", `[{"name":"x","kind":"agent"}]`}},
		{"channel without platform", "channel_type and platform_id", []string{"--destinations", `[{"name":"x","type":"channel","channel_type":"slack"}]`}},
		{"both routing and none", "not both", []string{"--no-routing", "--channel-type", "cli", "--platform-id", "me"}},
		{"twice the same name", "twice", []string{"--agent", "a=g1", "--agent", "a=g2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mb(t, with(s, append([]string{"mailbox", "project"}, c.args...)...)...)
			if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want invalid mentioning %q", r.Code, r.Stderr, c.want)
			}
		})
	}
}

// TestAgentShapesAndReadsFromTheShell covers what the whole-session test
// does not: routing and destinations as the agent sees them, the other
// outbound shapes (markdown, raw content, card, another chat by name or by
// routing flags, a delay to a fixed time, every host action), a
// continuation id, the state list, tool show and pending --wait; each
// written row is checked in outbound.db.
func TestAgentShapesAndReadsFromTheShell(t *testing.T) {
	data, s := mbSession(t)
	files := sessionFiles{t, filepath.Join(data, "g1", "s1")}
	a := func(args ...string) []string { return with(s, append([]string{"mailbox", "agent"}, args...)...) }
	aj := func(args ...string) []string {
		return with(s, append([]string{"--json", "mailbox", "agent"}, args...)...)
	}

	// No chat projected yet: no default target, and routing says why.
	var rv routingView
	mbJSON(t, &rv, aj("routing")...)
	if rv.Default != nil || !strings.Contains(rv.Error, "no default target") || !rv.Session.IsZero() {
		t.Fatalf("routing --json before any projection: %+v", rv)
	}
	if out := mustMB(t, a("routing")...); !strings.HasPrefix(out, "session: -\ndefault: none (") {
		t.Fatalf("routing before any projection: %q", out)
	}
	if out := mustMB(t, aj("destinations")...); strings.TrimSpace(out) != "[]" {
		t.Fatalf("destinations --json before any projection: %q", out)
	}

	mustMB(t, with(s, "mailbox", "project", "--channel-type", "slack", "--platform-id", "C1", "--thread-id", "T1",
		"--channel", "ops=slack:C2", "--agent", "research=g-research")...)
	rv = routingView{}
	mbJSON(t, &rv, aj("routing")...)
	chat := mailbox.Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T1"}
	if rv.Session != chat || rv.Default == nil || *rv.Default != chat || rv.Error != "" {
		t.Fatalf("routing --json: %+v", rv)
	}
	if out := mustMB(t, a("routing")...); out != "session: slack:C1/T1\ndefault: slack:C1/T1\n" {
		t.Fatalf("routing: %q", out)
	}
	var ds []mailbox.Destination
	mbJSON(t, &ds, aj("destinations")...)
	byName := map[string]mailbox.Destination{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	if len(ds) != 2 || byName["ops"].Type != mailbox.DestinationChannel || byName["ops"].PlatformID != "C2" ||
		byName["research"].Type != "agent" || byName["research"].AgentGroupID != "g-research" {
		t.Fatalf("destinations --json: %+v", ds)
	}
	out := mustMB(t, a("destinations")...)
	for _, re := range []string{`(?m)^ops\s+channel\s+slack:C2\s+ops$`, `(?m)^research\s+agent\s+g-research\s+research$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("destinations table lacks a line matching %s:\n%s", re, out)
		}
	}

	// Shapes with ids of our own: kind, routing and content in outbound.db.
	for _, c := range []struct {
		name string
		args []string
		want []string // kind, in_reply_to, channel_type, platform_id, thread_id, content, deliver_after
	}{
		{"markdown", []string{"--id", "o-md", "--markdown", "**done**"},
			[]string{"chat", "<nil>", "slack", "C1", "T1", `{"markdown":"**done**"}`, "<nil>"}},
		{"raw content", []string{"--id", "o-raw", "--content", `{"text":"raw","isFromMe":true}`, "--kind", "chat-sdk"},
			[]string{"chat-sdk", "<nil>", "slack", "C1", "T1", `{"text":"raw","isFromMe":true}`, "<nil>"}},
		{"card", []string{"--id", "o-card", "--card", `{"title":"Deploy","actions":[{"label":"Open","url":"https://ci.example/1"}]}`, "--text", "Deploy: see CI"},
			[]string{"chat-sdk", "<nil>", "slack", "C1", "T1", `{"type":"card","card":{"title":"Deploy","actions":[{"label":"Open","url":"https://ci.example/1"}]},"fallbackText":"Deploy: see CI"}`, "<nil>"}},
		{"another chat by name", []string{"--id", "o-ops", "--to", "ops", "--text", "heads up"},
			[]string{"chat", "<nil>", "slack", "C2", "<nil>", `{"text":"heads up"}`, "<nil>"}},
		{"routing flags", []string{"--id", "o-dm", "--channel-type", "discord", "--platform-id", "D1", "--thread-id", "X", "--text", "dm"},
			[]string{"chat", "<nil>", "discord", "D1", "X", `{"text":"dm"}`, "<nil>"}},
		{"fixed delay, rounded up to the second", []string{"--id", "o-at", "--text", "later", "--after", "2031-02-03T04:05:06.5Z"},
			[]string{"chat", "<nil>", "slack", "C1", "T1", `{"text":"later"}`, "2031-02-03 04:05:07"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := sessionFiles{t, files.dir}
			id := c.args[1]
			if got := agentSend(t, s, c.args...); got.ID != id || got.Seq%2 != 1 {
				t.Fatalf("send --json = %+v, want id %s and an odd seq", got, id)
			}
			if got := files.outRow(id); !slices.Equal(got, c.want) {
				t.Fatalf("outbound.db row %v\nwant %v", got, c.want)
			}
		})
	}

	// The host actions: kind system, the section 16 shapes.
	for _, c := range []struct {
		name, idPrefix string
		args           []string
		content        func(id string) string
	}{
		{"cancel_task", "sys-", []string{"--action", "cancel_task", "--task-id", "t9"},
			func(string) string { return `{"action":"cancel_task","taskId":"t9"}` }},
		{"pause_task", "sys-", []string{"--action", "pause_task", "--task-id", "t9"},
			func(string) string { return `{"action":"pause_task","taskId":"t9"}` }},
		{"resume_task", "sys-", []string{"--action", "resume_task", "--task-id", "t9"},
			func(string) string { return `{"action":"resume_task","taskId":"t9"}` }},
		{"update_task", "sys-", []string{"--action", "update_task", "--task-id", "t9", "--prompt", "p2", "--at", "2031-01-01T00:00:00Z", "--no-every", "--no-script"},
			func(string) string {
				return `{"action":"update_task","taskId":"t9","prompt":"p2","processAfter":"2031-01-01T00:00:00.000Z","recurrence":null,"script":null}`
			}},
		{"create_agent", "msg-", []string{"--action", "create_agent", "--args", `{"name":"helper"}`},
			func(id string) string {
				return `{"action":"create_agent","requestId":"` + id + `","name":"helper","instructions":null}`
			}},
		{"install_packages", "msg-", []string{"--action", "install_packages", "--args", `{"apt":["jq"],"reason":"parse JSON"}`},
			func(string) string {
				return `{"action":"install_packages","apt":["jq"],"npm":[],"reason":"parse JSON"}`
			}},
		{"add_mcp_server", "msg-", []string{"--action", "add_mcp_server", "--args", `{"name":"fs","command":"mcp-fs","args":["/srv"]}`},
			func(string) string {
				return `{"action":"add_mcp_server","name":"fs","command":"mcp-fs","args":["/srv"],"env":{}}`
			}},
		{"cli_request with its own id", "req-7", []string{"--action", "cli_request", "--args", `{"requestId":"req-7","command":"status"}`},
			func(string) string {
				return `{"action":"cli_request","requestId":"req-7","command":"status","args":null}`
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := sessionFiles{t, files.dir}
			got := agentSend(t, s, c.args...)
			if !strings.HasPrefix(got.ID, c.idPrefix) {
				t.Fatalf("send --json id %q, want prefix %s", got.ID, c.idPrefix)
			}
			if row := files.outRow(got.ID); row[0] != mailbox.KindSystem || row[5] != c.content(got.ID) {
				t.Fatalf("outbound.db row %v\nwant kind system, content %s", row, c.content(got.ID))
			}
		})
	}

	// A continuation id per provider (NanoClaw's key), beside plain keys.
	mustMB(t, a("state", "set", "--continuation", "Claude", "sess-42")...)
	mustMB(t, a("state", "set", "topic", "deploys")...)
	if got := files.out("SELECT key, value FROM session_state ORDER BY key"); len(got) != 2 ||
		!slices.Equal(texts(got[0]), []string{"continuation:claude", "sess-42"}) || !slices.Equal(texts(got[1]), []string{"topic", "deploys"}) {
		t.Fatalf("session_state in outbound.db: %v", got)
	}
	if out := mustMB(t, a("state", "get", "--continuation", "claude")...); out != "sess-42\n" {
		t.Fatalf("state get --continuation: %q", out)
	}
	var kv map[string]string
	mbJSON(t, &kv, aj("state", "list")...)
	if !maps.Equal(kv, map[string]string{"continuation:claude": "sess-42", "topic": "deploys"}) {
		t.Fatalf("state list --json: %v", kv)
	}
	mustMB(t, a("state", "clear", "--continuation", "claude")...)
	if got := files.out("SELECT key FROM session_state"); len(got) != 1 || got[0][0] != "topic" {
		t.Fatalf("session_state after clearing the continuation: %v", got)
	}

	// tool show: nothing, then the tool with its timeout, as recorded.
	if out := mustMB(t, a("tool", "show")...); out != "no tool in flight\n" {
		t.Fatalf("tool show with none: %q", out)
	}
	mustMB(t, a("tool", "start", "Read")...)
	started := files.out("SELECT tool_started_at, tool_declared_timeout_ms FROM container_state")
	if len(started) != 1 || started[0][1] != int64(0) && started[0][1] != nil {
		t.Fatalf("container_state after tool start Read: %v", started)
	}
	if out := mustMB(t, a("tool", "show")...); out != "Read since "+started[0][0].(string)+"\n" {
		t.Fatalf("tool show: %q, want the start time in outbound.db (%v)", out, started[0][0])
	}

	// pending --wait returns once a row is due, waking or not.
	pend, _, stop := mbStart(a("pending", "--wait", "--poll", "10ms")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "ctx1", "--text", "fyi", "--context-only")...)
	testkit.WaitFor(t, "pending --wait to print the context row", func() bool { return strings.HasPrefix(pend.String(), "ctx1\t") })
	if code := stop(); code != 0 {
		t.Fatalf("pending --wait exit %d", code)
	}
	if got := files.acks(); len(got) != 0 {
		t.Fatalf("pending wrote acks: %v", got)
	}
}
