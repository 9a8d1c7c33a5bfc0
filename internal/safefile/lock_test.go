//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A lock is exclusive between open files, in this process too; the second
// taker learns the holder's pid; closing releases it; a link or a FIFO at
// the name is refused without touching what it points to.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	f, err := Lock("the lock", path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file %v, %v; want 0600", fi, err)
	}
	_, err = Lock("the lock", path)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != path {
		t.Fatalf("second Lock: %#v, want LockedError with pid %d", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("error %q does not name the pid", err)
	}
	f.Close()
	g, err := Lock("the lock", path)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	g.Close()

	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock("the lock", link); err == nil || errors.As(err, &le) {
		t.Fatalf("Lock through a link: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the link's target became %q", b)
	}
	fifo := filepath.Join(dir, "fifo.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock("the lock", fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Lock on a FIFO: %v, want not a regular file", err)
	}
}
