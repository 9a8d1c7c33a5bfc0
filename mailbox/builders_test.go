package mailbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestBuilders(t *testing.T) {
	f, a := newAgentFixture(t)
	now := f.clk.Now()
	qr, err := QuestionResponse("q-1", "yes", "U1", Routing{ChannelType: "slack", PlatformID: "C1"}, now)
	must(t, err)
	if qr.ID != "qr-q-1-1772366400000" || string(qr.Content) != `{"type":"question_response","questionId":"q-1","selectedOption":"yes","userId":"U1"}` {
		t.Errorf("question response %s %s", qr.ID, qr.Content)
	}
	f.enqueue(qr)
	got, err := a.AwaitQuestionResponse(ctxb, "q-1", time.Second)
	if err != nil || got.ID != qr.ID {
		t.Fatalf("await %v %v", got.ID, err)
	}
	cr, err := CLIResponse("r-9", json.RawMessage(`{"ok":true}`))
	must(t, err)
	if cr.ID != "cli-resp-r-9" || !cr.ContextOnly || string(cr.Content) != `{"type":"cli_response","requestId":"r-9","frame":{"ok":true}}` {
		t.Errorf("cli response %+v %s", cr, cr.Content)
	}
	n := Notification("ag-1", "Approved", now)
	if !strings.HasPrefix(n.ID, "msg-1772366400000-") || n.Routing != (Routing{ChannelType: "agent", PlatformID: "ag-1"}) ||
		string(n.Content) != `{"text":"Approved","sender":"system","senderId":"system"}` {
		t.Errorf("notification %+v %s", n, n.Content)
	}
	bad := []struct {
		name string
		err  error
	}{
		{"empty question", func() error { _, err := QuestionResponse("", "", "", Routing{}, now); return err }()},
		{"hostile question", func() error { _, err := QuestionResponse("../x", "", "", Routing{}, now); return err }()},
		{"empty request", func() error { _, err := CLIResponse("", nil); return err }()},
		{"bad frame", func() error { _, err := CLIResponse("r", json.RawMessage(`{`)); return err }()},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) { wantCode(t, c.err, sessiondb.EINVALID) })
	}
}
