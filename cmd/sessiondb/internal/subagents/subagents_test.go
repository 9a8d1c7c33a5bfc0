package subagents_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/subagents"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// janebot makes a subagent store with three threads: one idle (a job
// done), one running, one failed; the clock then moves two days on.
func janebot(t *testing.T) (path string, clk *testkit.Clock, ids map[string]string) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), ".janebot", "state.sqlite")
	clk = testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	st, err := store.OpenSubagents(ctx, path, store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids = map[string]string{}
	for _, th := range []string{"idle", "running", "error"} {
		a, _, err := st.EnsureSubagent(ctx, "C1", th+".1", "/sessions")
		if err != nil {
			t.Fatal(err)
		}
		ids[th] = a.ID
		if _, err := st.DispatchJob(ctx, a.ID, "job_"+th, nil); err != nil {
			t.Fatal(err)
		}
		switch th {
		case "idle":
			_, err = st.CompleteJob(ctx, a.ID, "job_"+th)
		case "error":
			_, err = st.FailJob(ctx, a.ID, "job_"+th, "sandbox \x1b[31mexploded")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(48 * time.Hour)
	return path, clk, ids
}

// shown is a subagent as --json prints it, snake_case as every command's.
type shown struct {
	ID           string                   `json:"id"`
	Status       sessiondb.SubagentStatus `json:"status"`
	RunningJobID string                   `json:"running_job_id"`
	LastError    string                   `json:"last_error"`
	ThreadTS     string                   `json:"thread_ts"`
}

func run(t *testing.T, clk *testkit.Clock, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(context.Background(), clitest.Options{Now: clk.Now}, args, subagents.Commands)
}

func TestSubagentsListAndShow(t *testing.T) {
	path, clk, ids := janebot(t)
	r := run(t, clk, "subagents", "list", "--subagents", path)
	if r.Code != 0 || strings.Count(r.Stdout, "\n") != 4 || !strings.Contains(r.Stdout, "job_running") || strings.ContainsRune(r.Stdout, 0x1b) || !strings.Contains(r.Stdout, `\x1b[31m`) {
		t.Fatalf("list: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = run(t, clk, "subagents", "list", "--subagents", path, "--status", "running", "--json")
	var page sessiondb.SubagentPage
	if err := json.Unmarshal([]byte(r.Stdout), &page); err != nil || len(page.Subagents) != 1 || page.Subagents[0].ID != ids["running"] {
		t.Fatalf("running: %v %s", err, r.Stdout)
	}
	r = run(t, clk, "subagents", "show", "--subagents", path, "--thread", "C1:error.1", "--json")
	var a shown
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || a.ID != ids["error"] || a.ThreadTS != "error.1" || a.Status != sessiondb.SubagentError || a.LastError != "sandbox \x1b[31mexploded" {
		t.Fatalf("show: %v %s", err, r.Stdout)
	}
	// janebot's own default: $SESSION_DB_PATH.
	t.Setenv("SESSION_DB_PATH", path)
	if r := run(t, clk, "subagents", "show", ids["idle"]); r.Code != 0 || !strings.Contains(r.Stdout, "job_idle") {
		t.Fatalf("default path: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestSubagentsPruneAndReconcile(t *testing.T) {
	path, clk, ids := janebot(t)
	// Prune what was not updated for a day: never the running record.
	r := run(t, clk, "subagents", "prune", "--subagents", path, "--older-than", "24h", "--yes", "--json")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != `{
  "pruned": 2
}` {
		t.Fatalf("prune: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// An agent the probe finds alive is left running; a dead one is reset.
	r = run(t, clk, "subagents", "reconcile", "--subagents", path, "--probe", `test "$SESSIONDB_SUBAGENT_JOB" = job_running`, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stdout, "none stale") {
		t.Fatalf("alive: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r = run(t, clk, "subagents", "reconcile", "--subagents", path, "--probe", "exit 1", "--yes", "--json")
	var res struct{ Reset []string }
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || len(res.Reset) != 1 || res.Reset[0] != ids["running"] {
		t.Fatalf("dead: %v %s %s", err, r.Stdout, r.Stderr)
	}
	r = run(t, clk, "subagents", "show", "--subagents", path, ids["running"], "--json")
	var a shown
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || a.Status != sessiondb.SubagentIdle || a.RunningJobID != "" {
		t.Fatalf("after reconcile: %v %s", err, r.Stdout)
	}
	// A probe that cannot answer (exit 2) never resets.
	st, err := store.OpenSubagents(context.Background(), path, store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DispatchJob(context.Background(), ids["running"], "job_again", nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if r := run(t, clk, "subagents", "reconcile", "--subagents", path, "--probe", "exit 2", "--yes"); r.Code != 0 || !strings.Contains(r.Stdout, "none stale") {
		t.Fatalf("unknown answer: %s %s", r.Stdout, r.Stderr)
	}
	if r := run(t, clk, "subagents", "reconcile", "--subagents", path, "--all-dead", "--yes"); r.Code != 0 || !strings.Contains(r.Stdout, "reset 1 of 1") {
		t.Fatalf("all dead: %s %s", r.Stdout, r.Stderr)
	}
}

func TestSubagentsRefusals(t *testing.T) {
	path, _, _ := janebot(t)
	missing := filepath.Join(t.TempDir(), "none.sqlite")
	clitest.Fails(t, []clitest.Failure{
		{Name: "missing store", Args: []string{"subagents", "list", "--subagents", missing}, Code: cli.ExitNotFound, Want: "no subagent store"},
		{Name: "unknown id", Args: []string{"subagents", "show", "sa_0000000000000000", "--subagents", path}, Code: cli.ExitNotFound, Want: "sa_0000000000000000"},
		{Name: "unknown thread", Args: []string{"subagents", "show", "--thread", "C9:1.1", "--subagents", path}, Code: cli.ExitNotFound, Want: ""},
		{Name: "bad thread", Args: []string{"subagents", "show", "--thread", "C9", "--subagents", path}, Code: cli.ExitInvalid, Want: "CHANNEL:TS"},
		{Name: "bad status", Args: []string{"subagents", "list", "--status", "done", "--subagents", path}, Code: cli.ExitInvalid, Want: "status"},
		{Name: "prune running", Args: []string{"subagents", "prune", "--older-than", "1h", "--status", "running", "--subagents", path}, Code: cli.ExitInvalid, Want: "never pruned"},
		{Name: "prune no age", Args: []string{"subagents", "prune", "--subagents", path}, Code: cli.ExitInvalid, Want: "--older-than"},
		{Name: "bad time", Args: []string{"subagents", "list", "--updated-before", "yesterday", "--subagents", path}, Code: cli.ExitInvalid, Want: "--updated-before"},
	}, subagents.Commands)
}
