package hostd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/mailbox"
)

func testOutRow() mailbox.OutboundRow {
	return mailbox.OutboundRow{ID: "out-1", Seq: 5, Kind: mailbox.KindChat, Timestamp: "2026-03-01T12:00:00.000Z",
		Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}, Content: json.RawMessage(`{"text":"hi"}`)}
}

// checkDelivery checks a Deliver's outcome: with wantErr "" success with
// the platform id wantPID, else an error containing wantErr that is
// permanent (never retried) exactly when permanent is set.
func checkDelivery(t *testing.T, pid string, err error, wantPID, wantErr string, permanent bool) {
	t.Helper()
	if wantErr == "" {
		if err != nil || pid != wantPID {
			t.Fatalf("Deliver = %q, %v; want %q, nil", pid, err, wantPID)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("Deliver error = %v; want one containing %q", err, wantErr)
	}
	if mailbox.IsPermanent(err) != permanent {
		t.Fatalf("IsPermanent(%v) = %v, want %v", err, mailbox.IsPermanent(err), permanent)
	}
}

func TestExecDeliverer(t *testing.T) {
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	cases := []struct {
		name      string
		script    string
		wantPID   string
		wantErr   string // substring; "" = success
		permanent bool
	}{
		{name: "ok with platform id", script: `cat > "$OUT"; echo '{"ok":true,"platform_message_id":"P-9"}'`, wantPID: "P-9"},
		{name: "ok after log lines", script: `cat > "$OUT"; echo starting; echo '{"ok":true,"platform_message_id":"P-2"}'; echo bye`, wantPID: "P-2"},
		{name: "exit 0 without reply", script: `cat > "$OUT"`},
		{name: "refused, permanent", script: `cat > "$OUT"; echo '{"ok":false,"error":"no such chat","permanent":true}'`, wantErr: "no such chat", permanent: true},
		{name: "refused, transient", script: `cat > "$OUT"; echo '{"ok":false,"error":"rate limited"}'`, wantErr: "rate limited"},
		{name: "non-zero exit", script: `cat > "$OUT"; echo boom >&2; exit 3`, wantErr: "status 3: boom"},
		{name: "non-zero exit despite ok", script: `cat > "$OUT"; echo '{"ok":true}'; exit 1`, wantErr: "status 1"},
		{name: "unreadable reply, exit 0", script: `cat > "$OUT"; echo {"ok":true}`},
		{name: "reply without ok", script: `cat > "$OUT"; echo '{"platform_message_id":"x"}'`, wantPID: "x"},
		{name: "unreadable reply, exit 1", script: `cat > "$OUT"; echo '{"ok":tru'; exit 1`, wantErr: "status 1"},
		{name: "timeout", script: `cat > "$OUT"; sleep 30`, wantErr: "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "stdin.json")
			d, err := NewExecDeliverer(tc.script, mailbox.Layout{Root: "/data"})
			if err != nil {
				t.Fatal(err)
			}
			d.Env = []string{"OUT=" + out}
			// Generous for the commands that finish; short for the one
			// that must be killed.
			d.Timeout = 30 * time.Second
			if tc.name == "timeout" {
				d.Timeout = 500 * time.Millisecond
			}
			pid, err := d.Deliver(ctxb, ref, testOutRow())
			checkDelivery(t, pid, err, tc.wantPID, tc.wantErr, tc.permanent)
			// The command got exactly one JSON line: the envelope.
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(b), "\n") != 1 || !strings.HasSuffix(string(b), "\n") {
				t.Fatalf("stdin %q is not one line", b)
			}
			var env DeliveryEnvelope
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatal(err)
			}
			if env.AgentGroupID != "ag-1" || env.SessionID != "sess-1" || env.ID != "out-1" || env.Seq != 5 ||
				env.Routing.PlatformID != "C1" || string(env.Content) != `{"text":"hi"}` {
				t.Fatalf("envelope %+v", env)
			}
		})
	}
}

func TestExecDelivererEnvironment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	d, err := NewExecDeliverer(`echo "$SESSIONDB_AGENT_GROUP|$SESSIONDB_SESSION|$SESSIONDB_MESSAGE_ID|$SESSIONDB_SESSION_DIR" > "$OUT"`, mailbox.Layout{Root: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	d.Env = []string{"OUT=" + out}
	if _, err := d.Deliver(ctxb, mailbox.SessionRef{AgentGroupID: "g", SessionID: "s"}, testOutRow()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if got, want := strings.TrimSpace(string(b)), "g|s|out-1|/data/g/s"; got != want {
		t.Fatalf("env %q, want %q", got, want)
	}
}

func TestNewDeliverersRejectBadInput(t *testing.T) {
	cases := []struct {
		name string
		make func() error
	}{
		{"empty exec command", func() error { _, err := NewExecDeliverer("  ", mailbox.Layout{}); return err }},
		{"relative webhook URL", func() error { _, err := NewWebhookDeliverer("/hook"); return err }},
		{"ftp webhook URL", func() error { _, err := NewWebhookDeliverer("ftp://example.com/x"); return err }},
		{"unparseable webhook URL", func() error { _, err := NewWebhookDeliverer("http://[::1"); return err }},
		{"empty waker command", func() error { _, err := NewExecWaker("", mailbox.Layout{Root: "/x"}, ExecWakerOptions{}); return err }},
		{"waker without root", func() error { _, err := NewExecWaker("true", mailbox.Layout{}, ExecWakerOptions{}); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.make(), "invalid") })
	}
}

// FuzzDeliveryReply feeds arbitrary command output to the reply reader: it
// must never panic, and a reply it accepts as a refusal must carry ok=false.
func FuzzDeliveryReply(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"platform_message_id":"P"}`, "log\n{\"ok\":false,\"error\":\"x\",\"permanent\":true}\n",
		"{", "{}\n{", "\x00{\"ok\":1}", `{"ok":null}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		r, found, err := lastReply(out)
		if !found && (err != nil || r.OK != nil) {
			t.Fatalf("no reply found but r=%+v err=%v", r, err)
		}
		if found && err == nil && r.OK != nil && !*r.OK {
			if e := replyError(r, "t"); e == nil || mailbox.IsPermanent(e) != r.Permanent {
				t.Fatalf("refusal %+v gave %v", r, e)
			}
		}
	})
}

// TestEnvelopeTimes: the envelope gives timestamp and deliver_after in one
// form, whichever the row stores.
func TestEnvelopeTimes(t *testing.T) {
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	for _, tc := range []struct{ ts, da, wantTS, wantDA string }{
		{"2026-03-01 12:00:00", "2026-03-01 12:05:00", "2026-03-01T12:00:00.000Z", "2026-03-01T12:05:00.000Z"},
		{"2026-03-01T12:00:00.250Z", "", "2026-03-01T12:00:00.250Z", ""},
		{"not a time", "", "not a time", ""},
	} {
		row := testOutRow()
		row.Timestamp, row.DeliverAfter = tc.ts, tc.da
		env := NewDeliveryEnvelope(ref, row)
		if env.Timestamp != tc.wantTS || env.DeliverAfter != tc.wantDA {
			t.Errorf("envelope of %q/%q: %q/%q, want %q/%q", tc.ts, tc.da, env.Timestamp, env.DeliverAfter, tc.wantTS, tc.wantDA)
		}
	}
}
