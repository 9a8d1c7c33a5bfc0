//go:build unix

package sqlitedb

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// mayCreateBeside reports whether a SQLite connection of this process may
// create the -wal and -shm files of the database fi describes at path
// without doing harm: the folder is writable and the files would belong to
// the database's owner (this process is the owner, or root, whose new files
// SQLite hands over to the database's owner). Files made by another user
// would keep the owner's own writers out.
func mayCreateBeside(path string, fi fs.FileInfo) bool {
	if syscall.Access(filepath.Dir(path), 2 /* W_OK */) != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	euid := os.Geteuid()
	return euid == 0 || uint32(euid) == st.Uid
}

// DescribeAccess says why this process cannot read (or, with write, write)
// the database at path, for the error of an open SQLite refused with
// "unable to open database file"; "" when nothing visible stands in the
// way. Writing needs the file and, for SQLite's -wal, -shm and -journal,
// its folder.
func DescribeAccess(path string, write bool) string {
	const rOK, wOK = 4, 2
	if err := syscall.Access(path, rOK); err != nil {
		return fmt.Sprintf("%s cannot be read by this user (%v)", path, err)
	}
	if !write {
		return ""
	}
	if err := syscall.Access(path, wOK); err != nil {
		return fmt.Sprintf("%s cannot be written here (%v); commands that only read still work, as they open it read-only", path, err)
	}
	if dir := filepath.Dir(path); syscall.Access(dir, wOK) != nil {
		err := syscall.Access(dir, wOK)
		return fmt.Sprintf("%s cannot be written here: its folder %s is not writable (%v), and SQLite keeps its journal files beside the store; commands that only read still work, as they open it read-only", path, dir, err)
	}
	return ""
}
