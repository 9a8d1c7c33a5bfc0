package mailbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// agentJSON runs an agent command with --json and decodes its output.
func agentJSON(t *testing.T, s []string, v any, args ...string) {
	t.Helper()
	out := mustMB(t, with(s, append([]string{"--json", "mailbox", "agent"}, args...)...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("agent %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
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

// hostSide is the host of the session under test, in Go: it delivers what
// the agent sends, recording each row and answering with platform ids
// P-<seq>.
type hostSide struct {
	t         *testing.T
	h         *mailbox.Host
	ref       mailbox.SessionRef
	delivered []mailbox.OutboundRow
}

func (hs *hostSide) drain() mailbox.DrainResult {
	hs.t.Helper()
	res, err := hs.h.Drain(context.Background(), hs.ref, mailbox.DelivererFunc(func(_ context.Context, _ mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		hs.delivered = append(hs.delivered, row)
		if row.Kind == mailbox.KindSystem || strings.Contains(string(row.Content), `"operation"`) {
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

// TestAgentSessionFromTheShell runs a whole agent session through the
// `mailbox agent` command line alone, against a host driven in Go: poll and
// claim a batch, reply, edit the reply by its seq, react, ask a question
// and get the answer, delay a message, keep state, record a tool in flight,
// ack one message completed and fail another, and check what the host saw.
func TestAgentSessionFromTheShell(t *testing.T) {
	data, s := mbSession(t)
	dir := filepath.Join(data, "g1", "s1")
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: data}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &hostSide{t: t, h: h, ref: mailbox.SessionRef{AgentGroupID: "g1", SessionID: "s1"}}

	// The host side: the session's chat and destinations, then traffic.
	mustMB(t, with(s, "mailbox", "project", "--channel-type", "slack", "--platform-id", "C1", "--thread-id", "T9",
		"--channel", "home=slack:C1", "--channel", "ops=slack:C2", "--agent", "research=g-research")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "c1", "--text", "earlier chatter", "--context-only", "--channel-type", "slack", "--platform-id", "C1")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "deploy please", "--sender", "Ada", "--sender-id", "U7",
		"--channel-type", "slack", "--platform-id", "C1", "--thread-id", "T9")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "t1", "--task", "--prompt", "nightly report")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "note", "--text", "you were restarted", "--on-wake")...)

	// pending shows every due row, waking or not; poll the batch.
	var pending []mailbox.InboundRow
	agentJSON(t, s, &pending, "pending")
	if got := ids(pending); !slices.Equal(got, []string{"c1", "m1", "t1"}) {
		t.Fatalf("pending = %v, want c1 m1 t1 (the on_wake row only on a first poll)", got)
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

	// Reply in the thread, then edit the delivered reply by its seq.
	reply := agentSend(t, s, "--reply-to", "m1", "--text", "deploying now")
	hs.drain()
	if r := hs.last(); r.ID != reply.ID || r.InReplyTo != "m1" || r.Routing != (mailbox.Routing{ChannelType: "slack", PlatformID: "C1", ThreadID: "T9"}) {
		t.Fatalf("reply delivered as %+v", r)
	}
	agentSend(t, s, "--edit", strconv.FormatInt(reply.Seq, 10), "--text", "deploying now (v2)")
	hs.drain()
	if c := string(hs.last().Content); c != `{"operation":"edit","messageId":"P-`+strconv.FormatInt(reply.Seq, 10)+`","text":"deploying now (v2)"}` {
		t.Fatalf("edit delivered as %s", c)
	}
	agentSend(t, s, "--react", "2", "--emoji", "thumbs_up") // m1 is seq 4: c1 is 2
	hs.drain()
	if c := string(hs.last().Content); c != `{"operation":"reaction","messageId":"c1","emoji":"thumbs_up"}` {
		t.Fatalf("reaction delivered as %s", c)
	}
	var look mailbox.SeqTarget
	agentJSON(t, s, &look, "lookup", strconv.FormatInt(reply.Seq, 10))
	if look.ID != reply.ID || look.MessageID != "P-"+strconv.FormatInt(reply.Seq, 10) || !look.Outbound {
		t.Fatalf("lookup %d = %+v", reply.Seq, look)
	}

	// Ask a question and wait for the answer.
	out, errOut, stop := mbStart(with(s, "mailbox", "agent", "send", "--id", "q1", "--question", "Roll back?",
		"--option", "Yes", "--option", "Not yet=later", "--wait", "--poll", "10ms")...)
	testkit.WaitFor(t, "the question to be written", func() bool {
		hs.drain()
		return len(hs.delivered) > 0 && hs.last().ID == "q1"
	})
	if c := string(hs.last().Content); c != `{"type":"ask_question","questionId":"q1","title":"Roll back?","question":"Roll back?","options":[{"label":"Yes","selectedLabel":"Yes","value":"Yes"},{"label":"Not yet","selectedLabel":"Not yet","value":"later"}]}` {
		t.Fatalf("question delivered as %s", c)
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

	// A delayed message is not delivered yet, and says so.
	later := agentSend(t, s, "--text", "reminder", "--after", "+1h")
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

	// To its own chat by name: the thread is kept. To another agent.
	home := agentSend(t, s, "--to", "home", "--text", "status: green")
	agentSend(t, s, "--to", "research", "--text", "look into the outage")
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

	// A host action: schedule a task.
	task := agentSend(t, s, "--action", "schedule_task", "--prompt", "weekly digest", "--at", "2030-01-07T09:00:00Z", "--every", "0 9 * * 1")
	hs.drain()
	if c := string(hs.last().Content); hs.last().Kind != mailbox.KindSystem || c != `{"action":"schedule_task","taskId":"`+task.ID+
		`","prompt":"weekly digest","script":null,"processAfter":"2030-01-07T09:00:00.000Z","recurrence":"0 9 * * 1","platformId":"C1","channelType":"slack","threadId":"T9"}` {
		t.Fatalf("schedule_task delivered as %s %s", hs.last().Kind, c)
	}

	// State, the tool in flight, the heartbeat.
	mustMB(t, with(s, "mailbox", "agent", "state", "set", "topic", "deploys")...)
	if got := mustMB(t, with(s, "mailbox", "agent", "state", "get", "topic")...); got != "deploys\n" {
		t.Fatalf("state get = %q", got)
	}
	mustMB(t, with(s, "mailbox", "agent", "state", "clear", "topic")...)
	if r := mb(t, with(s, "mailbox", "agent", "state", "get", "topic")...); r.Code != cli.ExitNotFound {
		t.Fatalf("state get after clear: exit %d", r.Code)
	}
	var st mailbox.ContainerState
	agentJSON(t, s, &st, "tool", "start", "Bash", "--timeout-ms", "600000")
	if st.CurrentTool != "Bash" || st.ToolDeclaredTimeoutMS != 600000 {
		t.Fatalf("tool start: %+v", st)
	}
	if got, err := h.ContainerState(context.Background(), hs.ref); err != nil || got.CurrentTool != "Bash" {
		t.Fatalf("the host reads the tool in flight as %+v, %v", got, err)
	}
	st = mailbox.ContainerState{}
	agentJSON(t, s, &st, "tool", "end")
	if st.CurrentTool != "" {
		t.Fatalf("tool end: %+v", st)
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
	mustMB(t, with(s, "mailbox", "agent", "ack", "m1", "c1", "note")...)
	mustMB(t, with(s, "mailbox", "agent", "fail", "t1")...)
	hs.drain()
	states := map[string]string{}
	for _, r := range lsJSON(t, s).Inbound {
		states[r.ID] = r.State
	}
	if states["m1"] != "completed" || states["t1"] != "failed" || states["c1"] != "completed" {
		t.Fatalf("inbound states after the acks: %v", states)
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
