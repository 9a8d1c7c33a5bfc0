// Package safefile writes the files a user or a data root names (an
// export, a profile, a status file, a compacted copy) so that a symbolic
// link planted at the name is never followed and a killed or failed write
// never leaves half a file: the content goes to a new private file beside
// the target and is renamed over the name only once it is complete and
// synced. A rename replaces a link itself, never what it points to, so even
// a link planted during the write is harmless; one found at the start is
// refused with a clear error rather than silently replaced.
package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
)

// CheckTarget refuses (invalid) a path that names a symbolic link, a folder
// or anything else that is not a regular file; a missing path is fine.
// what names the path in the error ("--output", "the status file").
func CheckTarget(what, path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return sessiondb.Wrap(sessiondb.EINVALID, err, "%s %s", what, path)
	case fi.Mode()&fs.ModeSymlink != 0:
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %s is a symbolic link: refused (name the file itself)", what, path)
	case fi.IsDir():
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %s is a folder: name a file", what, path)
	case !fi.Mode().IsRegular():
		return sessiondb.Errorf(sessiondb.EINVALID, "%s %s is not a regular file (%s): refused", what, path, fi.Mode().Type())
	}
	return nil
}

// File is a write in progress to a path: an open temporary file beside it.
// Write to it, then Commit; Abort (safe after Commit, so it can be
// deferred) removes the temporary file when the write does not complete.
type File struct {
	*os.File
	what, path string
	done       bool
}

// Create checks path with CheckTarget and opens a new temporary file in
// its folder, created exclusively (never an existing file, never through
// a link) with mode.
func Create(what, path string, mode fs.FileMode) (*File, error) {
	if err := CheckTarget(what, path); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINVALID, err, "cannot write %s %s", what, path)
	}
	// CreateTemp makes the file 0600; a shared mode is asked for exactly.
	if mode != 0o600 {
		if err := f.Chmod(mode); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "chmod %s", f.Name())
		}
	}
	return &File{File: f, what: what, path: path}, nil
}

// Commit syncs the content and renames it over the path (replacing a file
// there, or a link planted since Create, never following it), then syncs
// the folder so the rename survives a crash.
func (f *File) Commit() error {
	if f.done {
		return sessiondb.Errorf(sessiondb.EINTERNAL, "%s %s: already committed or aborted", f.what, f.path)
	}
	f.done = true
	tmp := f.Name()
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write %s %s", f.what, f.path)
	}
	return syncDir(filepath.Dir(f.path))
}

// Abort closes and removes the temporary file, leaving whatever the path
// held before untouched. After Commit it does nothing.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// WriteFile writes data to path through Create and Commit.
func WriteFile(what, path string, data []byte, mode fs.FileMode) error {
	f, err := Create(what, path, mode)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "write %s %s", what, path)
	}
	return f.Commit()
}

// ReadFile reads at most max bytes of the regular file at path without
// following a link at the name and without waiting on a FIFO or device
// planted there. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist).
func ReadFile(what, path string, max int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case err != nil:
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read %s %s", what, path)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s %s is a symbolic link: refused", what, path)
	}
	// O_NOFOLLOW and O_NONBLOCK close the gap between the check and the
	// open: a link or FIFO swapped in meanwhile fails the open or the
	// check of the opened file, it cannot make the read follow or wait.
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read %s %s", what, path)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read %s %s", what, path)
	}
	if !fi.Mode().IsRegular() {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s %s is not a regular file (%s): refused", what, path, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, sessiondb.Wrap(sessiondb.EINTERNAL, err, "read %s %s", what, path)
	}
	if int64(len(b)) > max {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%s %s is larger than %d bytes: refused", what, path, max)
	}
	return b, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "sync folder %s", dir)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return sessiondb.Wrap(sessiondb.EINTERNAL, err, "sync folder %s", dir)
	}
	return nil
}
