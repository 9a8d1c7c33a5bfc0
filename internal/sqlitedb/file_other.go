//go:build !linux

package sqlitedb

import (
	"io/fs"
	"os"
)

// chmodNoFollow sets the mode of the file path names if it is still the
// file fi describes and not a symbolic link. Without Linux's O_PATH there is
// a short window between the check and the change; the folders of our
// stores are private (0700), so only their owner could use it.
func chmodNoFollow(path string, fi fs.FileInfo, mode fs.FileMode) error {
	now, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if now.Mode()&fs.ModeSymlink != 0 || !os.SameFile(now, fi) {
		return errReplaced
	}
	return os.Chmod(path, mode)
}
