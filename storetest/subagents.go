package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// SubagentHarness is how the subagent suite reaches one backend's store
// (spec/control-plane.md part B).
type SubagentHarness = Handles[sessiondb.SubagentService]

// RunSubagents runs the subagent store's conformance suite against h.
func RunSubagents(t *testing.T, h SubagentHarness) {
	h.required(t, "SubagentHarness")
	runGroups(t, h, []group[SubagentHarness]{
		{"Records", testSubagentRecords},
		{"Listing", testSubagentListing},
		{"DeleteAndPrune", testSubagentDeletePrune},
		{"StatusMachine", testSubagentStatusMachine},
		{"StaleRunning", testSubagentStaleRunning},
		{"ConcurrentCompletions", testSubagentConcurrentCompletions},
	})
}

// senv is one fresh subagent store with its clock.
type senv struct {
	opened[sessiondb.SubagentService]
}

func newSenv(t *testing.T, h SubagentHarness) *senv {
	t.Helper()
	return &senv{openOnClock(t, "SubagentHarness.Open", h.Open)}
}

func (e *senv) ms() int64 { return e.clock.Now().UnixMilli() }

func (e *senv) ensure(channel, thread string) sessiondb.Subagent {
	e.t.Helper()
	a, _, err := e.s.EnsureSubagent(e.ctx, channel, thread, "/home/sprite/sessions")
	noErr(e.t, "EnsureSubagent", err)
	e.tick()
	return a
}

func testSubagentRecords(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	at := e.ms()
	a, created, err := e.s.EnsureSubagent(e.ctx, "C123", "1234.567", "/home/sprite/sessions")
	if err != nil || !created {
		t.Fatalf("EnsureSubagent = %+v, %v, %v", a, created, err)
	}
	want := sessiondb.NewSubagent("C123", "1234.567", "/home/sprite/sessions", e.clock.Now())
	if a != want || a.CreatedAt != at || a.Status != sessiondb.SubagentIdle {
		t.Errorf("new record = %+v, want %+v", a, want)
	}
	e.clock.Advance(time.Second)
	again, created, err := e.s.EnsureSubagent(e.ctx, "C123", "1234.567", "/elsewhere")
	if err != nil || created || again != a {
		t.Errorf("second EnsureSubagent = %+v, %v, %v; want the stored record", again, created, err)
	}
	byThread, err := e.s.GetSubagentByThread(e.ctx, "C123", "1234.567")
	if err != nil || byThread != a {
		t.Errorf("GetSubagentByThread = %+v, %v", byThread, err)
	}
	_, err = e.s.GetSubagent(e.ctx, "sa_missing")
	wantCode(t, "get missing", err, sessiondb.ENOTFOUND)
	_, err = e.s.GetSubagentByThread(e.ctx, "C123", "9")
	wantCode(t, "thread missing", err, sessiondb.ENOTFOUND)

	// Upsert replaces every column but created_at.
	u := a
	u.Status, u.RunningJobID, u.LastJobID, u.LastError, u.Turns = sessiondb.SubagentError, "", "job_1", "boom", 4
	u.SandboxName, u.CreatedAt, u.UpdatedAt = "jane-other", 1, e.ms()
	noErr(t, "upsert", e.s.UpsertSubagent(e.ctx, u))
	got, _ := e.s.GetSubagent(e.ctx, a.ID)
	u.CreatedAt = a.CreatedAt
	if got != u {
		t.Errorf("after upsert = %+v, want %+v (created_at kept)", got, u)
	}
	u.LastError = ""
	noErr(t, "upsert clearing the error", e.s.UpsertSubagent(e.ctx, u))
	if got, _ := e.s.GetSubagent(e.ctx, a.ID); got.LastError != "" {
		t.Errorf("an upsert without last_error kept %q", got.LastError)
	}
	// A record of another id for the same thread.
	other := u
	other.ID = "sa_0000000000000000"
	wantCode(t, "thread held by another id", e.s.UpsertSubagent(e.ctx, other), sessiondb.ECONFLICT)
	fresh := sessiondb.NewSubagent("C9", "1.0", "/s", e.clock.Now())
	noErr(t, "upsert inserts", e.s.UpsertSubagent(e.ctx, fresh))
	if got, err := e.s.GetSubagent(e.ctx, fresh.ID); err != nil || got != fresh {
		t.Errorf("inserted by upsert = %+v, %v", got, err)
	}
	bad := fresh
	bad.Status = "completed"
	wantCode(t, "an API status stored", e.s.UpsertSubagent(e.ctx, bad), sessiondb.EINVALID)
	bad = fresh
	bad.Key = "C9:2.0"
	wantCode(t, "a key that is not channel:thread", e.s.UpsertSubagent(e.ctx, bad), sessiondb.EINVALID)
}

func testSubagentListing(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	var made []sessiondb.Subagent
	for i := 0; i < 9; i++ {
		ch := "C1"
		if i%3 == 0 {
			ch = "C2"
		}
		made = append(made, e.ensure(ch, fmt.Sprintf("%d.0", i)))
	}
	// Two records updated in the same millisecond order by id.
	e.clock.Advance(time.Second)
	tie := e.ms()
	for _, a := range made[:2] {
		a.UpdatedAt = tie
		noErr(t, "upsert", e.s.UpsertSubagent(e.ctx, a))
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		p, err := e.s.ListSubagents(e.ctx, sessiondb.SubagentFilter{Limit: 2, Cursor: cursor})
		noErr(t, "page", err)
		seen = append(seen, pluck(p.Subagents, func(a sessiondb.Subagent) string { return a.ID })...)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	first, second := made[0].ID, made[1].ID
	if first < second {
		first, second = second, first
	}
	want := []string{first, second}
	for i := 8; i >= 2; i-- {
		want = append(want, made[i].ID)
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("paged = %v\nwant   %v (updated_at newest first, then id)", seen, want)
	}
	c2, err := e.s.ListSubagents(e.ctx, sessiondb.SubagentFilter{ChannelID: "C2"})
	if err != nil || len(c2.Subagents) != 3 {
		t.Errorf("C2 = %+v, %v", c2, err)
	}
	n, err := e.s.CountSubagents(e.ctx, sessiondb.SubagentFilter{ChannelID: "C1"})
	if err != nil || n != 6 {
		t.Errorf("count C1 = %d, %v", n, err)
	}
	window := sessiondb.SubagentFilter{UpdatedAfter: made[3].UpdatedAt, UpdatedBefore: made[7].UpdatedAt}
	if n, _ := e.s.CountSubagents(e.ctx, window); n != 3 {
		t.Errorf("count in (%d, %d) = %d, want 3", window.UpdatedAfter, window.UpdatedBefore, n)
	}
	_, err = e.s.DispatchJob(e.ctx, made[4].ID, "job_x", nil)
	noErr(t, "dispatch", err)
	running, _ := e.s.ListSubagents(e.ctx, sessiondb.SubagentFilter{Status: sessiondb.SubagentRunning})
	if len(running.Subagents) != 1 || running.Subagents[0].ID != made[4].ID {
		t.Errorf("running = %+v", running)
	}
	_, err = e.s.ListSubagents(e.ctx, sessiondb.SubagentFilter{Cursor: "%%%"})
	wantCode(t, "bad cursor", err, sessiondb.EINVALID)
	_, err = e.s.CountSubagents(e.ctx, sessiondb.SubagentFilter{Status: "aborted"})
	wantCode(t, "bad status", err, sessiondb.EINVALID)
}

func testSubagentDeletePrune(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	old := e.ensure("C", "1")
	oldErr := e.ensure("C", "2")
	oldRun := e.ensure("C", "3")
	_, err := e.s.DispatchJob(e.ctx, oldErr.ID, "job_e", nil)
	noErr(t, "dispatch", err)
	_, err = e.s.FailJob(e.ctx, oldErr.ID, "job_e", "boom")
	noErr(t, "fail", err)
	_, err = e.s.DispatchJob(e.ctx, oldRun.ID, "job_r", nil)
	noErr(t, "dispatch", err)
	e.clock.Advance(48 * time.Hour)
	recent := e.ensure("C", "4")

	n, err := e.s.PruneSubagents(e.ctx, 24*time.Hour, sessiondb.SubagentError)
	if err != nil || n != 1 {
		t.Errorf("prune errors = %d, %v", n, err)
	}
	n, err = e.s.PruneSubagents(e.ctx, 24*time.Hour, sessiondb.SubagentRunning, sessiondb.SubagentIdle)
	if err != nil || n != 1 {
		t.Errorf("prune idle and running = %d, %v; want only the idle one: running is never pruned", n, err)
	}
	if _, err := e.s.GetSubagent(e.ctx, oldRun.ID); err != nil {
		t.Errorf("the running record was pruned: %v", err)
	}
	if _, err := e.s.GetSubagent(e.ctx, old.ID); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("the old idle record survived: %v", err)
	}
	_, err = e.s.PruneSubagents(e.ctx, -time.Second)
	wantCode(t, "negative age", err, sessiondb.EINVALID)

	_, err = e.s.DeleteSubagent(e.ctx, oldRun.ID, false)
	wantCode(t, "delete running", err, sessiondb.ECONFLICT)
	deleted, err := e.s.DeleteSubagent(e.ctx, oldRun.ID, true)
	if err != nil || !deleted {
		t.Errorf("forced delete = %v, %v", deleted, err)
	}
	deleted, err = e.s.DeleteSubagent(e.ctx, recent.ID, false)
	if err != nil || !deleted {
		t.Errorf("delete = %v, %v", deleted, err)
	}
	deleted, err = e.s.DeleteSubagent(e.ctx, recent.ID, false)
	if err != nil || deleted {
		t.Errorf("delete again = %v, %v", deleted, err)
	}
}

// testSubagentStatusMachine walks spec B4's table, with updated_at = now
// at every transition and the refusals.
func testSubagentStatusMachine(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	a := e.ensure("C", "1")

	r, err := e.s.DispatchJob(e.ctx, a.ID, "job_1", nil)
	if err != nil || r.Status != sessiondb.SubagentRunning || r.RunningJobID != "job_1" || r.UpdatedAt != e.ms() || r.JobID() != "job_1" {
		t.Fatalf("dispatch = %+v, %v", r, err)
	}
	e.clock.Advance(time.Second)
	_, err = e.s.DispatchJob(e.ctx, a.ID, "job_2", nil)
	wantCode(t, "dispatch while running", err, sessiondb.ECONFLICT)
	if err != nil && !strings.Contains(err.Error(), sessiondb.JobAlreadyRunning) {
		t.Errorf("refusal %q lacks janebot's message", err)
	}
	_, err = e.s.DispatchJob(e.ctx, a.ID, "job_2", func(sessiondb.Subagent) bool { return true })
	wantCode(t, "dispatch while a live job runs", err, sessiondb.ECONFLICT)
	_, err = e.s.CompleteJob(e.ctx, a.ID, "job_other")
	wantCode(t, "complete another job", err, sessiondb.ECONFLICT)
	if cur, _ := e.s.GetSubagent(e.ctx, a.ID); cur != r {
		t.Errorf("a refused transition changed the row: %+v → %+v", r, cur)
	}

	r, err = e.s.CompleteJob(e.ctx, a.ID, "job_1")
	if err != nil || r.Status != sessiondb.SubagentIdle || r.RunningJobID != "" || r.LastJobID != "job_1" || r.Turns != 1 || r.UpdatedAt != e.ms() || r.JobID() != "job_1" {
		t.Fatalf("complete = %+v, %v", r, err)
	}
	_, err = e.s.CompleteJob(e.ctx, a.ID, "job_1")
	wantCode(t, "complete twice", err, sessiondb.ECONFLICT)
	e.clock.Advance(time.Second)

	_, err = e.s.DispatchJob(e.ctx, a.ID, "job_2", nil)
	noErr(t, "dispatch 2", err)
	e.clock.Advance(time.Second)
	r, err = e.s.FailJob(e.ctx, a.ID, "job_2", "tests failed")
	if err != nil || r.Status != sessiondb.SubagentError || r.LastError != "tests failed" || r.RunningJobID != "" || r.LastJobID != "job_1" || r.Turns != 1 || r.UpdatedAt != e.ms() {
		t.Fatalf("fail = %+v, %v; want error, the message, the last success kept", r, err)
	}
	e.clock.Advance(time.Second)
	// error blocks nothing.
	_, err = e.s.DispatchJob(e.ctx, a.ID, "job_3", nil)
	noErr(t, "dispatch after an error", err)
	e.clock.Advance(time.Second)
	r, err = e.s.AbortJob(e.ctx, a.ID, "job_3")
	if err != nil || r.Status != sessiondb.SubagentIdle || r.RunningJobID != "" || r.LastError != "tests failed" || r.UpdatedAt != e.ms() {
		t.Errorf("abort = %+v, %v", r, err)
	}
	_, err = e.s.AbortJob(e.ctx, a.ID, "job_3")
	wantCode(t, "abort an idle record", err, sessiondb.ECONFLICT)
	r, err = e.s.DispatchJob(e.ctx, a.ID, "job_4", nil)
	noErr(t, "dispatch 4", err)
	r, err = e.s.CompleteJob(e.ctx, a.ID, "job_4")
	if err != nil || r.LastError != "" || r.Turns != 2 {
		t.Errorf("success after an error = %+v, %v; want the error cleared and turns 2", r, err)
	}

	for name, err := range map[string]error{
		"dispatch":  second(e.s.DispatchJob(e.ctx, "sa_missing", "j", nil)),
		"complete":  second(e.s.CompleteJob(e.ctx, "sa_missing", "j")),
		"fail":      second(e.s.FailJob(e.ctx, "sa_missing", "j", "m")),
		"abort":     second(e.s.AbortJob(e.ctx, "sa_missing", "j")),
		"empty job": second(e.s.DispatchJob(e.ctx, a.ID, " ", nil)),
		"nil reconcile": func() error {
			_, err := e.s.ReconcileRunning(e.ctx, nil)
			return err
		}(),
	} {
		want := sessiondb.ENOTFOUND
		if name == "empty job" || name == "nil reconcile" {
			want = sessiondb.EINVALID
		}
		wantCode(t, name, err, want)
	}
}

func second[T any](_ T, err error) error { return err }

// testSubagentStaleRunning: a running record whose process is gone is
// reset before a dispatch and by ReconcileRunning; a live one is kept, and
// the stale job's late completion cannot overwrite the new job.
func testSubagentStaleRunning(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	a := e.ensure("C", "1")
	b := e.ensure("C", "2")
	c := e.ensure("C", "3")
	for _, x := range []struct{ id, job string }{{a.ID, "job_a"}, {b.ID, "job_b"}, {c.ID, "job_c"}} {
		_, err := e.s.DispatchJob(e.ctx, x.id, x.job, nil)
		noErr(t, "dispatch", err)
	}
	e.clock.Advance(time.Minute)
	var probed []string
	dead := func(s sessiondb.Subagent) bool {
		probed = append(probed, s.RunningJobID)
		return false
	}
	r, err := e.s.DispatchJob(e.ctx, a.ID, "job_a2", dead)
	if err != nil || r.RunningJobID != "job_a2" || len(probed) != 1 || probed[0] != "job_a" {
		t.Fatalf("dispatch over a dead job = %+v, %v (probed %v)", r, err, probed)
	}
	_, err = e.s.CompleteJob(e.ctx, a.ID, "job_a")
	wantCode(t, "the stale job completes late", err, sessiondb.ECONFLICT)
	_, err = e.s.FailJob(e.ctx, a.ID, "job_a", "killed")
	wantCode(t, "the stale job fails late", err, sessiondb.ECONFLICT)
	if cur, _ := e.s.GetSubagent(e.ctx, a.ID); cur.RunningJobID != "job_a2" || cur.Status != sessiondb.SubagentRunning {
		t.Errorf("the stale job overwrote the new one: %+v", cur)
	}

	reset, err := e.s.ReconcileRunning(e.ctx, func(s sessiondb.Subagent) bool { return s.ID == b.ID || s.ID == a.ID })
	if err != nil || len(reset) != 1 || reset[0] != c.ID {
		t.Errorf("ReconcileRunning = %v, %v; want only %s reset", reset, err, c.ID)
	}
	if cur, _ := e.s.GetSubagent(e.ctx, c.ID); cur.Status != sessiondb.SubagentIdle || cur.RunningJobID != "" || cur.UpdatedAt != e.ms() {
		t.Errorf("reconciled record = %+v", cur)
	}
	if cur, _ := e.s.GetSubagent(e.ctx, b.ID); cur.Status != sessiondb.SubagentRunning || cur.RunningJobID != "job_b" {
		t.Errorf("a live record was reset: %+v", cur)
	}
	if reset, _ := e.s.ReconcileRunning(e.ctx, func(sessiondb.Subagent) bool { return true }); len(reset) != 0 {
		t.Errorf("nothing dead, yet reset %v", reset)
	}
}

// testSubagentConcurrentCompletions: many completions of stale and current
// jobs race on two handles; only the running job's completion lands, once,
// and every other gets conflict.
func testSubagentConcurrentCompletions(t *testing.T, h SubagentHarness) {
	e := newSenv(t, h)
	other := h.reopen(t, e.s, e.clock.Now)
	handles := []sessiondb.SubagentService{e.s, other}
	for round := 0; round < 5; round++ {
		a := e.ensure("C", fmt.Sprintf("%d", round))
		current := fmt.Sprintf("job_r%d", round)
		_, err := e.s.DispatchJob(e.ctx, a.ID, current, nil)
		noErr(t, "dispatch", err)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		start := make(chan struct{})
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				job := fmt.Sprintf("job_stale%d", g)
				if g%4 == 0 {
					job = current
				}
				<-start
				var err error
				if g%2 == 0 {
					_, err = handles[g%2].CompleteJob(e.ctx, a.ID, job)
				} else {
					_, err = handles[g%2].FailJob(e.ctx, a.ID, job, "late")
				}
				mu.Lock()
				defer mu.Unlock()
				switch sessiondb.ErrorCode(err) {
				case "":
					wins++
				case sessiondb.ECONFLICT:
					conflicts++
				default:
					t.Errorf("completion: %v", err)
				}
			}(g)
		}
		close(start)
		wg.Wait()
		got, _ := e.s.GetSubagent(e.ctx, a.ID)
		if wins != 1 || conflicts != 15 || got.Status != sessiondb.SubagentIdle || got.LastJobID != current || got.Turns != 1 {
			t.Errorf("round %d: %d wins, %d conflicts, row %+v; want one completion of %s", round, wins, conflicts, got, current)
		}
	}
}
