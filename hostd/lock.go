package hostd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/safefile"
)

// FileLock is an exclusive lock a host daemon holds for as long as it
// runs: on its data root (LockRoot) and on a registry in a file
// (LockRegistryFile). The kernel releases it when the process ends however
// it ends, SIGKILL included (safefile.Lock), so no stale lock is left to
// clean up. The file itself stays: removing it would let a third process
// lock a new file of the same name while the holder still runs.
type FileLock struct {
	f    *os.File
	path string
	once sync.Once
}

// Path is the lock file's path.
func (l *FileLock) Path() string { return l.path }

// Close releases the lock. Closing twice is harmless.
func (l *FileLock) Close() error {
	var err error
	l.once.Do(func() { err = l.f.Close() })
	return err
}

// LockRoot takes the data root's lock (<root>/sessiondb.HostLockFile, the
// root made 0700 when missing) for one host daemon: two hosts over one
// root would each deliver every message and stop each other's containers.
// A root another host holds is a conflict naming the root and, when it
// wrote it, the holder's pid. Hosts sharing a PostgreSQL registry each
// have a data root of their own, so each holds its own root's lock.
func LockRoot(root string) (*FileLock, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "create the data root %s", root)
	}
	return lock(filepath.Join(root, sessiondb.HostLockFile), func(holder string) error {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "the data root %s is served by another host daemon (%s holds %s): one host per data root; stop that host, or give this one its own --data",
			root, holder, sessiondb.HostLockFile)
	})
}

// LockRegistryFile takes the lock file beside a registry file
// (<path>.host-lock): a registry in a file has no leases, so one host
// serves it, and a second host on the same file (from another data root)
// is refused rather than routing and delivering beside the first.
func LockRegistryFile(path string) (*FileLock, error) {
	return lock(path+".host-lock", func(holder string) error {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "another host daemon serves the registry %s (%s holds %s.host-lock); a registry in a file serves one host: share a postgres:// registry between hosts",
			path, holder, filepath.Base(path))
	})
}

// lock takes the lock file at path; taken words the conflict when another
// process holds it, given "pid N" or "another process".
func lock(path string, taken func(holder string) error) (*FileLock, error) {
	f, err := safefile.Lock("the lock file", path)
	var le *safefile.LockedError
	if errors.As(err, &le) {
		holder := "another process"
		if le.PID > 0 {
			holder = fmt.Sprintf("pid %d", le.PID)
		}
		return nil, taken(holder)
	}
	if err != nil {
		return nil, err
	}
	return &FileLock{f: f, path: path}, nil
}
