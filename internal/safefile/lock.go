package safefile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/sessiondb/sessiondb"
)

// LockedError is Lock's answer when another process holds the lock.
type LockedError struct {
	Path string
	// PID is the holder's pid as it wrote it in the file; 0 when it has
	// not written one yet.
	PID int
}

func (e *LockedError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("%s is locked by another process", e.Path)
	}
	return fmt.Sprintf("%s is locked by pid %d", e.Path, e.PID)
}

// maxLockBytes bounds what is read of a lock file: a pid and a newline.
const maxLockBytes = 64

// Lock opens the lock file at path (created 0600, never through a
// symbolic link, never waiting on a FIFO planted there) and takes its
// exclusive lock without waiting, then writes this process's pid into it
// for the next process to name. The lock lasts until the file is closed
// or the process ends, however it ends: the kernel releases it (flock(2)),
// so no stale lock is ever left. A lock held elsewhere, in this process or
// another, is a *LockedError. what names the file in other errors.
func Lock(what, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow|oNonBlock, 0o600)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "open %s %s", what, path)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s %s is not a regular file: refused", what, path)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "lock %s %s", what, path)
	}
	if !locked {
		b, _ := io.ReadAll(io.LimitReader(f, maxLockBytes))
		f.Close()
		pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
		return nil, &LockedError{Path: path, PID: pid}
	}
	// The pid names the holder in the next process's error, nothing more:
	// the lock is the flock, so a failed write costs only the name. It is
	// written over the last holder's and the rest cut after, so a reader
	// never finds the file empty once a holder has written it.
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if _, err := f.WriteAt(pid, 0); err == nil {
		f.Truncate(int64(len(pid)))
	}
	return f, nil
}
