package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// helperCmd returns a command that runs this test binary as a child in
// role (testkit.ChildCommand), served by TestHelperProcess.
func helperCmd(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	return testkit.ChildCommand("TestHelperProcess", role, args...)
}

// TestHelperProcess is not a test: it is the body of the child processes of
// the multi-process and crash tests. Run directly it returns at once.
func TestHelperProcess(t *testing.T) {
	testkit.ServeChild(map[string]func([]string) error{
		"append":       helperAppend,
		"crash":        helperCrash,
		"openpath":     helperOpenPath,
		"history-open": helperHistoryOpen,
		"central-open": helperOpen(func(ctx context.Context, path string) (*sqlite.Central, error) {
			return sqlite.OpenCentral(ctx, path, sqlite.CentralOptions{})
		}),
		"subagents-open": helperOpen(func(ctx context.Context, path string) (*sqlite.Subagents, error) {
			return sqlite.OpenSubagents(ctx, path, sqlite.SubagentOptions{})
		}),
		"central-resolve":    helperCentralResolve,
		"subagents-complete": helperSubagentsComplete,
	})
}

// helperAppend: args start file, path, session id, count. It opens the
// store, creates its session, prints "ready", waits for the start file, then
// appends count messages "<session>-<i>" and exits.
func helperAppend(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("append wants 4 arguments, got %q", args)
	}
	startFile, path, sid := args[0], args[1], args[2]
	n, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "multiprocess"}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := released(startFile); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		c := fmt.Sprintf("%s-%d", sid, i)
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: &c}); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
	}
	return s.Close()
}

// released is a child's half of runChildren's barrier: it prints "ready"
// and returns once the file at startFile exists, the parent's signal that
// every child is ready.
func released(startFile string) error {
	fmt.Println("ready")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(startFile); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start file never appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runChildren starts one child per argument list in role, with a start
// file of its own first, waits until each has printed "ready", releases
// them together by creating the start file, and returns what each printed
// after "ready". A child that fails fails the test.
func runChildren(t *testing.T, role string, argsets [][]string) []string {
	t.Helper()
	startFile := filepath.Join(t.TempDir(), "start")
	type child struct {
		cmd    *exec.Cmd
		out    *bufio.Reader
		stderr bytes.Buffer
		rest   bytes.Buffer
	}
	children := make([]*child, len(argsets))
	for i, args := range argsets {
		c := &child{cmd: helperCmd(t, role, append([]string{startFile}, args...)...)}
		c.cmd.Stderr = &c.stderr
		pipe, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.out = bufio.NewReader(pipe)
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("start child %d: %v", i, err)
		}
		children[i] = c
		t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
	}
	for i, c := range children {
		if line, err := c.out.ReadString('\n'); strings.TrimSpace(line) != "ready" {
			_ = c.cmd.Wait()
			t.Fatalf("child %d: %q, %v; stderr: %s", i, line, err, c.stderr.String())
		}
	}
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = io.Copy(&c.rest, c.out) }()
	}
	if err := os.WriteFile(startFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	outs := make([]string, len(children))
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil || c.stderr.Len() > 0 {
			t.Errorf("child %d: exit %v; stderr: %s", i, err, c.stderr.String())
		}
		outs[i] = c.rest.String()
	}
	return outs
}

// TestMultiProcessAppend runs four OS processes appending to one file at
// once, released together: every row lands, every counter is exact, no
// process sees an error, and the file passes SQLite's integrity check.
func TestMultiProcessAppend(t *testing.T) {
	const procs, each = 4, 200
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()

	// Create the schema first so the children only contend for appends.
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	argsets := make([][]string, procs)
	for i := range argsets {
		argsets[i] = []string{path, fmt.Sprintf("proc%d", i), strconv.Itoa(each)}
	}
	runChildren(t, "append", argsets)

	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	for i := 0; i < procs; i++ {
		sid := fmt.Sprintf("proc%d", i)
		sess, err := s.GetSession(ctx, sid)
		if err != nil {
			t.Fatalf("GetSession(%s): %v", sid, err)
		}
		if sess.MessageCount != each {
			t.Errorf("%s message_count = %d, want %d", sid, sess.MessageCount, each)
		}
		ms, err := s.GetMessages(ctx, sid)
		if err != nil {
			t.Fatalf("GetMessages(%s): %v", sid, err)
		}
		if len(ms) != each {
			t.Errorf("%s has %d rows, want %d", sid, len(ms), each)
		}
		for j, m := range ms {
			if want := fmt.Sprintf("%s-%d", sid, j); m.Content == nil || *m.Content != want {
				t.Errorf("%s row %d = %v, want %q in order", sid, j, m.Content, want)
				break
			}
		}
	}
	if n, err := s.MessageCount(ctx, ""); err != nil || n != procs*each {
		t.Errorf("MessageCount = %d, %v; want %d", n, err, procs*each)
	}
	checkIntegrity(t, s)
}

// checkIntegrity fails unless SQLite's integrity check and the FTS index
// check both pass.
func checkIntegrity(t *testing.T, s *sqlite.Store) {
	t.Helper()
	ctx := context.Background()
	res, err := s.IntegrityCheck(ctx)
	if err != nil {
		t.Fatalf("IntegrityCheck: %v", err)
	}
	if len(res) != 1 || res[0] != "ok" {
		t.Errorf("IntegrityCheck = %q, want [ok]", res)
	}
	if err := s.FTSIntegrityCheck(ctx); err != nil {
		t.Errorf("FTSIntegrityCheck: %v", err)
	}
}
