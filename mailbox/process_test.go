package mailbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The multi-process tests re-run this test binary with MAILBOX_CHILD_ROLE
// set; TestMailboxChild then plays that role and exits. Without the
// variable it does nothing.
const childRoleEnv = "MAILBOX_CHILD_ROLE"

type childReport struct {
	Received []string `json:"received"` // ids in arrival order
	Seqs     []int64  `json:"seqs"`     // seqs of rows this process wrote
	Errors   []string `json:"errors"`
}

func TestMailboxChild(t *testing.T) {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	env := func(k string) string { return os.Getenv("MAILBOX_CHILD_" + k) }
	n, _ := strconv.Atoi(env("N"))
	dir, out := env("DIR"), env("OUT")
	ref := SessionRef{AgentGroupID: filepath.Base(filepath.Dir(dir)), SessionID: filepath.Base(dir)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rep childReport
	var err error
	switch role {
	case "host-exchange":
		rep, err = childHostExchange(ctx, filepath.Dir(filepath.Dir(dir)), ref, n)
	case "agent-exchange":
		rep, err = childAgentExchange(ctx, dir, n)
	case "agent-writer":
		rep, err = childAgentWriter(ctx, dir, env("PREFIX"), n)
	case "agent-crash":
		err = childAgentCrash(ctx, dir, n, out+".ready")
	case "host-crash":
		err = childHostCrash(ctx, filepath.Dir(filepath.Dir(dir)), ref, out)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
	b, _ := json.Marshal(rep)
	if werr := os.WriteFile(out, b, 0o600); werr != nil {
		t.Fatal(werr)
	}
	os.Exit(0)
}

func childHostExchange(ctx context.Context, root string, ref SessionRef, n int) (childReport, error) {
	var rep childReport
	h, err := NewHost(HostOptions{Layout: Layout{Root: root}})
	if err != nil {
		return rep, err
	}
	dir, _ := h.layout.SessionDir(ref)
	w, err := NewWatcher(dir, []string{OutboundFile}, WatchOptions{Interval: 50 * time.Millisecond})
	if err != nil {
		return rep, err
	}
	defer w.Close()
	seen := map[string]bool{}
	d := DelivererFunc(func(_ context.Context, _ SessionRef, row OutboundRow) (string, error) {
		if seen[row.ID] {
			rep.Errors = append(rep.Errors, "delivered twice: "+row.ID)
		}
		seen[row.ID] = true
		rep.Received = append(rep.Received, row.ID)
		return "P-" + row.ID, nil
	})
	sent := 0
	for sent < n || len(rep.Received) < n {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if sent < n {
			seq, _, err := h.Enqueue(ctx, ref, chat(fmt.Sprintf("h-%04d", sent), "x"))
			if err != nil {
				return rep, err
			}
			rep.Seqs = append(rep.Seqs, seq)
			sent++
		}
		if _, err := h.Drain(ctx, ref, d); err != nil && sessiondb.ErrorCode(err) != sessiondb.EBUSY {
			return rep, err
		}
		if sent >= n && len(rep.Received) < n {
			w.Wait(ctx, 50*time.Millisecond)
		}
	}
	return rep, nil
}

func childAgentExchange(ctx context.Context, dir string, n int) (childReport, error) {
	var rep childReport
	a, err := OpenAgent(ctx, dir, AgentOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		return rep, err
	}
	defer a.Close()
	seen := map[string]bool{}
	sent := 0
	first := true
	for sent < n || len(rep.Received) < n {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		batch, err := a.Poll(ctx, PollOptions{FirstPoll: first, Limit: 100000})
		first = false
		if err != nil && sessiondb.ErrorCode(err) != sessiondb.EBUSY {
			return rep, err
		}
		var got []string
		for _, r := range batch {
			if seen[r.ID] {
				rep.Errors = append(rep.Errors, "polled twice: "+r.ID)
			}
			seen[r.ID] = true
			got = append(got, r.ID)
		}
		if len(got) > 0 {
			if err := a.MarkCompleted(ctx, got...); err != nil {
				return rep, err
			}
			rep.Received = append(rep.Received, got...)
		}
		if sent < n {
			seq, err := a.Send(ctx, OutboundMessage{ID: fmt.Sprintf("a-%04d", sent), Content: json.RawMessage(`{"text":"y"}`),
				Routing: Routing{ChannelType: "slack", PlatformID: "C1"}})
			if err != nil {
				return rep, err
			}
			rep.Seqs = append(rep.Seqs, seq)
			sent++
		} else if len(batch) == 0 {
			if err := a.WaitInbound(ctx); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

func childAgentWriter(ctx context.Context, dir, prefix string, n int) (childReport, error) {
	var rep childReport
	a, err := OpenAgent(ctx, dir, AgentOptions{})
	if err != nil {
		return rep, err
	}
	defer a.Close()
	for i := 0; i < n; i++ {
		seq, err := a.Send(ctx, OutboundMessage{ID: fmt.Sprintf("%s-%04d", prefix, i), Content: json.RawMessage(`{"text":"z"}`)})
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
			continue
		}
		rep.Seqs = append(rep.Seqs, seq)
	}
	return rep, nil
}

// childAgentCrash commits n messages, then holds a big write transaction
// open (its cache spilling into the file) and signals readiness; the
// parent SIGKILLs it.
func childAgentCrash(ctx context.Context, dir string, n int, ready string) error {
	a, err := OpenAgent(ctx, dir, AgentOptions{})
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := a.Send(ctx, OutboundMessage{ID: fmt.Sprintf("c-%04d", i), Content: json.RawMessage(`{"text":"committed"}`)}); err != nil {
			return err
		}
	}
	a.Close()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: filepath.Join(dir, OutboundFile), MaxConns: 1,
		Pragmas: []string{"PRAGMA journal_mode=DELETE", "PRAGMA cache_size=8"}})
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	big := strings.Repeat("x", 4000)
	for i := 0; i < 3000; i++ {
		if _, err := conn.ExecContext(ctx, `INSERT INTO messages_out (id, seq, timestamp, kind, content) VALUES (?, ?, '2026-01-01 00:00:00', 'chat', ?)`,
			fmt.Sprintf("u-%05d", i), 100001+2*i, `{"text":"`+big+`"}`); err != nil {
			return err
		}
		// Rewrite early pages too, so the file itself holds uncommitted
		// changes the journal must undo.
		if i%100 == 0 {
			if _, err := conn.ExecContext(ctx, "UPDATE messages_out SET content = ? WHERE id LIKE 'c-%'", `{"text":"UNCOMMITTED"}`); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(ready, []byte("ok"), 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// childHostCrash enqueues forever, appending each id whose Enqueue returned
// to out+".acked" (synced) before the next.
func childHostCrash(ctx context.Context, root string, ref SessionRef, out string) error {
	h, err := NewHost(HostOptions{Layout: Layout{Root: root}})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out+".acked", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	big := strings.Repeat("y", 2000)
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("k-%06d", i)
		if _, _, err := h.Enqueue(ctx, ref, chat(id, big)); err != nil {
			return err
		}
		fmt.Fprintln(f, id)
		f.Sync()
	}
	return nil
}

type child struct {
	cmd *exec.Cmd
	out string
}

func startChild(t *testing.T, role, dir string, n int, extra ...string) *child {
	t.Helper()
	out := filepath.Join(t.TempDir(), role+".json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMailboxChild$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, "MAILBOX_CHILD_DIR="+dir, "MAILBOX_CHILD_OUT="+out,
		"MAILBOX_CHILD_N="+strconv.Itoa(n))
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return &child{cmd: cmd, out: out}
}

func (c *child) wait(t *testing.T) childReport {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	b, err := os.ReadFile(c.out)
	if err != nil {
		t.Fatal(err)
	}
	var rep childReport
	must(t, json.Unmarshal(b, &rep))
	for _, e := range rep.Errors {
		t.Errorf("child error: %s", e)
	}
	return rep
}

func waitForFile(t *testing.T, path string, c *child) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if c.cmd.ProcessState != nil {
			t.Fatal("child exited early")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func TestTwoProcessExchange(t *testing.T) {
	const n = 1000
	f := newFixture(t)
	host := startChild(t, "host-exchange", f.dir, n)
	agent := startChild(t, "agent-exchange", f.dir, n)
	hr, ar := host.wait(t), agent.wait(t)
	check := func(who string, got []string, prefix string) {
		if len(got) != n {
			t.Fatalf("%s received %d messages, want %d", who, len(got), n)
		}
		for i, id := range got {
			if want := fmt.Sprintf("%s-%04d", prefix, i); id != want {
				t.Fatalf("%s: message %d is %s, want %s (order or duplicate)", who, i, id, want)
			}
		}
	}
	check("host", hr.Received, "a")
	check("agent", ar.Received, "h")
	seen := map[int64]bool{}
	for _, s := range hr.Seqs {
		if s%2 != 0 || seen[s] {
			t.Fatalf("host seq %d odd or repeated", s)
		}
		seen[s] = true
	}
	for _, s := range ar.Seqs {
		if s%2 != 1 || seen[s] {
			t.Fatalf("agent seq %d even or repeated", s)
		}
		seen[s] = true
	}
	// The agent's last acks may land after the host's last sync.
	if _, err := f.host.SyncAcks(ctxb, f.ref); err != nil {
		t.Fatal(err)
	}
	if got := f.one(InboundFile, "SELECT count(*) FROM messages_in WHERE status = 'completed'"); got != int64(n) {
		t.Errorf("completed inbound rows %v, want %d", got, n)
	}
}

func TestTwoAgentWritersOneFile(t *testing.T) {
	const n = 300
	f := newFixture(t)
	f.openAgent() // create outbound first so both children migrate nothing
	w1 := startChild(t, "agent-writer", f.dir, n, "MAILBOX_CHILD_PREFIX=p1")
	w2 := startChild(t, "agent-writer", f.dir, n, "MAILBOX_CHILD_PREFIX=p2")
	r1, r2 := w1.wait(t), w2.wait(t)
	if len(r1.Seqs) != n || len(r2.Seqs) != n {
		t.Fatalf("sends succeeded %d + %d, want %d each", len(r1.Seqs), len(r2.Seqs), n)
	}
	seen := map[int64]bool{}
	for _, s := range append(r1.Seqs, r2.Seqs...) {
		if s%2 != 1 || seen[s] {
			t.Fatalf("seq %d even or duplicated", s)
		}
		seen[s] = true
	}
	if got := f.one(OutboundFile, "SELECT count(DISTINCT seq) FROM messages_out"); got != int64(2*n) {
		t.Errorf("distinct seqs in file %v", got)
	}
}

func TestAgentKilledMidWriteLeavesRecoverableJournal(t *testing.T) {
	const committed = 50
	f := newFixture(t)
	c := startChild(t, "agent-crash", f.dir, committed)
	waitForFile(t, c.out+".ready", c)
	must(t, c.cmd.Process.Signal(syscall.SIGKILL))
	c.cmd.Wait()
	journal := filepath.Join(f.dir, OutboundFile+"-journal")
	if fi, err := os.Stat(journal); err != nil || fi.Size() == 0 {
		t.Fatalf("no hot journal after the kill: %v", err)
	}
	// A read-only reader cannot roll the journal back.
	_, err := f.host.OutboundRows(ctxb, f.ref, 0)
	if err == nil {
		t.Fatal("read-only read succeeded over a hot journal")
	}
	t.Logf("read-only read over hot journal: %v", err)
	recovered, err := f.host.RecoverHotJournal(ctxb, f.ref)
	if err != nil || !recovered {
		t.Fatalf("RecoverHotJournal = %v, %v", recovered, err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("journal still there: %v", err)
	}
	rows, err := f.host.OutboundRows(ctxb, f.ref, 0)
	must(t, err)
	if len(rows) != committed {
		t.Fatalf("rows after recovery %d, want %d", len(rows), committed)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.ID, "c-") || string(r.Content) != `{"text":"committed"}` {
			t.Fatalf("row after recovery %s %s", r.ID, r.Content)
		}
	}
	if ok := f.one(OutboundFile, "PRAGMA integrity_check"); ok != "ok" {
		t.Errorf("integrity_check: %v", ok)
	}
	if again, _ := f.host.RecoverHotJournal(ctxb, f.ref); again {
		t.Error("second recovery found a journal")
	}
}

func TestHostKilledMidEnqueue(t *testing.T) {
	f := newFixture(t)
	c := startChild(t, "host-crash", f.dir, 0)
	acked := c.out + ".acked"
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(acked); strings.Count(string(b), "\n") >= 200 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, c.cmd.Process.Signal(syscall.SIGKILL))
	c.cmd.Wait()
	b, err := os.ReadFile(acked)
	must(t, err)
	var want []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if len(want) < 200 {
		t.Fatalf("child acknowledged only %d enqueues", len(want))
	}
	h2, _ := NewHost(HostOptions{Layout: f.host.layout, Now: f.clk.Now})
	must(t, h2.RecoverInbound(ctxb, f.ref))
	have := map[string]bool{}
	for _, r := range f.query(InboundFile, "SELECT id FROM messages_in") {
		have[r[0].(string)] = true
	}
	for _, id := range want {
		if !have[id] {
			t.Fatalf("enqueue %s returned but the row is gone", id)
		}
	}
	if ok := f.one(InboundFile, "PRAGMA integrity_check"); ok != "ok" {
		t.Errorf("integrity_check: %v", ok)
	}
	if _, _, err := h2.Enqueue(ctxb, f.ref, chat("after", "x")); err != nil {
		t.Fatalf("enqueue after crash: %v", err)
	}
}
