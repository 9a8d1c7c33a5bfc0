package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	mailboxcmd "github.com/sessiondb/sessiondb/cmd/sessiondb/internal/mailbox"
	"github.com/sessiondb/sessiondb/hostd"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// The host tests run the host command beside the mailbox commands, which
// make sessions and read back what the host did.

// mustRun runs the command line, fails unless it exits 0, and returns
// stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	return clitest.Must(t, args, Commands, mailboxcmd.Commands).Stdout
}

// runJSON runs the command line (with --json among args), fails unless it
// exits 0, and decodes stdout into v.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	clitest.Must(t, args, Commands, mailboxcmd.Commands).Decode(t, v)
}

func with(flags []string, args ...string) []string { return append(args, flags...) }

func TestHostBadInput(t *testing.T) {
	data := t.TempDir()
	clitest.Fails(t, []clitest.Failure{
		{Name: "host without data", Args: []string{"host"}, Code: cli.ExitInvalid, Want: "--data"},
		{Name: "host bad deliverer", Args: []string{"host", "--data", data, "--deliver", "smtp:x"}, Code: cli.ExitInvalid, Want: "exec:CMD or webhook:URL"},
		{Name: "host bad webhook", Args: []string{"host", "--data", data, "--deliver", "webhook:/relative"}, Code: cli.ExitInvalid, Want: "absolute"},
		{Name: "host bad waker", Args: []string{"host", "--data", data, "--wake", "docker:x"}, Code: cli.ExitInvalid, Want: "exec:CMD"},
		{Name: "host bad zone", Args: []string{"host", "--data", data, "--tz", "Mars/Olympus"}, Code: cli.ExitInvalid, Want: "IANA"},
		{Name: "host bad poll", Args: []string{"host", "--data", data, "--poll", "0s"}, Code: cli.ExitInvalid, Want: "positive"},
		{Name: "host bad lease", Args: []string{"host", "--data", data, "--central", filepath.Join(data, "v2.db"), "--lease-ttl", "0s"}, Code: cli.ExitInvalid, Want: "--lease-ttl"},
		{Name: "host bad DM opener", Args: []string{"host", "--data", data, "--central", filepath.Join(data, "v2.db"), "--dm-opener", "smtp:x"}, Code: cli.ExitInvalid, Want: "--dm-opener"},
		{Name: "host DM opener without central", Args: []string{"host", "--data", data, "--dm-opener", "exec:true"}, Code: cli.ExitInvalid, Want: "--dm-opener needs --central"},
		{Name: "host bad host id", Args: []string{"host", "--data", data, "--central", filepath.Join(data, "v2.db"), "--host-id", "a\x01b"}, Code: cli.ExitInvalid, Want: "host"},
	}, Commands)
}

// A registry in a file has no leases, so it serves one host: a second host
// on the same file is refused while the first runs, and may start once it
// stopped.
func TestHostFileRegistryServesOneHost(t *testing.T) {
	dir := t.TempDir()
	central := filepath.Join(dir, "v2.db")
	first := []string{"host", "--central", central, "--data", filepath.Join(dir, "a"), "--listen", "off", "--poll", "20ms"}
	_, logs, stop := clitest.Start(clitest.Options{}, first, Commands)
	testkit.WaitFor(t, "the first host running", func() bool { return strings.Contains(logs.String(), "mailbox host running") })
	second := []string{"host", "--central", central, "--data", filepath.Join(dir, "b"), "--listen", "off", "--poll", "20ms"}
	clitest.Fails(t, []clitest.Failure{{Name: "second host", Args: second, Code: cli.ExitConflict, Want: "another host daemon serves the registry"}}, Commands)
	if code := stop(); code != 0 {
		t.Fatalf("first host exited %d\n%s", code, logs.String())
	}
	_, logs2, stop2 := clitest.Start(clitest.Options{}, second, Commands)
	testkit.WaitFor(t, "the second host running once the first stopped", func() bool { return strings.Contains(logs2.String(), "mailbox host running") })
	if code := stop2(); code != 0 {
		t.Fatalf("second host exited %d\n%s", code, logs2.String())
	}
}

// One host per data root: a second host on the root of a running one is
// refused before it opens anything, naming the root and the holder's pid,
// with or without a registry; once the first stopped, it runs.
func TestHostDataRootServesOneHost(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "mb")
	first := []string{"host", "--data", data, "--poll", "20ms"}
	_, logs, stop := clitest.Start(clitest.Options{}, first, Commands)
	testkit.WaitFor(t, "the first host running", func() bool { return strings.Contains(logs.String(), "mailbox host running") })
	pid := fmt.Sprintf("pid %d", os.Getpid())
	for _, c := range []struct {
		args []string
		want string
	}{
		{first, "the data root " + data + " is served by another host daemon (" + pid},
		{[]string{"host", "--data", data, "--central", filepath.Join(dir, "v2.db"), "--listen", "off"}, "one host per data root"},
	} {
		// The guard ends a host that was not refused: a failure, not a hang.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := clitest.Run(ctx, clitest.Options{}, c.args, Commands)
		cancel()
		if r.Code != cli.ExitConflict || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args, r.Code, r.Stderr, cli.ExitConflict, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "v2.db")); !os.IsNotExist(err) {
		t.Errorf("the refused host made its registry: %v", err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("first host exited %d\n%s", code, logs.String())
	}
	_, logs2, stop2 := clitest.Start(clitest.Options{}, first, Commands)
	testkit.WaitFor(t, "the second host running once the first stopped", func() bool { return strings.Contains(logs2.String(), "mailbox host running") })
	if code := stop2(); code != 0 {
		t.Fatalf("second host exited %d\n%s", code, logs2.String())
	}
}

func TestHostDeliversAndStops(t *testing.T) {
	data := filepath.Join(t.TempDir(), "mb")
	s := []string{"--data", data, "--group", "g1", "--session", "s1"}
	mustRun(t, with(s, "mailbox", "init")...)
	mustRun(t, "mailbox", "init", "--data", data, "--group", "g1", "--session", "broken")
	if err := os.WriteFile(filepath.Join(data, "g1", "broken", "outbound.db"), []byte(strings.Repeat("garbage ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	_, logs, stop := clitest.Start(clitest.Options{}, []string{"host", "--data", data, "--poll", "20ms",
		"--deliver", `exec:cat >> ` + out + `; echo '{"ok":true,"platform_message_id":"P1"}'`}, Commands, mailboxcmd.Commands)
	mustRun(t, with(s, "mailbox", "send", "--id", "m1", "--text", "hello", "--channel-type", "cli", "--platform-id", "me")...)
	mustRun(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "hi")...)
	testkit.WaitFor(t, "the delivery", func() bool { b, _ := os.ReadFile(out); return len(b) > 0 })
	testkit.WaitFor(t, "the delivery record", func() bool {
		var ls struct {
			Outbound []struct{ Delivery struct{ Status string } }
		}
		runJSON(t, &ls, with(s, "--json", "mailbox", "ls")...)
		return len(ls.Outbound) == 1 && ls.Outbound[0].Delivery.Status == "delivered"
	})
	// A running host reports what only it knows: the broken session's
	// quarantine or back-off, with the error.
	testkit.WaitFor(t, "status to show the broken session", func() bool {
		out := mustRun(t, "mailbox", "status", "--data", data)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "g1/broken") && (strings.Contains(line, "quarantined") || strings.Contains(line, "s ")) {
				return strings.HasPrefix(out, "host: running")
			}
		}
		return false
	})
	if code := stop(); code != 0 {
		t.Fatalf("host exit %d on stop; log:\n%s", code, logs.String())
	}
	if out := mustRun(t, "mailbox", "status", "--data", data); !strings.HasPrefix(out, "host: not running\n") {
		t.Fatalf("status after the host stopped:\n%s", out)
	}
	b, _ := os.ReadFile(out)
	var env struct {
		ID        string
		SessionID string `json:"session_id"`
		Content   struct{ Text string }
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("deliveries %q, want exactly one", b)
	}
	if err := json.Unmarshal([]byte(lines[0]), &env); err != nil || env.Content.Text != "hi" || env.SessionID != "s1" {
		t.Fatalf("delivered line %q: %v", lines[0], err)
	}
	if !strings.Contains(logs.String(), "daemon stopped") {
		t.Fatalf("log lacks the clean stop:\n%s", logs.String())
	}
}

// TestHostLogHidesCredentials: the start line names the deliverer and the
// waker without the webhook's password, token or key, or the command's
// arguments.
func TestHostLogHidesCredentials(t *testing.T) {
	data := t.TempDir()
	_, logs, stop := clitest.Start(clitest.Options{}, []string{"host", "--data", data, "--poll", "20ms",
		"--deliver", "webhook:https://hook:pa55word@hooks.example.com/k3y-in-path?token=t0ken",
		"--wake", "exec:TOKEN=s3cret ./wake.sh --key k3y2"}, Commands)
	testkit.WaitFor(t, "the start line", func() bool { return strings.Contains(logs.String(), "mailbox host running") })
	if code := stop(); code != 0 {
		t.Fatalf("host exit %d; log:\n%s", code, logs.String())
	}
	log := logs.String()
	for _, secret := range []string{"pa55word", "t0ken", "k3y-in-path", "s3cret", "k3y2"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q:\n%s", secret, log)
		}
	}
	if !strings.Contains(log, "webhook:https://hooks.example.com/…") {
		t.Errorf("the log does not name the webhook's host:\n%s", log)
	}
}

// TestHostDeliverTimeoutCutsAHang: with --deliver-timeout, a webhook that
// never answers costs one short attempt, recorded as a retry with the
// reason, and its URL's credentials stay out of the record.
func TestHostDeliverTimeoutCutsAHang(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	data := filepath.Join(t.TempDir(), "mb")
	s := []string{"--data", data, "--group", "g1", "--session", "s1"}
	mustRun(t, with(s, "mailbox", "init")...)
	hook := strings.Replace(srv.URL, "http://", "http://hook:pa55word@", 1) + "/k3y?token=t0ken"
	_, logs, stop := clitest.Start(clitest.Options{}, []string{"host", "--data", data, "--poll", "20ms",
		"--deliver", "webhook:" + hook, "--deliver-timeout", "100ms"}, Commands, mailboxcmd.Commands)
	mustRun(t, with(s, "mailbox", "send", "--id", "m1", "--text", "hello", "--channel-type", "cli", "--platform-id", "me")...)
	mustRun(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "hi")...)
	var ls struct {
		Outbound []struct {
			Delivery struct {
				Status    string
				LastError string `json:"last_error"`
			}
		}
	}
	testkit.WaitFor(t, "the timed-out attempt", func() bool {
		runJSON(t, &ls, with(s, "--json", "mailbox", "ls")...)
		return len(ls.Outbound) == 1 && ls.Outbound[0].Delivery.Status == "retrying"
	})
	if code := stop(); code != 0 {
		t.Fatalf("host exit %d; log:\n%s", code, logs.String())
	}
	le := ls.Outbound[0].Delivery.LastError
	if !strings.Contains(le, "deadline exceeded") {
		t.Errorf("last error %q does not say the attempt timed out", le)
	}
	for _, secret := range []string{"pa55word", "k3y", "t0ken"} {
		if strings.Contains(le, secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("%q reached the record or the log:\n%s\n%s", secret, le, logs.String())
		}
	}
}

// TestHostJSONLog: with --json every log line is a JSON object.
func TestHostJSONLog(t *testing.T) {
	data := t.TempDir()
	_, logs, stop := clitest.Start(clitest.Options{}, []string{"--json", "host", "--data", data, "--poll", "20ms"}, Commands)
	testkit.WaitFor(t, "the start line", func() bool { return strings.Contains(logs.String(), "mailbox host running") })
	if code := stop(); code != 0 {
		t.Fatalf("host exit %d; log:\n%s", code, logs.String())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	for _, l := range lines {
		var v struct{ Msg string }
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Msg == "" {
			t.Fatalf("log line %q is not a JSON object with a msg: %v", l, err)
		}
	}
	if len(lines) < 3 {
		t.Fatalf("log %q: want the start and stop lines", lines)
	}
}

// TestHostMetrics: with --listen the host serves /metrics, and the
// delivery it makes is counted there.
func TestHostMetrics(t *testing.T) {
	data := filepath.Join(t.TempDir(), "mb")
	sock := filepath.Join(t.TempDir(), "host.sock")
	s := []string{"--data", data, "--group", "g1", "--session", "s1"}
	mustRun(t, with(s, "mailbox", "init")...)
	_, logs, stop := clitest.Start(clitest.Options{}, []string{"host", "--data", data, "--poll", "20ms", "--listen", sock,
		"--deliver", `exec:cat > /dev/null; echo '{"ok":true}'`}, Commands, mailboxcmd.Commands)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	mustRun(t, with(s, "mailbox", "send", "--id", "m1", "--text", "hello", "--channel-type", "cli", "--platform-id", "me")...)
	mustRun(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "hi")...)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	scrape := func() string {
		resp, err := client.Get("http://host/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	testkit.WaitFor(t, "the delivery in the metrics", func() bool {
		return strings.Contains(scrape(), `sessiondb_host_deliveries_total{result="delivered"} 1`)
	})
	m := scrape()
	for _, want := range []string{`sessiondb_host_failures_total{stage="drain"} 0`, "sessiondb_host_stuck_sessions 0", "sessiondb_host_due_messages"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Without the control plane the socket still answers the health
	// check, so `route --host` finds the host there.
	if !hostd.Reachable(context.Background(), sock) {
		t.Error("the metrics-only host does not answer /v1/health")
	}
	stopped = true
	if code := stop(); code != 0 && code != cli.ExitInterrupted {
		t.Fatalf("host exited %d: %s", code, logs)
	}
}
