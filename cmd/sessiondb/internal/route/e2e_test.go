package route_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/admin"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/host"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/mailbox"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/route"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/testkit"
	mb "github.com/sessiondb/sessiondb/mailbox"
)

var groups = []cli.Group{admin.Commands, host.Commands, mailbox.Commands, route.Commands}

// run runs one command line and fails the test unless it exits 0.
func run(t *testing.T, args ...string) string {
	t.Helper()
	return clitest.Must(t, args, groups...).Stdout
}

// runJSON runs one command line (with --json among args), fails the test
// unless it exits 0, and decodes stdout into v.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	clitest.Must(t, args, groups...).Decode(t, v)
}

// delivered reads the deliverer's log: one envelope per delivered row.
func delivered(t *testing.T, path string) []hostd.DeliveryEnvelope {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []hostd.DeliveryEnvelope
	// Only whole lines: the deliverer may be writing the last one.
	whole := string(b)[:strings.LastIndexByte(string(b), '\n')+1]
	for _, l := range strings.Split(whole, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var e hostd.DeliveryEnvelope
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("delivery line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// TestEndToEnd runs the control plane as a user would, in one test: an
// event routed in through the running host's endpoint reaches a shell
// agent (the `mailbox agent` commands); its reply to its own chat is
// delivered; a send to a chat it has no destination for is refused and
// reported back into its inbound; a question card it sends is recorded by
// the host, and a click routed in through the host answers it.
func TestEndToEnd(t *testing.T) {
	p := clitest.NewControlPlane(t, groups...)
	data, out := p.Data, filepath.Join(t.TempDir(), "delivered.jsonl")
	sock := filepath.Join(data, hostd.DefaultSocketName)
	p.WireHelper([]string{"--name", "Team", "--group-chat", "--policy", "public"}, "--engage", "pattern")
	p.Run("admin", "channels", "create", "telegram", "elsewhere", "--id", "mg-other", "--name", "Other")

	_, hostErr, stop := clitest.Start(clitest.Options{}, p.Args("host", "--deliver", "exec:cat >> "+out, "--poll", "20ms"), groups...)
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("host exited %d\n%s", code, hostErr.String())
		}
	}()
	testkit.WaitFor(t, "the host's event endpoint", func() bool { return hostd.Reachable(context.Background(), sock) })

	// 1. An event through the host reaches the session's mailbox.
	res := p.Route(`{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","sender":{"id":"42","name":"Ann"},"text":"hello agent","is_group":true}`, "--host", sock)
	if res.Message == nil || res.Message.Outcome != hostd.RouteRouted || !res.Message.Deliveries[0].SessionCreated {
		t.Fatalf("route: %+v", res)
	}
	session := res.Message.Deliveries[0].SessionID
	agent := []string{"mailbox", "agent", "--data", data, "--group", "ag-helper", "--session", session}

	// 2. The shell agent sees it and answers in its own chat.
	var batch []mb.InboundRow
	runJSON(t, &batch, append(agent, "poll", "--json")...)
	var first struct{ Text, SenderID string }
	if len(batch) == 1 {
		_ = json.Unmarshal(batch[0].Content, &first)
	}
	if len(batch) != 1 || batch[0].ID != "m1:mg-team:ag-helper" || first.Text != "hello agent" || first.SenderID != "telegram:42" {
		t.Fatalf("agent poll: %+v", batch)
	}
	run(t, append(agent, "send", "--reply-to", "m1:mg-team:ag-helper", "--text", "hello Ann")...)
	run(t, append(agent, "ack", "m1:mg-team:ag-helper")...)
	testkit.WaitFor(t, "the reply delivered", func() bool {
		for _, e := range delivered(t, out) {
			if strings.Contains(string(e.Content), "hello Ann") && e.Routing.PlatformID == "chat-1" {
				return true
			}
		}
		return false
	})

	// 3. A send to a chat the agent may not reach is refused and the agent
	// is told, in its inbound.
	run(t, append(agent, "send", "--channel-type", "telegram", "--platform-id", "elsewhere", "--text", "psst")...)
	testkit.WaitFor(t, "the refusal reported to the agent", func() bool {
		var ls struct {
			Inbound []struct{ Content json.RawMessage }
		}
		runJSON(t, &ls, "mailbox", "ls", "--json", "--data", data, "--group", "ag-helper", "--session", session)
		for _, r := range ls.Inbound {
			if strings.Contains(string(r.Content), "Delivery failed") && strings.Contains(string(r.Content), "not allowed to send to telegram/elsewhere") {
				return true
			}
		}
		return false
	})
	for _, e := range delivered(t, out) {
		if strings.Contains(string(e.Content), "psst") {
			t.Fatalf("the refused message was delivered: %s", e.Content)
		}
	}

	// 4. A question card: the host records it when it delivers it, and a
	// click routed through the host answers the agent.
	run(t, append(agent, "send", "--id", "q-1", "--kind", "chat-sdk", "--reply-to", "m1:mg-team:ag-helper", "--content",
		`{"type":"ask_question","questionId":"q-1","title":"Deploy?","question":"Ship it now?","options":["Yes","Later"]}`)...)
	testkit.WaitFor(t, "the card delivered", func() bool {
		for _, e := range delivered(t, out) {
			if e.ID == "q-1" {
				return true
			}
		}
		return false
	})
	var qs []struct {
		QuestionID string `json:"question_id"`
	}
	if err := json.Unmarshal([]byte(p.Run("admin", "questions", "list", "--json")), &qs); err != nil || len(qs) != 1 || qs[0].QuestionID != "q-1" {
		t.Fatalf("pending questions %+v %v", qs, err)
	}
	click := p.Route(`{"type":"click","channel_type":"telegram","user_id":"42","action":"ncq:q-1:1"}`, "--host", sock)
	if click.Click == nil || click.Click.Outcome != hostd.ClickAnswered || click.Click.Value != "Later" {
		t.Fatalf("click: %+v", click)
	}
	a, err := mb.OpenAgent(context.Background(), filepath.Join(data, "ag-helper", session), mb.AgentOptions{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := a.AwaitQuestionResponse(ctx, "q-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Content) != `{"type":"question_response","questionId":"q-1","selectedOption":"Later","userId":"telegram:42"}` {
		t.Fatalf("answer %s", resp.Content)
	}
	// Answered once: a second click finds no card.
	r := clitest.Run(context.Background(), clitest.Options{Stdin: strings.NewReader(`{"type":"click","channel_type":"telegram","user_id":"42","action":"ncq:q-1:0"}` + "\n")},
		[]string{"route", "--host", sock}, groups...)
	if r.Code != cli.ExitNotFound || !strings.Contains(r.Stderr, "not found") {
		t.Fatalf("second click: exit %d %s", r.Code, r.Stderr)
	}
}
