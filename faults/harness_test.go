package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// binary is the sessiondb executable TestMain built for this run, with the
// SQLite driver of the test binary itself.
var binary string

// TestMain builds cmd/sessiondb once for every test of the package. Run as
// a child (see child), the test binary plays that role instead and exits
// before building anything.
func TestMain(m *testing.M) {
	testkit.ServeChild(childRoles)
	dir, err := os.MkdirTemp("", "sessiondb-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	// Other users run the binary too (see env.as).
	if err := os.Chmod(dir, 0o755); err != nil {
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
	pgtest.Stop()
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
	// cred and dir, when set (see as), run commands as another user in a
	// folder that user can enter.
	cred *syscall.SysProcAttr
	dir  string
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
	if e.cred != nil {
		cmd.SysProcAttr = e.cred
		cmd.Dir = e.dir
	}
	return cmd
}

// run runs args to completion with stdin as input ("" for none) and
// returns what it did. A run still going at the guard is killed and fails
// the test as a hang.
func (e env) run(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	_, wait := e.launch(t, strings.NewReader(stdin), args...)
	return wait()
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
	return e.launch(t, nil, args...)
}

// launch is start with stdin as input (nil for none).
func (e env) launch(t testing.TB, stdin io.Reader, args ...string) (cmd *exec.Cmd, wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	cmd = e.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
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
		return ended(t, "sessiondb "+strings.Join(args, " "), ctx.Err() != nil, err, &out, &errOut)
	}
}

// ended is what a command named name did, given the error its Wait
// returned; it fails t when the guard ended it (hung) or it did not run.
func ended(t testing.TB, name string, hung bool, err error, out, errOut *bytes.Buffer) result {
	t.Helper()
	r := result{Stdout: out.String(), Stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case hung:
		t.Fatalf("%s: still running after %v (a hang)", name, guard)
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return r
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

// as returns e with its command lines run as user uid:gid (this process
// must be root) in folder dir, which that user can enter.
func (e env) as(uid, gid uint32, dir string) env {
	e.cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	e.dir = dir
	return e
}

// nobody is the user and group the suite runs a second user's commands as.
const nobody = 65534

// sharedFolder returns a fresh folder every user may enter and write (mode
// 1777, like /tmp), removed when t ends: where one user's store can meet
// another user's reader.
func sharedFolder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sessiondb-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readOnlyFolder returns a fresh folder for the caller to fill, and seal,
// which makes it read-only the strongest way this process can: a small
// tmpfs remounted read-only (root), else the immutable attribute (root,
// where mount is refused), else mode 0555 (which binds a user other than
// root). It says which in the test log; cleanup undoes it.
func readOnlyFolder(t *testing.T) (dir string, seal func()) {
	t.Helper()
	dir = t.TempDir()
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", dir).CombinedOutput(); err == nil {
			t.Cleanup(func() { exec.Command("umount", dir).Run() })
			return dir, func() {
				t.Helper()
				if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
					t.Fatalf("remount read-only: %v: %s", err, out)
				}
				t.Logf("%s: a tmpfs remounted read-only", dir)
			}
		} else {
			t.Logf("mount refused (%v: %s); falling back", err, bytes.TrimSpace(out))
		}
		return dir, func() {
			t.Helper()
			if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
				t.Fatalf("neither mount nor chattr +i works here: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
			t.Logf("%s: immutable attribute set", dir)
		}
	}
	return dir, func() {
		t.Helper()
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		t.Logf("%s: mode 0555", dir)
	}
}

// snapshot is what a folder holds: each entry's bytes and mode.
type snapshot map[string]string

// takeSnapshot reads every entry of dir (not recursively).
func takeSnapshot(t *testing.T, dir string) snapshot {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{}
	for _, de := range des {
		p := filepath.Join(dir, de.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o400 != 0 {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			v += fmt.Sprintf(" %d bytes %x", len(b), sha256.Sum256(b))
		}
		s[de.Name()] = v
	}
	return s
}

// differences lists what changed from s to now.
func (s snapshot) differences(now snapshot) []string {
	var out []string
	for name, v := range s {
		if w, ok := now[name]; !ok {
			out = append(out, name+" removed")
		} else if w != v {
			out = append(out, fmt.Sprintf("%s changed: %s -> %s", name, v, w))
		}
	}
	for name := range now {
		if _, ok := s[name]; !ok {
			out = append(out, name+" created")
		}
	}
	sort.Strings(out)
	return out
}

// childRoles are what a child copy of this test binary can do, by name
// (testkit.ServeChild, called first thing in TestMain).
var childRoles = map[string]func(args []string) error{}

// child returns a command running this test binary as role with args.
// TestMain serves it, so the child never reaches a test: "TestMain" only
// names the server.
func child(role string, args ...string) *exec.Cmd {
	return testkit.ChildCommand("TestMain", role, args...)
}

// runCmd runs cmd (made by command, perhaps wrapped) to completion with its
// output collected, failing t as a hang at the guard.
func (e env) runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	var err error
	hung := false
	select {
	case err = <-done:
	case <-timer.C:
		cmd.Process.Kill()
		err, hung = <-done, true
	}
	return ended(t, strings.Join(cmd.Args, " "), hung, err, &out, &errOut)
}
