//go:build unix

package hostd

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The socket is never reachable by others on its way to being served: when
// it is bound it sits alone in a 0700 folder and nothing is at its path
// yet; it appears at its path already 0600, the private folder is gone,
// it serves there, and closing removes it. The umask is opened wide for
// the test, as a careless parent process might leave it.
func TestListenSocketNeverOpenToOthers(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	sock := filepath.Join(dir, DefaultSocketName)
	var checked bool
	l, err := listenUnixVia(sock, func(first string) {
		checked = true
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("something is at %s before the socket was made private: %v", sock, err)
		}
		fi, err := os.Stat(filepath.Dir(first))
		if err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(filepath.Dir(first)) != dir {
			t.Errorf("bound in %s (mode %v, %v): want a 0700 folder beside the socket's path", filepath.Dir(first), fi.Mode().Perm(), err)
		}
	})
	must(t, err)
	if !checked {
		t.Fatal("the bind was not observed")
	}
	fi, err := os.Lstat(sock)
	must(t, err)
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, want a 0600 socket", sock, fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left beside the socket: %v", entries)
	}
	if l.Addr().String() != sock {
		t.Fatalf("Addr = %s, want %s", l.Addr(), sock)
	}
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", sock)
	must(t, err)
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "hi" {
		t.Fatalf("served %q through %s", b, sock)
	}
	must(t, l.Close())
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket stayed after Close: %v", err)
	}
}
