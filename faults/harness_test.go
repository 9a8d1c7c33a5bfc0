package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// binary is the sessiondb executable TestMain built for this run, with the
// SQLite driver of the test binary itself.
var binary string

// TestMain builds cmd/sessiondb once for every test of the package.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sessiondb-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	binary, err = build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults: building sessiondb:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles ../cmd/sessiondb into dir with the driver this test binary
// links, so both drivers are attacked when the suite runs under both.
func build(dir string) (string, error) {
	out := filepath.Join(dir, "sessiondb")
	args := []string{"build", "-o", out}
	if sqlitedb.DriverName == "mattn" {
		args = append(args, "-tags", "sqlite_fts5")
	}
	args = append(args, "../cmd/sessiondb")
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, stderr.String())
	}
	return out, nil
}

// guard bounds every command line a test runs: none of them should take
// more than a few seconds, so reaching it means a hang, which is itself a
// failure the test reports (never a timing assertion).
const guard = 2 * time.Minute

// result is what one run of the binary did.
type result struct {
	Code           int
	Stdout, Stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.Code, clip(r.Stdout), clip(r.Stderr))
}

// clip shortens long output for failure messages.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// env is the environment of one test's command lines: its own
// SESSIONDB_HOME and HOME, so no test touches the user's files.
type env struct {
	Home string // SESSIONDB_HOME and HOME
}

// newEnv returns an environment rooted in a fresh temporary folder.
func newEnv(t *testing.T) env {
	t.Helper()
	return env{Home: t.TempDir()}
}

// environ is os.Environ with the home variables replaced.
func (e env) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SESSIONDB_HOME=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "SESSIONDB_HOME="+e.Home, "HOME="+e.Home)
}

// command returns the binary ready to run args in e, bounded by ctx.
func (e env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = e.environ()
	cmd.Dir = e.Home
	return cmd
}

// run runs args to completion with stdin as input ("" for none) and
// returns what it did. A run still going at the guard is killed and fails
// the test as a hang.
func (e env) run(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := e.command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{Stdout: out.String(), Stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("sessiondb %s: still running after %v (a hang)", strings.Join(args, " "), guard)
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("sessiondb %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// must runs args and fails t unless they exit 0.
func (e env) must(t testing.TB, args ...string) result {
	t.Helper()
	r := e.run(t, "", args...)
	if r.Code != 0 {
		t.Fatalf("sessiondb %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// importLines writes lines as a JSONL file and imports it into db.
func (e env) importLines(t testing.TB, db string, lines ...string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "--db", db, "import", f)
}

// start starts args in e in the background, its output collected; wait
// returns what it did once it exits, failing t if it is still running at
// the guard.
func (e env) start(t testing.TB, args ...string) (cmd *exec.Cmd, wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	cmd = e.command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return cmd, func() result {
		t.Helper()
		defer cancel()
		err := cmd.Wait()
		r := result{Stdout: out.String(), Stderr: errOut.String()}
		var exit *exec.ExitError
		switch {
		case ctx.Err() != nil:
			t.Fatalf("sessiondb %s: still running after %v (a hang)", strings.Join(args, " "), guard)
		case errors.As(err, &exit):
			r.Code = exit.ExitCode()
		case err != nil:
			t.Fatalf("sessiondb %s: %v", strings.Join(args, " "), err)
		}
		return r
	}
}

// cpuTicks is the CPU time (user and system, in clock ticks of 1/100 s) the
// process pid has used, from /proc; ok is false once it has exited.
func cpuTicks(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing one. utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 || f[0] == "Z" {
		return 0, false
	}
	var u, sys int
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &sys)
	return u + sys, true
}

// waitBusy returns once process pid has used ticks of CPU time (it is then
// deep in its work, past opening files), or has exited; it reports which.
func waitBusy(t testing.TB, pid, ticks int) bool {
	t.Helper()
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		n, ok := cpuTicks(pid)
		if !ok {
			return false
		}
		if n >= ticks {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not use %d ticks of CPU within %v", pid, ticks, guard)
	return false
}
