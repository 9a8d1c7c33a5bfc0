package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// helperCrash: args path, session id, synchronous. It appends from four
// goroutines until killed, printing each id on its own line only after
// AppendMessage returned it: a printed id is an acknowledged write.
func helperCrash(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("crash wants 3 arguments, got %q", args)
	}
	path, sid, synchronous := args[0], args[1], args[2]
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{Synchronous: synchronous})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "crash"}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	errc := make(chan error, 4)
	// A safety stop, in case the parent died without killing us.
	deadline := time.Now().Add(time.Minute)
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := 0; time.Now().Before(deadline); i++ {
				c := fmt.Sprintf("crash %d %d %s", g, i, strings.Repeat("payload ", 16))
				id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: &c, ToolCalls: []any{"t"}})
				if err != nil {
					errc <- err
					return
				}
				out.Lock()
				fmt.Fprintln(w, id)
				err = w.Flush() // line-buffered: the id leaves before the next append
				out.Unlock()
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-errc; err != nil {
			return err
		}
	}
	return fmt.Errorf("never killed")
}

// TestCrashKeepsAcknowledgedWrites SIGKILLs a child in the middle of a
// stream of appends, several times over the same file: afterwards the file
// opens, passes both integrity checks, every id the child reported is
// present, and each session's message_count matches its rows (a commit is
// all or nothing).
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	rounds := []struct {
		name     string
		sync     string
		killHits int // acknowledged ids to wait for before the kill
	}{
		{"normal early", "NORMAL", 5},
		{"normal later", "NORMAL", 120},
		{"full", "FULL", 40},
	}
	for r, round := range rounds {
		t.Run(round.name, func(t *testing.T) {
			sid := fmt.Sprintf("crash%d", r)
			cmd := helperCmd(t, "crash", path, sid, round.sync)
			stdout, stderr := testkit.StartReading(t, cmd)
			rd := bufio.NewReader(stdout)
			var acked []int64
			killed := false
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					// EOF after the kill; a torn last line (no newline) was
					// never acknowledged and is ignored.
					if err != io.EOF {
						t.Errorf("read child output: %v", err)
					}
					break
				}
				id, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
				if perr != nil {
					t.Fatalf("child printed %q", line)
				}
				acked = append(acked, id)
				if !killed && len(acked) >= round.killHits {
					if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatalf("kill: %v", err)
					}
					killed = true
				}
			}
			werr := cmd.Wait()
			if !killed {
				t.Fatalf("child ended before the kill after %d ids: %v; stderr: %s", len(acked), werr, stderr.String())
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed by SIGKILL: %v; stderr: %s", werr, stderr.String())
			}

			s, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatalf("open after crash: %v", err)
			}
			defer s.Close()
			checkIntegrity(t, s)
			ms, err := s.GetMessages(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d ids acknowledged before the kill, %d rows present", len(acked), len(ms))
			have := map[int64]bool{}
			for _, m := range ms {
				have[m.ID] = true
			}
			for _, id := range acked {
				if !have[id] {
					t.Errorf("acknowledged message %d lost (%d acknowledged, %d present)", id, len(acked), len(ms))
				}
			}
			sess, err := s.GetSession(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if sess.MessageCount != int64(len(ms)) || sess.ToolCallCount != int64(len(ms)) {
				t.Errorf("message_count/tool_call_count = %d/%d but %d rows", sess.MessageCount, sess.ToolCallCount, len(ms))
			}
			// The file still takes writes after the crash.
			c := "after the crash"
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: &c}); err != nil {
				t.Errorf("append after crash: %v", err)
			}
			hits, err := s.SearchMessages(ctx, "payload", sessiondb.SearchFilter{Sources: []string{"crash"}, Limit: 1})
			if err != nil || (len(ms) > 0 && len(hits) == 0) {
				t.Errorf("search after crash: %d hits, %v", len(hits), err)
			}
		})
	}
}
