package sqlitedb

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// oPath is Linux's O_PATH (the same on every architecture Go supports): a
// descriptor that names a file without opening it for reading or writing.
// Closing one, unlike closing a real descriptor, releases none of the
// process's POSIX locks on the file.
const oPath = 0x200000

// chmodNoFollow sets the mode of the file path names, which must still be
// the file fi describes and not a symbolic link: it holds the file by an
// O_PATH|O_NOFOLLOW descriptor, checks it, and changes the mode through
// /proc/self/fd, so neither a link swapped in meanwhile nor a closed
// descriptor can do harm.
func chmodNoFollow(path string, fi fs.FileInfo, mode fs.FileMode) error {
	fd, err := syscall.Open(path, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	proc := fmt.Sprintf("/proc/self/fd/%d", fd)
	held, err := os.Stat(proc) // the /proc entry links to the file: Stat reads the file
	if err != nil {
		return err
	}
	if !held.Mode().IsRegular() || !os.SameFile(held, fi) {
		return errReplaced
	}
	return os.Chmod(proc, mode)
}
