package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// spawnHost starts `sessiondb host` with args in a process group of its
// own, its output collected, delivering by appending each message to out
// after a pause (so a delivery is in flight long enough for another host
// to race it). It does not wait for the host to run.
func spawnHost(t *testing.T, e env, name, data, out string, args ...string) *hostProc {
	t.Helper()
	h := &hostProc{name: name, data: data, out: out, logs: &testkit.Buffer{}, done: make(chan error, 1)}
	h.cmd = exec.Command(binary, append([]string{"host", "--data", data, "--poll", "50ms",
		"--deliver", "exec:sleep 0.1; cat >> " + out}, args...)...)
	h.cmd.Env = e.environ()
	h.cmd.Dir = e.Home
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.done <- h.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL) })
	return h
}

// running waits until h logs that it runs (true) or exits (false, with
// its exit error).
func (h *hostProc) running(t *testing.T) (bool, error) {
	t.Helper()
	var exited error
	ended := false
	testkit.WaitFor(t, h.name+" running or exited", func() bool {
		if strings.Contains(h.logs.String(), "mailbox host running") {
			return true
		}
		select {
		case exited = <-h.done:
			ended = true
			return true
		default:
			return false
		}
	})
	return !ended, exited
}

// deliveredTexts counts, in the delivery files, each delivered message by
// its text.
func deliveredTexts(t *testing.T, into map[string]int, files ...string) {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// A delivery still being appended has no newline yet.
		whole := string(b[:bytes.LastIndexByte(b, '\n')+1])
		for _, line := range strings.Split(whole, "\n") {
			if line == "" {
				continue
			}
			var m struct {
				Content struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: a line that is no message: %q", f, line)
			}
			into[m.Content.Text]++
		}
	}
}

// One host per data root. A second `sessiondb host` on the root of a
// running one is refused at once (exit 4, naming the root and the first
// host's pid), and the N messages an agent writes while both were started
// are delivered exactly once. A host killed with SIGKILL leaves no lock
// behind: the next host on the root starts and delivers.
func TestOneHostPerDataRoot(t *testing.T) {
	const n = 20
	e := newEnv(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "mb")
	session := filepath.Join(data, "g", "s")
	e.must(t, "mailbox", "init", "--data", data, "--group", "g", "--session", "s")
	e.must(t, "mailbox", "project", "--dir", session, "--channel-type", "cli", "--platform-id", "me")

	a := spawnHost(t, e, "host-a", data, filepath.Join(dir, "a.jsonl"))
	if up, err := a.running(t); !up {
		t.Fatalf("the first host did not start: %v\n%s", err, a.logs)
	}
	b := spawnHost(t, e, "host-b", data, filepath.Join(dir, "b.jsonl"))
	bUp, err := b.running(t)
	if bUp {
		t.Errorf("a second host runs on the data root of the first:\n%s", b.logs)
	} else {
		var exit *exec.ExitError
		logs := b.logs.String()
		if !errors.As(err, &exit) || exit.ExitCode() != 4 ||
			!strings.Contains(logs, "the data root "+data+" is served by another host daemon") ||
			!strings.Contains(logs, fmt.Sprintf("pid %d", a.cmd.Process.Pid)) {
			t.Errorf("second host: %v, want exit 4 naming the root and pid %d:\n%s", err, a.cmd.Process.Pid, logs)
		}
	}

	for i := range n {
		e.must(t, "mailbox", "agent", "send", "--dir", session, "--text", fmt.Sprintf("m-%02d", i))
	}
	testkit.WaitFor(t, "every message delivered", func() bool {
		var st []struct {
			Delivered int `json:"out_delivered"`
		}
		r := e.must(t, "--json", "mailbox", "status", "--data", data)
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || len(st) != 1 {
			t.Fatalf("mailbox status: %v\n%s", err, r)
		}
		return st[0].Delivered == n
	})

	// SIGKILL: nothing of the first host runs on or is released by it;
	// the kernel drops its lock.
	a.kill(t)
	if bUp {
		b.kill(t)
	}
	c := spawnHost(t, e, "host-c", data, filepath.Join(dir, "c.jsonl"))
	if up, err := c.running(t); !up {
		t.Fatalf("a host on the root of a killed one did not start: %v\n%s", err, c.logs)
	}
	e.must(t, "mailbox", "agent", "send", "--dir", session, "--text", "after the kill")
	testkit.WaitFor(t, "the message after the kill delivered", func() bool {
		got := map[string]int{}
		deliveredTexts(t, got, c.out)
		return got["after the kill"] > 0
	})
	c.stop(t)

	got := map[string]int{}
	deliveredTexts(t, got, a.out, b.out, c.out)
	for i := range n {
		if text := fmt.Sprintf("m-%02d", i); got[text] != 1 {
			t.Errorf("%s delivered %d times, want once", text, got[text])
		}
	}
	if got["after the kill"] != 1 || len(got) != n+1 {
		t.Errorf("deliveries %v", got)
	}
}
