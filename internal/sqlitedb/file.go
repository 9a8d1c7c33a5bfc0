package sqlitedb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// sqliteMagic is how every SQLite database file begins.
const sqliteMagic = "SQLite format 3\x00"

// DescribeNonDatabase says what path is, for the error of a file SQLite
// refused as a database ("it starts with ..."), or "" if it does look like
// a database after all. Call it only after SQLite has refused the file: it
// reads the file through a descriptor of its own, and closing a descriptor
// drops every POSIX lock this process holds on the file, which would break
// a SQLite connection holding one (none can, on a file that is not a
// database).
func DescribeNonDatabase(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return fmt.Sprintf("%s is a directory, not a SQLite database", path)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("%s is not a regular file (%v), not a SQLite database", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if string(head) == sqliteMagic {
		return ""
	}
	if n == 0 {
		return fmt.Sprintf("%s is empty (0 bytes), not a SQLite database", path)
	}
	more := ""
	if fi.Size() > int64(n) {
		more = "..."
	}
	return fmt.Sprintf("%s is not a SQLite database (it starts with %s%s)", path, strconv.QuoteToASCII(string(head)), more)
}

// Tighten removes from the regular file at path every permission bit that
// mode does not grant (it never adds one), and reports whether it changed
// anything. It acts on the file the path names, never through a symbolic
// link: a link is left alone and reported as an error. Call it only on a
// file SQLite has opened and read as a database, so that a wrong path can
// never cost an unrelated file its mode. It opens no descriptor that could
// drop the POSIX locks of a SQLite connection to the file (see chmodNoFollow).
func Tighten(path string, mode fs.FileMode) (bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return false, fmt.Errorf("%s is a symbolic link: the mode of the file it points to is left as it is", path)
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file", path)
	}
	perm := fi.Mode().Perm()
	if perm&^mode == 0 {
		return false, nil
	}
	if err := chmodNoFollow(path, fi, perm&mode); err != nil {
		return false, fmt.Errorf("could not tighten %s from %v to %v: %w", path, perm, perm&mode, err)
	}
	return true, nil
}

// errReplaced is the error of a path that changed between two looks.
var errReplaced = errors.New("the path was replaced while it was being tightened")

// MayWrite reports whether a writable SQLite connection of this process may
// open the existing database at path without leaving files that would harm
// its owner: the -wal and -shm files it may create belong to the owner
// (this process is the owner, or root), and the folder is writable.
func MayWrite(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && mayCreateBeside(path, fi)
}
