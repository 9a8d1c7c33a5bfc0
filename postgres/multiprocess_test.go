package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/postgres"
)

// TestHelperProcess is not a test: it is the body of the child processes
// of the multi-process test (testkit.ServeChild). Run directly it returns
// at once.
func TestHelperProcess(t *testing.T) {
	testkit.ServeChild(map[string]func([]string) error{"load": helperLoad})
}

const (
	loadProcs      = 8
	loadGoroutines = 8
	loadEach       = 40 // appends per goroutine
)

var loadSessions = []string{"shared-0", "shared-1", "shared-2", "shared-3"}

// helperLoad: args url, schema, process number. It opens the store, says
// "ready", waits for a line on stdin, then runs loadGoroutines goroutines
// each appending loadEach messages (two tool calls each) to the shared
// sessions in turn, adding one input token per append, says "appended",
// and on a second line claims the title "the one title" for its own
// session, printing "title ok" or "title conflict".
func helperLoad(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("load wants 3 arguments, got %q", args)
	}
	url, schema, proc := args[0], args[1], args[2]
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, loadGoroutines*loadEach)
	for g := 0; g < loadGoroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < loadEach; i++ {
				sid := loadSessions[(g+i)%len(loadSessions)]
				c := fmt.Sprintf("p%s-g%d-%d", proc, g, i)
				if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "assistant", Content: &c,
					ToolCalls: []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}}); err != nil {
					errs <- fmt.Errorf("append %s: %w", c, err)
					continue
				}
				if err := s.UpdateTokenCounts(ctx, sid, sessiondb.TokenUpdate{Input: 1}); err != nil {
					errs <- fmt.Errorf("tokens %s: %w", c, err)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	// Every process claims the title at once: the parent says when, after
	// all of them have appended.
	fmt.Println("appended")
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("wait for claim: %w", err)
	}
	_, err = s.SetSessionTitle(ctx, "own-"+proc, "the one title")
	switch sessiondb.ErrorCode(err) {
	case "":
		fmt.Println("title ok")
	case sessiondb.ECONFLICT:
		fmt.Println("title conflict")
	default:
		return fmt.Errorf("claim title: %w", err)
	}
	return nil
}

// TestMultiProcessLoad: 8 processes × 8 goroutines append to 4 shared
// sessions through one server, at once; then all of them claim one title
// for their own sessions at once. Every row is present once, the counters are
// exact, no append failed, and exactly one process got the title.
func TestMultiProcessLoad(t *testing.T) {
	url := pgtest.URL(t)
	s, _ := openStore(t, postgres.Options{})
	ctx := context.Background()
	for _, id := range loadSessions {
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
		err   strings.Builder
	}
	children := make([]*child, loadProcs)
	for p := range children {
		id := strconv.Itoa(p)
		if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "own-" + id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: testkit.ChildCommand("TestHelperProcess", "load", url, s.Schema(), id)}
		c.cmd.Stderr = &c.err
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.out = bufio.NewReader(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[p] = c
	}
	for p, c := range children {
		if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("child %d: %q, %v; stderr %s", p, line, err, c.err.String())
		}
	}
	for _, c := range children {
		io.WriteString(c.stdin, "go\n")
	}
	for p, c := range children {
		if line, err := c.out.ReadString('\n'); err != nil || line != "appended\n" {
			t.Fatalf("child %d: %q, %v; stderr %s", p, line, err, c.err.String())
		}
	}
	for _, c := range children {
		io.WriteString(c.stdin, "claim\n")
	}
	titles := map[string]int{}
	for p, c := range children {
		rest, _ := io.ReadAll(c.out)
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v; stderr %s", p, err, c.err.String())
		}
		titles[strings.TrimSpace(string(rest))]++
	}
	if titles["title ok"] != 1 || titles["title conflict"] != loadProcs-1 {
		t.Errorf("title claims: %v, want one ok and %d conflicts", titles, loadProcs-1)
	}
	holders, err := s.GetSessionByTitle(ctx, "the one title")
	if err != nil || !strings.HasPrefix(holders.ID, "own-") {
		t.Errorf("GetSessionByTitle = %v, %v", holders, err)
	}

	total := loadProcs * loadGoroutines * loadEach
	if n, err := s.MessageCount(ctx, ""); err != nil || n != int64(total) {
		t.Fatalf("MessageCount = %d, %v; want %d", n, err, total)
	}
	var contents []string
	for _, sid := range loadSessions {
		ms, err := s.GetMessages(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		x, err := s.GetSession(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(ms))
		if x.MessageCount != n || x.ToolCallCount != 2*n || x.InputTokens != n {
			t.Errorf("%s: message_count %d tool_call_count %d input_tokens %d, want %d, %d, %d", sid, x.MessageCount, x.ToolCallCount, x.InputTokens, n, 2*n, n)
		}
		for _, m := range ms {
			contents = append(contents, *m.Content)
		}
	}
	var want []string
	for p := 0; p < loadProcs; p++ {
		for g := 0; g < loadGoroutines; g++ {
			for i := 0; i < loadEach; i++ {
				want = append(want, fmt.Sprintf("p%d-g%d-%d", p, g, i))
			}
		}
	}
	sort.Strings(contents)
	sort.Strings(want)
	if strings.Join(contents, ",") != strings.Join(want, ",") {
		t.Errorf("stored rows differ from the appended ones (%d stored, %d appended)", len(contents), len(want))
	}
}
