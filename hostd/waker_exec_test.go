package hostd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

func TestExecWaker(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2-sessions")
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	dir := filepath.Join(root, "ag-1", "sess-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "starts")
	cases := []struct {
		name     string
		script   string
		stop     bool
		wantExit string // "" = exit status 0
	}{
		{name: "runs until stopped", script: `echo "$1|$SESSIONDB_AGENT_GROUP|$SESSIONDB_SESSION|$PWD" >> "$LOG"; exec sleep 60`, stop: true, wantExit: "signal"},
		{name: "ignores SIGTERM, killed after grace", script: `trap '' TERM; echo "$1|$SESSIONDB_AGENT_GROUP|$SESSIONDB_SESSION|$PWD" >> "$LOG"; while :; do sleep 1; done`, stop: true, wantExit: "signal"},
		{name: "exits by itself", script: `echo "$1|$SESSIONDB_AGENT_GROUP|$SESSIONDB_SESSION|$PWD" >> "$LOG"; exit 0`},
		{name: "fails by itself", script: `echo "$1|$SESSIONDB_AGENT_GROUP|$SESSIONDB_SESSION|$PWD" >> "$LOG"; exit 7`, wantExit: "exit status 7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(log)
			if err := os.WriteFile(filepath.Join(dir, mailbox.HeartbeatFile), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			exits := []error{}
			// A script file, as `--wake exec:./agent.sh` would name one.
			script := filepath.Join(t.TempDir(), "agent.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			w, err := NewExecWaker(script, mailbox.Layout{Root: root}, ExecWakerOptions{
				Env: []string{"LOG=" + log}, StopGrace: 200 * time.Millisecond,
				OnExit: func(r mailbox.SessionRef, err error) {
					mu.Lock()
					defer mu.Unlock()
					if r != ref {
						t.Errorf("OnExit for %v", r)
					}
					exits = append(exits, err)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Wake(ctxb, ref); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, mailbox.HeartbeatFile)); !os.IsNotExist(err) {
				t.Fatalf("heartbeat not removed before spawn: %v", err)
			}
			testkit.WaitFor(t, "the command's first line", func() bool { b, _ := os.ReadFile(log); return len(b) > 0 })
			if tc.stop {
				if !w.Running(ref) {
					t.Fatal("not running while the command runs")
				}
				// A second wake while it runs starts nothing.
				if err := w.Wake(ctxb, ref); err != nil {
					t.Fatal(err)
				}
				if err := w.Stop(ctxb, ref, "test"); err != nil {
					t.Fatal(err)
				}
				// Stop returns only once the process is gone.
				if w.Running(ref) {
					t.Fatal("still running after Stop returned")
				}
			}
			testkit.WaitFor(t, "exit", func() bool { mu.Lock(); defer mu.Unlock(); return len(exits) == 1 })
			if w.Running(ref) {
				t.Fatal("running after exit")
			}
			mu.Lock()
			exitErr := exits[0]
			mu.Unlock()
			if tc.wantExit == "" && exitErr != nil || tc.wantExit != "" && (exitErr == nil || !strings.Contains(exitErr.Error(), tc.wantExit)) {
				t.Fatalf("exit error %v, want %q", exitErr, tc.wantExit)
			}
			b, _ := os.ReadFile(log)
			if got, want := string(b), dir+"|ag-1|sess-1|"+dir+"\n"; got != want {
				t.Fatalf("command saw %q, want %q (one start)", got, want)
			}
		})
	}
}

func TestExecWakerRejectsUnsafeRef(t *testing.T) {
	w, err := NewExecWaker("true", mailbox.Layout{Root: t.TempDir()}, ExecWakerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []mailbox.SessionRef{{AgentGroupID: "..", SessionID: "s"}, {AgentGroupID: "g", SessionID: "a/b"}, {AgentGroupID: "g"}} {
		wantCode(t, w.Wake(ctxb, ref), "invalid")
	}
}

// TestExecWakerPrefixesItsOutput: what a wake process prints reaches the
// host's output a line at a time under the session it was woken for, with
// what a terminal would obey escaped, and an unfinished last line is not
// lost.
func TestExecWakerPrefixesItsOutput(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2-sessions")
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	if err := os.MkdirAll(filepath.Join(root, "ag-1", "sess-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	w, err := NewExecWaker(`printf 'starting\nto stderr \033]0;owned\007\n' >&2; printf 'no newline'`, mailbox.Layout{Root: root}, ExecWakerOptions{
		Output: &out, OnExit: func(mailbox.SessionRef, error) { close(done) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wake(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the wake process did not exit")
	}
	got := out.String()
	want := "[wake " + ref.String() + "] starting\n[wake " + ref.String() + "] to stderr \\x1b]0;owned\\x07\n[wake " + ref.String() + "] no newline\n"
	if got != want {
		t.Errorf("output\n%q\nwant\n%q", got, want)
	}
}
