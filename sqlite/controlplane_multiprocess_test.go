package sqlite_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/sqlite"
)

// helperOpen returns the body of a child (args: start file, path) that
// opens the file with open once released, and so migrates it, then closes
// it.
func helperOpen[S io.Closer](open func(context.Context, string) (S, error)) func([]string) error {
	return func(args []string) error {
		if err := released(args[0]); err != nil {
			return err
		}
		s, err := open(context.Background(), args[1])
		if err != nil {
			return err
		}
		return s.Close()
	}
}

// race runs fn(0) … fn(n-1) in goroutines of their own, all at once, then
// prints the lines they reported, in the order reported; when any fn
// returns an error, the first is returned and nothing is printed.
func race(n int, fn func(i int, report func(line string)) error) error {
	var mu sync.Mutex
	var lines []string
	var firstErr error
	report := func(line string) { mu.Lock(); lines = append(lines, line); mu.Unlock() }
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(i, report); err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}

// openFromProcesses has procs processes open the central file at the same
// moment, then procs more janebot's file.
func openFromProcesses(t *testing.T, central, janebot string, procs int) {
	t.Helper()
	argsets := make([][]string, procs)
	for i := range argsets {
		argsets[i] = []string{central}
	}
	runChildren(t, "central-open", argsets)
	for i := range argsets {
		argsets[i] = []string{janebot}
	}
	runChildren(t, "subagents-open", argsets)
}

// checkCentralLedger fails unless the central file's ledger lists every
// migration once, in order, numbered from 1.
func checkCentralLedger(t *testing.T, round int, central string) {
	t.Helper()
	rows := sqlitetest.QueryFile(t, central, "SELECT version, name FROM schema_version ORDER BY version")
	var names []string
	for i, r := range rows {
		if r[0] != int64(i+1) {
			t.Errorf("round %d: ledger version %v at row %d", round, r[0], i)
		}
		names = append(names, r[1].(string))
	}
	if !reflect.DeepEqual(names, sqlite.CentralMigrationNames()) {
		t.Errorf("round %d: central ledger %q, want each name once, in order", round, names)
	}
}

// TestMigrationsRaceAcrossProcesses: processes opening a fresh file at the
// same moment never apply a migration twice, for the central ledger (by
// name) and janebot's (by version).
func TestMigrationsRaceAcrossProcesses(t *testing.T) {
	const rounds, procs = 3, 3
	for round := 0; round < rounds; round++ {
		dir := t.TempDir()
		central, janebot := filepath.Join(dir, "v2.db"), filepath.Join(dir, ".janebot", "state.sqlite")
		openFromProcesses(t, central, janebot, procs)
		checkCentralLedger(t, round, central)
		if got := sqlitetest.QueryFile(t, janebot, "SELECT version, description FROM schema_migrations"); len(got) != 1 || got[0][0] != int64(1) {
			t.Errorf("round %d: janebot ledger %v", round, got)
		}
	}
}

// helperCentralResolve: args start file, path, keys ("ag|mg|thread").
// Eight goroutines resolve every key (each from its own offset) and the
// child prints "key=session id" per resolution.
func helperCentralResolve(args []string) error {
	c, err := sqlite.OpenCentral(context.Background(), args[1], sqlite.CentralOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	keys := args[2:]
	if err := released(args[0]); err != nil {
		return err
	}
	return race(8, func(g int, report func(string)) error {
		var first error
		for i := range keys {
			k := keys[(i+g)%len(keys)]
			parts := strings.Split(k, "|")
			mode := sessiondb.ModeShared
			if parts[2] != "" {
				mode = sessiondb.ModePerThread
			}
			s, _, err := c.ResolveSession(context.Background(), sessiondb.SessionLookup{AgentGroupID: parts[0], MessagingGroupID: parts[1], ThreadID: parts[2], Mode: mode})
			first = cmp.Or(first, err)
			report(k + "=" + s.ID)
		}
		return first
	})
}

// TestResolveAcrossProcesses: 8 goroutines in each of 2 processes resolving
// sessions for the same chats at once create exactly one session per
// (agent, chat, thread).
func TestResolveAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	c := openCentral(t, path, nil)
	ctx := context.Background()
	var keys []string
	for _, ag := range []string{"ag-a", "ag-b"} {
		_, err := c.CreateAgentGroup(ctx, sessiondb.NewAgentGroup{ID: ag, Name: ag, Folder: ag})
		noErrT(t, "group", err)
	}
	for i := 0; i < 6; i++ {
		m, err := c.CreateMessagingGroup(ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: "C" + strconv.Itoa(i), IsGroup: true})
		noErrT(t, "chat", err)
		for _, ag := range []string{"ag-a", "ag-b"} {
			keys = append(keys, ag+"|"+m.ID+"|", ag+"|"+m.ID+"|thread-1", ag+"|"+m.ID+"|thread-2")
		}
	}
	c.Close()
	outs := runChildren(t, "central-resolve", [][]string{append([]string{path}, keys...), append([]string{path}, keys...)})
	got := map[string]map[string]bool{}
	n := 0
	for _, out := range outs {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, id, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("child printed %q", line)
			}
			if got[k] == nil {
				got[k] = map[string]bool{}
			}
			got[k][id] = true
			n++
		}
	}
	if n != 2*8*len(keys) {
		t.Errorf("%d resolutions reported, want %d", n, 2*8*len(keys))
	}
	for _, k := range keys {
		if len(got[k]) != 1 {
			t.Errorf("%s resolved to %d sessions: %v", k, len(got[k]), got[k])
		}
	}
	if rows := sqlitetest.QueryFile(t, path, "SELECT COUNT(*) FROM sessions"); rows[0][0] != int64(len(keys)) {
		t.Errorf("%v sessions stored, want %d", rows[0][0], len(keys))
	}
}

// helperSubagentsComplete: args start file, path, id, jobs. Each job's
// completion is attempted from its own goroutine; the child prints
// "<job> ok" or "<job> <code>".
func helperSubagentsComplete(args []string) error {
	s, err := sqlite.OpenSubagents(context.Background(), args[1], sqlite.SubagentOptions{})
	if err != nil {
		return err
	}
	defer s.Close()
	id, jobs := args[2], args[3:]
	if err := released(args[0]); err != nil {
		return err
	}
	return race(len(jobs), func(i int, report func(string)) error {
		_, err := s.CompleteJob(context.Background(), id, jobs[i])
		report(jobs[i] + " " + cmp.Or(sessiondb.ErrorCode(err), "ok"))
		return nil
	})
}

// TestCompletionsAcrossProcesses: stale and current completions racing from
// two processes; only the running job's lands, once.
func TestCompletionsAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.sqlite")
	s := openSubagents(t, path, nil)
	ctx := context.Background()
	a, _, err := s.EnsureSubagent(ctx, "C1", "1.0", "/s")
	noErrT(t, "ensure", err)
	// job_old ran, died, and was reconciled; job_new runs now.
	_, err = s.DispatchJob(ctx, a.ID, "job_old", nil)
	noErrT(t, "dispatch old", err)
	_, err = s.DispatchJob(ctx, a.ID, "job_new", func(sessiondb.Subagent) bool { return false })
	noErrT(t, "dispatch new", err)
	s.Close()
	jobs := []string{path, a.ID, "job_old", "job_new", "job_old", "job_x", "job_new", "job_old", "job_new", "job_y"}
	outs := runChildren(t, "subagents-complete", [][]string{jobs, jobs})
	wins := 0
	for _, out := range outs {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			job, code, _ := strings.Cut(line, " ")
			switch {
			case code == "ok" && job == "job_new":
				wins++
			case code == "ok":
				t.Errorf("stale %s completed", job)
			case code != sessiondb.ECONFLICT:
				t.Errorf("%s: code %s", job, code)
			}
		}
	}
	rows := sqlitetest.QueryFile(t, path, "SELECT status, last_job_id, turns, running_job_id FROM subagent_sessions")
	if wins != 1 || len(rows) != 1 || rows[0][0] != "idle" || rows[0][1] != "job_new" || rows[0][2] != int64(1) || rows[0][3] != nil {
		t.Errorf("%d completions landed; row %v; want exactly job_new's", wins, rows)
	}
}

// TestMigrationsRaceOnAdoptedFiles: processes opening the same existing
// files at the same moment, a NanoClaw v2.db with rows in every table
// (our migrations pending) and a janebot state.sqlite with rows from its
// first release (its version 2 pending), apply each pending migration
// once: the ledgers hold every name or version once, in order, and the
// rows are all there.
func TestMigrationsRaceOnAdoptedFiles(t *testing.T) {
	const rounds, procs = 3, 3
	firstRelease := strings.Replace(janebotV1, "sandbox_name TEXT NOT NULL", "sprite_name TEXT NOT NULL", 1)
	for round := 0; round < rounds; round++ {
		dir := t.TempDir()
		central, janebot := filepath.Join(dir, "v2.db"), filepath.Join(dir, ".janebot", "state.sqlite")
		buildNanoClawFile(t, central, nanoClawLedger)
		buildJanebotFile(t, janebot, firstRelease, janebotRows)
		tables := flat(sqlitetest.QueryFile(t, central, "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'schema_version' ORDER BY name"))
		counts := func() map[string]any {
			m := map[string]any{}
			for _, table := range tables {
				m[table] = sqlitetest.QueryFile(t, central, "SELECT count(*) FROM "+table)[0][0]
			}
			return m
		}
		before := counts()
		openFromProcesses(t, central, janebot, procs)
		checkCentralLedger(t, round, central)
		// Every row kept, but NanoClaw's repeated global owner grant, which
		// our migration removes (once).
		after := counts()
		before["user_roles"] = before["user_roles"].(int64) - 1
		if !reflect.DeepEqual(after, before) {
			t.Errorf("round %d: rows per table %v, want %v", round, after, before)
		}
		got := sqlitetest.QueryFile(t, janebot, "SELECT version FROM schema_migrations ORDER BY version")
		if !reflect.DeepEqual(got, [][]any{{int64(1)}, {int64(2)}}) {
			t.Errorf("round %d: janebot ledger %v, want versions 1 and 2 once each", round, got)
		}
		if got := sqlitetest.QueryFile(t, janebot, "SELECT count(*) FROM subagent_sessions WHERE sandbox_name LIKE 'jane-%'"); got[0][0] != int64(3) {
			t.Errorf("round %d: janebot rows after healing %v, want 3", round, got)
		}
	}
}
