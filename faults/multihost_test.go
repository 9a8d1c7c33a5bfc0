package faults

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// hostProc is one `sessiondb host` process in a process group of its own,
// so a kill takes its agents with it, as a machine dying would.
type hostProc struct {
	name, data, out string
	cmd             *exec.Cmd
	logs            *testkit.Buffer
	done            chan error
}

// startHost starts a host daemon sharing the registry central, with its own
// data root under dir, delivering by appending each message to its own
// file, waking sessions with agent.
func startHost(t *testing.T, e env, central, dir, name, agent string) *hostProc {
	t.Helper()
	h := &hostProc{name: name, data: filepath.Join(dir, name), out: filepath.Join(dir, name+"-delivered.jsonl"), logs: &testkit.Buffer{}, done: make(chan error, 1)}
	h.cmd = exec.Command(binary, "host", "--central", central, "--data", h.data, "--host-id", name, "--lease-ttl", "3s",
		"--poll", "50ms", "--deliver", "exec:cat >> "+h.out, "--wake", "exec:"+agent)
	h.cmd.Env = e.environ()
	h.cmd.Dir = e.Home
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.done <- h.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL) })
	// A killed host leaves its socket file behind: wait for the log line.
	testkit.WaitFor(t, name+"'s event endpoint", func() bool { return strings.Contains(h.logs.String(), "router: serving events") })
	return h
}

// kill ends the host and its agents with SIGKILL: nothing of theirs runs
// on, nothing is released.
func (h *hostProc) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done
}

// stop ends the host cleanly (SIGTERM) and fails t unless it exits 0.
func (h *hostProc) stop(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-h.done; err != nil {
		t.Errorf("%s: %v\n%s", h.name, err, h.logs)
	}
}

// replies counts, in the host's delivery file, the agent's answers to each
// message ("You said: <text>").
func (h *hostProc) replies(t *testing.T, into map[string]int) {
	t.Helper()
	b, err := os.ReadFile(h.out)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	whole := string(b)[:bytes.LastIndexByte(b, '\n')+1]
	for _, line := range strings.Split(whole, "\n") {
		if _, text, ok := strings.Cut(line, "You said: "); ok {
			text, _, _ = strings.Cut(text, `"`)
			into[text]++
		}
	}
}

// Two host daemons share one PostgreSQL registry from two data roots,
// running a real shell agent each: the same events posted to both at once
// are answered once; when one host is killed (SIGKILL, with its agents),
// the other answers the messages for its sessions once their leases run
// out; when the killed host comes back it serves none of them (the other
// host holds them) and what it is sent goes to that host. Over the whole
// run every message is answered exactly once across both hosts' delivery
// files: no message is delivered twice by the two of them.
func TestHostsShareRegistryAndSurviveAKill(t *testing.T) {
	url := pgtest.URL(t)
	central := pgtest.WithSearchPath(url, pgtest.Schema(t, url))
	e := newEnv(t)
	dir := t.TempDir()
	agent := echoAgent(t, dir)
	chats := []string{"chat-0", "chat-1", "chat-2", "chat-3"}
	e.must(t, "admin", "groups", "create", "Helper", "--id", "ag-helper", "--central", central)
	for _, c := range chats {
		e.must(t, "admin", "channels", "create", "telegram", c, "--id", "mg-"+c, "--name", c, "--group-chat", "--policy", "public", "--central", central)
		e.must(t, "admin", "wire", "mg-"+c, "ag-helper", "--engage", "pattern", "--central", central)
	}
	a := startHost(t, e, central, dir, "host-a", agent)
	b := startHost(t, e, central, dir, "host-b", agent)
	event := func(chat, id string) string {
		return fmt.Sprintf(`{"channel_type":"telegram","platform_id":%q,"message_id":%q,"sender":{"id":"42","name":"Ann"},"text":"msg-%s","is_group":true}`, chat, id, id)
	}
	route := func(h *hostProc, lines ...string) {
		t.Helper()
		r := e.run(t, strings.Join(lines, "\n")+"\n", "route", "--host", filepath.Join(h.data, "host.sock"))
		if r.Code != 0 {
			t.Fatalf("route through %s: %s", h.name, r)
		}
	}
	var sent []string
	// events are the events e<from> to e<to-1>, round the chats, counted
	// as sent.
	events := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			id := fmt.Sprintf("e%d", i)
			out = append(out, event(chats[i%len(chats)], id))
			sent = append(sent, id)
		}
		return out
	}
	answered := func(hosts ...*hostProc) func() bool {
		return func() bool {
			got := map[string]int{}
			for _, h := range hosts {
				h.replies(t, got)
			}
			for _, id := range sent {
				if got["msg-"+id] == 0 {
					return false
				}
			}
			return true
		}
	}

	// Each host makes two of the sessions, then both get the same events
	// at once.
	route(a, event("chat-0", "e0"), event("chat-2", "e2"))
	route(b, event("chat-1", "e1"), event("chat-3", "e3"))
	sent = append(sent, "e0", "e1", "e2", "e3")
	same := events(4, 12)
	var wg sync.WaitGroup
	for _, h := range []*hostProc{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.run(t, strings.Join(same, "\n")+"\n", "route", "--host", filepath.Join(h.data, "host.sock"))
			if r.Code != 0 {
				t.Errorf("route through %s: %s", h.name, r)
			}
		}()
	}
	wg.Wait()
	testkit.WaitFor(t, "every event of both hosts answered", answered(a, b))
	bBefore := map[string]int{}
	b.replies(t, bBefore)
	if bBefore["msg-e1"] != 1 || bBefore["msg-e3"] != 1 {
		t.Fatalf("host-b did not answer its own sessions' first messages: %v\n%s", bBefore, b.logs)
	}

	// host-b dies with its agents. host-a gets the next messages for every
	// chat, host-b's included: it hands them to host-b until host-b's
	// leases run out, then serves those sessions itself.
	b.kill(t)
	route(a, events(12, 20)...)
	testkit.WaitFor(t, "host-a answering host-b's sessions after the kill", answered(a, b))

	// host-b comes back on the same data root: host-a holds its old
	// sessions now, so what host-b is sent for them goes to host-a.
	b = startHost(t, e, central, dir, "host-b", agent)
	route(b, events(20, 24)...)
	testkit.WaitFor(t, "the messages sent to the restarted host answered", answered(a, b))
	a.stop(t)
	b.stop(t)

	got := map[string]int{}
	a.replies(t, got)
	b.replies(t, got)
	for _, id := range sent {
		if got["msg-"+id] != 1 {
			t.Errorf("msg-%s answered %d times across both hosts, want once", id, got["msg-"+id])
		}
	}
	bAfter := map[string]int{}
	b.replies(t, bAfter)
	for text, n := range bAfter {
		if bBefore[text] != n {
			t.Errorf("host-b delivered %s after it was killed (%d times)", text, n-bBefore[text])
		}
	}
	if t.Failed() {
		t.Logf("host-a:\n%s\nhost-b:\n%s", a.logs, b.logs)
	}
}
