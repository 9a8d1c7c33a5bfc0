package testkit

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// Terminal opens a pseudo-terminal for a test of what a command does on a
// person's terminal: tty is the terminal end, to give a command (run in
// process, or the built binary) as its stdin; what is written to keyboard
// arrives on tty as typed input. Both are closed when the test ends.
func Terminal(t testing.TB) (tty, keyboard *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("number the pseudo-terminal: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal's terminal end: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, master
}
