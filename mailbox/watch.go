package mailbox

import (
	"context"
	"time"
)

// Watcher wakes waiters when chosen files of one folder change. It watches
// the folder, not the files, with fsnotify (SQLite's DELETE journal mode and
// atomic renames replace files, which would orphan a file watch), and also
// polls the files' size and mtime every Interval, because notifications do
// not cross every mount (virtiofs, NFS): notification only makes the wake
// earlier.
type Watcher struct {
	dir      string
	names    map[string]bool
	interval time.Duration
	c        chan struct{}
	done     chan struct{}
}

// WatchOptions configure NewWatcher.
type WatchOptions struct {
	// Interval is the polling fallback; default 1 s.
	Interval time.Duration
	// NoNotify disables fsnotify: polling only.
	NoNotify bool
}

// NewWatcher watches the files named names inside dir.
func NewWatcher(dir string, names []string, o WatchOptions) (*Watcher, error) {
	return nil, notImplemented("NewWatcher")
}

// C delivers one value (coalesced) after each change.
func (w *Watcher) C() <-chan struct{} { return w.c }

// Wait returns nil when a change was seen (or the polling interval passed
// without notification support), or ctx's error.
func (w *Watcher) Wait(ctx context.Context) error { return notImplemented("Watcher.Wait") }

// Close stops the watcher.
func (w *Watcher) Close() error { return nil }
