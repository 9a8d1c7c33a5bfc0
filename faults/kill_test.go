package faults

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
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

func init() { childRoles["appender"] = appender }

// appender is a writer process: args are the store's path and a session
// id. It creates the session, then appends "<session> payload <n>" for n =
// 1, 2, ... until killed, printing "<message id> <n>" once each append has
// returned: the acknowledgement the parent holds the store to.
func appender(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("appender: want path and session id, got %q", args)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, args[0], sqlite.Options{})
	if err != nil {
		return fmt.Errorf("appender: %w", err)
	}
	sid := args[1]
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "faults"}); err != nil {
		return fmt.Errorf("appender: %w", err)
	}
	out := bufio.NewWriter(os.Stdout)
	for n := 1; ; n++ {
		c := fmt.Sprintf("%s payload %d", sid, n)
		id, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: &c})
		if err != nil {
			return fmt.Errorf("appender: %w", err)
		}
		fmt.Fprintf(out, "%d %d\n", id, n)
		out.Flush()
	}
}

// TestKilledWritersLoseNothing: round after round, four writer processes
// append to one store at once and each is killed with SIGKILL at a random
// moment (after a random number of acknowledged appends, while it keeps
// writing). After every round the store passes SQLite's integrity check
// and FTS5's, every acknowledged message is there with its text, each
// session's message_count matches its rows, and search finds the text.
// SESSIONDB_FAULTS_KILL_ROUNDS changes the number of rounds (default 25).
func TestKilledWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	rounds := testkit.EnvInt("SESSIONDB_FAULTS_KILL_ROUNDS", 25)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var kills, acked, present int
	for round := range rounds {
		type writer struct {
			sid   string
			limit int             // kill after this many acknowledgements
			acks  map[int64]int64 // message id -> n
		}
		var ws []*writer
		var wg sync.WaitGroup
		var mu sync.Mutex
		for k := range 4 {
			w := &writer{sid: fmt.Sprintf("r%02d_w%d", round, k), limit: 1 + rng.IntN(80), acks: map[int64]int64{}}
			ws = append(ws, w)
			cmd := child("appender", path, w.sid)
			stdout, stderr := testkit.StartReading(t, cmd)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc := bufio.NewScanner(stdout)
				killed := false
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) != 2 {
						continue // a line torn by the kill was never acknowledged
					}
					id, _ := strconv.ParseInt(f[0], 10, 64)
					n, _ := strconv.ParseInt(f[1], 10, 64)
					mu.Lock()
					w.acks[id] = n
					count := len(w.acks)
					mu.Unlock()
					if !killed && count >= w.limit {
						cmd.Process.Signal(syscall.SIGKILL)
						killed = true
					}
				}
				err := cmd.Wait()
				if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
					t.Errorf("writer %s ended without being killed: %v; stderr: %s", w.sid, err, stderr.String())
				}
			}()
		}
		wg.Wait()
		kills += len(ws)

		s, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatalf("round %d: open after the kills: %v", round, err)
		}
		if lines, err := s.IntegrityCheck(ctx); err != nil || len(lines) != 1 || lines[0] != "ok" {
			t.Fatalf("round %d: integrity_check %q, %v", round, lines, err)
		}
		if err := s.FTSIntegrityCheck(ctx); err != nil {
			t.Fatalf("round %d: full-text check: %v", round, err)
		}
		for _, w := range ws {
			acked += len(w.acks)
			ms, err := s.GetMessages(ctx, w.sid)
			if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND || err == nil && len(ms) == 0 && len(w.acks) == 0 {
				continue // killed before its session was made
			}
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, w.sid, err)
			}
			present += len(ms)
			have := map[int64]string{}
			for _, m := range ms {
				if m.Content != nil {
					have[m.ID] = *m.Content
				}
			}
			for id, n := range w.acks {
				if want := fmt.Sprintf("%s payload %d", w.sid, n); have[id] != want {
					t.Errorf("round %d: acknowledged message %d (%q) is %q", round, id, want, have[id])
				}
			}
			sess, err := s.GetSession(ctx, w.sid)
			if err != nil || sess.MessageCount != int64(len(ms)) {
				t.Errorf("round %d: %s message_count %v for %d rows (%v)", round, w.sid, sess, len(ms), err)
			}
			if len(w.acks) > 0 {
				hits, err := s.SearchMessages(ctx, `"`+w.sid+` payload"`, sessiondb.SearchFilter{Sources: []string{"faults"}, Limit: 1})
				if err != nil || len(hits) == 0 {
					t.Errorf("round %d: search for %s: %d hits, %v", round, w.sid, len(hits), err)
				}
			}
		}
		s.Close()
	}
	t.Logf("SIGKILL of 4 writers: %d rounds, %d kills, %d appends acknowledged, %d rows present (%d committed but not yet acknowledged when killed), 0 lost (seed %d)",
		rounds, kills, acked, present, present-acked, seed)
}
