package mailbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// mb runs the mailbox commands and returns the exit status and output.
func mb(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(context.Background(), clitest.Options{}, args, Commands)
}

// mustMB runs the mailbox commands, fails unless they exit 0, and returns
// stdout.
func mustMB(t *testing.T, args ...string) string {
	t.Helper()
	return clitest.Must(t, args, Commands).Stdout
}

// mbJSON runs the mailbox commands (with --json among args), fails unless
// they exit 0, and decodes stdout into v.
func mbJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	clitest.Must(t, args, Commands).Decode(t, v)
}

// mbStart runs the mailbox commands in the background until the returned
// stop is called; stop returns the exit status.
func mbStart(args ...string) (out, errOut *testkit.Buffer, stop func() int) {
	return clitest.Start(clitest.Options{}, args, Commands)
}

func mbSession(t *testing.T) (data string, flags []string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "mb")
	flags = []string{"--data", data, "--group", "g1", "--session", "s1"}
	mustMB(t, append([]string{"mailbox", "init"}, flags...)...)
	return data, flags
}

func with(flags []string, args ...string) []string { return append(args, flags...) }

type lsOut struct {
	Inbound []struct {
		ID, State, Kind string
		Seq             int64
	} `json:"inbound"`
	Outbound []struct {
		ID        string
		Seq       int64
		InReplyTo string `json:"in_reply_to"`
		Routing   struct {
			ChannelType string `json:"channel_type"`
			PlatformID  string `json:"platform_id"`
		}
		Delivery struct{ Status string }
	} `json:"outbound"`
}

func lsJSON(t *testing.T, flags []string) lsOut {
	t.Helper()
	var v lsOut
	mbJSON(t, &v, with(flags, "--json", "mailbox", "ls")...)
	return v
}

func TestMailboxCLIRoundTrip(t *testing.T) {
	_, s := mbSession(t)
	dir := filepath.Join(s[1], "g1", "s1")
	for _, f := range []string{"inbound.db", "outbound.db"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v mode %v, want 0600", f, err, fi.Mode())
		}
	}
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "hello", "--channel-type", "cli", "--platform-id", "me")...)
	// A duplicate id inserts nothing and says so.
	if out := mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "again")...); !strings.Contains(out, "already queued as seq 2") {
		t.Fatalf("duplicate send: %q", out)
	}
	mustMB(t, with(s, "mailbox", "send", "--task", "--id", "t1", "--prompt", "report", "--every", "0 9 * * *", "--at", "+1h")...)

	var batch []struct{ ID, Kind string }
	mbJSON(t, &batch, with(s, "--json", "mailbox", "agent", "poll")...)
	if len(batch) != 1 || batch[0].ID != "m1" {
		t.Fatalf("poll = %+v, want m1 only (t1 is scheduled)", batch)
	}
	// Not claimed: polled again until acked; plain output is tab-separated.
	if out := mustMB(t, with(s, "mailbox", "agent", "poll")...); out != "m1\t2\tchat\thello\n" {
		t.Fatalf("plain poll %q", out)
	}
	mustMB(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "hi back")...)
	mustMB(t, with(s, "mailbox", "agent", "ack", "m1")...)
	if out := mustMB(t, with(s, "mailbox", "agent", "poll")...); out != "" {
		t.Fatalf("poll after ack = %q, want nothing", out)
	}

	ls := lsJSON(t, s)
	states := map[string]string{}
	for _, r := range ls.Inbound {
		states[r.ID] = r.State
	}
	if states["m1"] != "completed" || states["t1"] != "scheduled" {
		t.Fatalf("inbound states %v", states)
	}
	if len(ls.Outbound) != 1 || ls.Outbound[0].ID != "o1" || ls.Outbound[0].Seq != 5 || ls.Outbound[0].InReplyTo != "m1" ||
		ls.Outbound[0].Routing.PlatformID != "me" || ls.Outbound[0].Delivery.Status != "undelivered" {
		t.Fatalf("outbound %+v", ls.Outbound)
	}

	// state get/set/list/delete
	mustMB(t, with(s, "mailbox", "agent", "state", "set", "k", "v 1")...)
	if out := mustMB(t, with(s, "mailbox", "agent", "state", "get", "k")...); out != "v 1\n" {
		t.Fatalf("state get %q", out)
	}
	mustMB(t, with(s, "mailbox", "agent", "state", "delete", "k")...)
	if r := mb(t, with(s, "mailbox", "agent", "state", "get", "k")...); r.Code != cli.ExitNotFound {
		t.Fatalf("state get after delete: exit %d", r.Code)
	}
	// --dir names the same session; so does $SESSIONDB_SESSION_DIR.
	if out := mustMB(t, "mailbox", "ls", "--dir", dir); !strings.Contains(out, "o1") {
		t.Fatalf("ls --dir: %q", out)
	}
	t.Setenv("SESSIONDB_SESSION_DIR", dir)
	mustMB(t, "mailbox", "agent", "state", "set", "via-env", "1")
	if out := mustMB(t, "mailbox", "agent", "state", "list"); out != "via-env\t1\n" {
		t.Fatalf("state list via env: %q", out)
	}
}

func TestMailboxCLIBadInput(t *testing.T) {
	data, s := mbSession(t)
	clitest.Fails(t, []clitest.Failure{
		{Name: "no session named", Args: []string{"mailbox", "ls"}, Code: cli.ExitInvalid, Want: "name the session"},
		{Name: "group missing", Args: []string{"mailbox", "ls", "--data", data}, Code: cli.ExitInvalid, Want: "--group"},
		{Name: "unsafe group", Args: []string{"mailbox", "init", "--data", data, "--group", "..", "--session", "x"}, Code: cli.ExitInvalid, Want: "agent_group_id"},
		{Name: "dir and data", Args: []string{"mailbox", "ls", "--dir", data, "--data", data}, Code: cli.ExitInvalid, Want: "not both"},
		{Name: "uninitialized session", Args: []string{"mailbox", "ls", "--data", data, "--group", "g1", "--session", "nope"}, Code: cli.ExitNotFound, Want: "mailbox init"},
		{Name: "nothing to send", Args: with(s, "mailbox", "send"), Code: cli.ExitInvalid, Want: "nothing to send"},
		{Name: "text and content", Args: with(s, "mailbox", "send", "--text", "a", "--content", "{}"), Code: cli.ExitInvalid, Want: "not both"},
		{Name: "content not an object", Args: with(s, "mailbox", "send", "--content", "[1]"), Code: cli.ExitInvalid, Want: "content"},
		{Name: "content not JSON", Args: with(s, "mailbox", "send", "--content", "{nope"), Code: cli.ExitInvalid, Want: "content"},
		{Name: "unsafe id", Args: with(s, "mailbox", "send", "--id", "a/b", "--text", "x"), Code: cli.ExitInvalid, Want: "id"},
		{Name: "bad cron", Args: with(s, "mailbox", "send", "--task", "--prompt", "p", "--every", "61 * * * *"), Code: cli.ExitInvalid, Want: ""},
		{Name: "every without task", Args: with(s, "mailbox", "send", "--text", "x", "--every", "* * * * *"), Code: cli.ExitInvalid, Want: "--task"},
		{Name: "bad --at", Args: with(s, "mailbox", "send", "--text", "x", "--at", "tomorrow"), Code: cli.ExitInvalid, Want: "--at"},
		{Name: "ack nothing", Args: with(s, "mailbox", "agent", "ack"), Code: cli.ExitInvalid, Want: "message id"},
		{Name: "bad ack status", Args: with(s, "mailbox", "agent", "ack", "--status", "done", "m1"), Code: cli.ExitInvalid, Want: "--status"},
		{Name: "state verb", Args: with(s, "mailbox", "agent", "state", "put", "k"), Code: cli.ExitInvalid, Want: "get, set"},
		{Name: "unknown destination", Args: with(s, "mailbox", "agent", "send", "--to", "nobody", "--text", "x"), Code: cli.ExitNotFound, Want: ""},
		{Name: "status without data", Args: []string{"mailbox", "status"}, Code: cli.ExitInvalid, Want: "--data"},
		{Name: "bad flag", Args: with(s, "mailbox", "ls", "--limit", "x"), Code: cli.ExitInvalid, Want: `--limit "x": want a whole number`},
	}, Commands)
}

func TestMailboxCLIStatusRequeueRecover(t *testing.T) {
	data, s := mbSession(t)
	s2 := []string{"--data", data, "--group", "g1", "--session", "s2"}
	mustMB(t, with(s2, "mailbox", "init")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "one", "--channel-type", "cli", "--platform-id", "me")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "m2", "--text", "two", "--channel-type", "cli", "--platform-id", "me")...)
	mustMB(t, with(s, "mailbox", "agent", "poll", "--claim")...)
	mustMB(t, with(s, "mailbox", "agent", "ack", "--status", "failed", "m1")...)

	var st []struct {
		Session struct {
			SessionID string `json:"session_id"`
		}
		Due        int
		Processing int
		Failed     int
	}
	mbJSON(t, &st, "--json", "mailbox", "status", "--data", data)
	if len(st) != 2 || st[0].Session.SessionID != "s1" || st[0].Processing != 1 || st[0].Failed != 1 || st[0].Due != 0 || st[1].Due != 0 {
		t.Fatalf("status %+v", st)
	}
	if out := mustMB(t, "mailbox", "status", "--data", data); !strings.Contains(out, "g1/s1") || !strings.Contains(out, "g1/s2") {
		t.Fatalf("status table %q", out)
	}

	// The agent just beat its heart: repairs refuse without --force.
	for _, cmd := range []string{"recover", "requeue"} {
		if r := mb(t, with(s, "mailbox", cmd)...); r.Code != cli.ExitConflict || !strings.Contains(r.Stderr, "--force") {
			t.Fatalf("%s with a fresh heartbeat: exit %d %q", cmd, r.Code, r.Stderr)
		}
	}
	var rec struct {
		Acks  struct{ Failed int }
		Reset struct {
			Retried     int
			AcksCleared int `json:"acks_cleared"`
		}
	}
	mbJSON(t, &rec, with(s, "--json", "mailbox", "recover", "--force")...)
	if rec.Acks.Failed != 1 || rec.Reset.Retried != 1 || rec.Reset.AcksCleared != 1 {
		t.Fatalf("recover %+v", rec)
	}
	states := map[string]string{}
	for _, r := range lsJSON(t, s).Inbound {
		states[r.ID] = r.State
	}
	if states["m1"] != "failed" || states["m2"] != "scheduled" {
		t.Fatalf("after recover %v, want m1 failed, m2 scheduled (retry back-off)", states)
	}
	if out := mustMB(t, with(s, "mailbox", "requeue", "--force", "m1")...); !strings.Contains(out, "requeued 1 inbound") || !strings.Contains(out, "deleted 1 failed ack") {
		t.Fatalf("requeue: %q", out)
	}
	if out := mustMB(t, with(s, "mailbox", "agent", "poll")...); !strings.HasPrefix(out, "m1\t") {
		t.Fatalf("poll after requeue %q, want m1 again", out)
	}
}

func TestMailboxCLIPollWaitAndWatch(t *testing.T) {
	_, s := mbSession(t)
	// --timeout with nothing due: an empty batch, exit 0.
	if out := mustMB(t, with(s, "--json", "mailbox", "agent", "poll", "--wait", "--timeout", "50ms", "--poll", "10ms")...); strings.TrimSpace(out) != "[]" {
		t.Fatalf("poll --wait --timeout = %q", out)
	}
	pollOut, _, stopPoll := mbStart(with(s, "mailbox", "agent", "poll", "--wait", "--poll", "10ms")...)
	watchOut, _, stopWatch := mbStart(with(s, "mailbox", "watch", "--poll", "10ms")...)
	mustMB(t, with(s, "mailbox", "send", "--id", "w1", "--text", "wake", "--channel-type", "cli", "--platform-id", "me")...)
	testkit.WaitFor(t, "poll --wait to return the batch", func() bool { return strings.HasPrefix(pollOut.String(), "w1\t") })
	if code := stopPoll(); code != 0 {
		t.Fatalf("poll --wait exit %d", code)
	}
	testkit.WaitFor(t, "watch to show the row", func() bool { return strings.Contains(watchOut.String(), "w1") })
	mustMB(t, with(s, "mailbox", "agent", "ack", "w1")...)
	testkit.WaitFor(t, "watch to show the ack", func() bool { return strings.Contains(watchOut.String(), "completed") })
	if code := stopWatch(); code != 0 {
		t.Fatalf("watch exit %d on Ctrl-C", code)
	}
}

func TestMailboxParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, in string
		want     time.Time
		bad      bool
	}{
		{"duration with plus", "+90s", now.Add(90 * time.Second), false},
		{"bare duration", "5m", now.Add(5 * time.Minute), false},
		{"RFC 3339", "2026-03-02T09:00:00Z", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), false},
		{"offset converted to UTC", "2026-03-02T10:00:00+01:00", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), false},
		{"SQLite form", "2026-03-02 09:00:00", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), false},
		{"negative duration", "-5m", time.Time{}, true},
		{"words", "tomorrow", time.Time{}, true},
		{"empty", "", time.Time{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWhen("at", tc.in, now)
			if tc.bad {
				if err == nil || !strings.Contains(err.Error(), "--at") {
					t.Fatalf("parseWhen(%q) = %v, %v; want an error naming --at", tc.in, got, err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("parseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestMailboxCLIAgentSendFile checks that --file copies the file into
// outbox/<id>/ and lists its base name in the content's "files".
func TestMailboxCLIAgentSendFile(t *testing.T) {
	data, s := mbSession(t)
	src := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(src, []byte("numbers"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustMB(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--channel-type", "cli", "--platform-id", "me", "--text", "see", "--file", src)...)
	var v struct {
		Outbound []struct {
			Content struct {
				Text  string
				Files []string
			}
		}
	}
	mbJSON(t, &v, with(s, "--json", "mailbox", "ls")...)
	if len(v.Outbound) != 1 || v.Outbound[0].Content.Text != "see" || len(v.Outbound[0].Content.Files) != 1 || v.Outbound[0].Content.Files[0] != "report.txt" {
		t.Fatalf("outbound %+v, want text \"see\" listing report.txt", v.Outbound)
	}
	if b, err := os.ReadFile(filepath.Join(data, "g1", "s1", "outbox", "o1", "report.txt")); err != nil || string(b) != "numbers" {
		t.Fatalf("copied file %q, %v", b, err)
	}
}
