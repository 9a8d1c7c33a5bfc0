package hostd

import (
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
