package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestFreshFileOpenedTogether: handles opening a state.db that does not
// exist yet at the same moment (each with its own connections, as two
// processes have) all open it and can write, round after round: whoever
// loses the race to create the schema or switch the journal to WAL waits
// for the lock instead of failing with SQLITE_BUSY.
func TestFreshFileOpenedTogether(t *testing.T) {
	const rounds, handles = 40, 4
	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		path := filepath.Join(t.TempDir(), "state.db")
		start := make(chan struct{})
		errs := make([]error, handles)
		var wg sync.WaitGroup
		for h := 0; h < handles; h++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := sqlite.Open(ctx, path, sqlite.Options{})
				if err != nil {
					errs[h] = fmt.Errorf("open: %w", err)
					return
				}
				defer s.Close()
				sid := fmt.Sprintf("s%d", h)
				if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "race"}); err != nil {
					errs[h] = fmt.Errorf("create session: %w", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		for h, err := range errs {
			if err != nil {
				t.Fatalf("round %d, handle %d: %v (code %s)", round, h, err, sessiondb.ErrorCode(err))
			}
		}
		s := openStore(t, path)
		var want []string
		for h := 0; h < handles; h++ {
			if _, err := s.GetSession(ctx, fmt.Sprintf("s%d", h)); err != nil {
				t.Fatalf("round %d: session s%d: %v", round, h, err)
			}
			want = append(want, fmt.Sprintf("s%d", h))
		}
		s.Close()
		// The last-activity table was made once, whole, and kept every
		// handle's session.
		var got []string
		for _, r := range sqlitetest.QueryFile(t, path, "SELECT session_id FROM sessiondb_last_active ORDER BY session_id") {
			got = append(got, r[0].(string))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: sessiondb_last_active holds %v, want %v", round, got, want)
		}
	}
}

// helperHistoryOpen: args start file, path, session id. Opens the history
// store once released and creates the session.
func helperHistoryOpen(args []string) error {
	if err := released(args[0]); err != nil {
		return err
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, args[1], sqlite.Options{})
	if err != nil {
		return fmt.Errorf("open: %w (code %s)", err, sessiondb.ErrorCode(err))
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: args[2], Source: "race"}); err != nil {
		s.Close()
		return fmt.Errorf("create session: %w", err)
	}
	return s.Close()
}

// TestFreshFileOpenedByTwoProcesses: two OS processes released together
// onto a state.db that does not exist yet both open it and write, round
// after round.
func TestFreshFileOpenedByTwoProcesses(t *testing.T) {
	const rounds = 8
	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		path := filepath.Join(t.TempDir(), "state.db")
		runChildren(t, "history-open", [][]string{{path, "p0"}, {path, "p1"}})
		if t.Failed() {
			t.Fatalf("round %d failed", round)
		}
		s := openStore(t, path)
		for _, sid := range []string{"p0", "p1"} {
			if _, err := s.GetSession(ctx, sid); err != nil {
				t.Fatalf("round %d: session %s: %v", round, sid, err)
			}
		}
		s.Close()
	}
}
