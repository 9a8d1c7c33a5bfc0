package hostd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

// One daemon per data root: a second daemon's Run on the same root is
// refused at once (conflict, naming the root and this process's pid)
// while the first runs, and runs once the first has stopped. A daemon on
// another root is not held back.
func TestDaemonHoldsItsDataRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "v2-sessions")
	_, stop, done := startDaemon(t, root, nil, &testkit.Buffer{})
	lockPath := filepath.Join(root, sessiondb.HostLockFile)
	testkit.WaitFor(t, "the first daemon's lock", func() bool {
		b, err := os.ReadFile(lockPath)
		return err == nil && strings.TrimSpace(string(b)) == fmt.Sprint(os.Getpid())
	})
	if fi, err := os.Lstat(lockPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v, %v; want mode 0600", fi, err)
	}

	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	must(t, err)
	second, err := New(h, Config{Poll: 20 * time.Millisecond})
	must(t, err)
	// The guard ends a daemon that was not refused: a failure, not a hang.
	guarded, cancelGuard := context.WithTimeout(ctxb, 10*time.Second)
	err = second.Run(guarded)
	cancelGuard()
	wantCode(t, err, sessiondb.ECONFLICT)
	for _, want := range []string{root, fmt.Sprintf("pid %d", os.Getpid()), "one host per data root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	_, err = LockRoot(root)
	wantCode(t, err, sessiondb.ECONFLICT)

	// Another root is another daemon's.
	_, stopOther, doneOther := startDaemon(t, filepath.Join(t.TempDir(), "other"), nil, &testkit.Buffer{})
	stopOther()
	must(t, <-doneOther)

	stop()
	must(t, <-done)
	l, err := LockRoot(root)
	must(t, err)
	l.Close()
	third, err := New(h, Config{Poll: 20 * time.Millisecond})
	must(t, err)
	ctx, cancel := context.WithCancel(ctxb)
	ran := make(chan error, 1)
	go func() { ran <- third.Run(ctx) }()
	// Its status file says it runs (the second one removed its own when it
	// stopped); probing with LockRoot instead could take the lock before
	// the daemon does, and refuse it.
	testkit.WaitFor(t, "the third daemon running", func() bool {
		select {
		case err := <-ran:
			t.Fatalf("the third daemon stopped: %v", err)
		default:
		}
		_, found, _ := ReadStatus(root)
		return found
	})
	_, err = LockRoot(root)
	wantCode(t, err, sessiondb.ECONFLICT)
	cancel()
	must(t, <-ran)
}

// A lock the caller took is used as it is, and must be the root's; a
// registry file's lock is another lock.
func TestDaemonTakesTheCallersRootLock(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	l, err := LockRoot(root)
	must(t, err)
	defer l.Close()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: root}})
	must(t, err)
	d, err := New(h, Config{Poll: 20 * time.Millisecond, RootLock: l})
	must(t, err)
	ctx, cancel := context.WithCancel(ctxb)
	cancel() // Run checks the lock before it looks at ctx
	must(t, d.Run(ctx))
	// Run left the caller's lock held.
	_, err = LockRoot(root)
	wantCode(t, err, sessiondb.ECONFLICT)

	other, err := LockRegistryFile(filepath.Join(dir, "v2.db"))
	must(t, err)
	defer other.Close()
	d2, err := New(h, Config{Poll: 20 * time.Millisecond, RootLock: other})
	must(t, err)
	err = d2.Run(ctxb)
	wantCode(t, err, sessiondb.EINVALID)
	if !strings.Contains(err.Error(), "RootLock") {
		t.Errorf("refusal %q does not name RootLock", err)
	}
	_, err = LockRegistryFile(filepath.Join(dir, "v2.db"))
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT || !strings.Contains(err.Error(), "v2.db") {
		t.Errorf("second registry lock: %v, want conflict naming v2.db", err)
	}
}
