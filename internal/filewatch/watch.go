// Package filewatch wakes waiters when files of one folder change: by
// file-change notification (fsnotify) where the OS gives it, and by
// polling size and mtime as the fallback. The mailbox sides wait on their
// SQLite files with it, and the history store's change notification on its
// state.db and WAL.
package filewatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessiondb/sessiondb/internal/filesig"
)

// DefaultInterval is the polling fallback when Options.Interval is 0.
const DefaultInterval = time.Second

// Watcher wakes waiters when chosen files of one folder change. It watches
// the folder, not the files, with fsnotify (SQLite's DELETE journal mode
// creates and deletes the journal beside the file, and replaced files would
// orphan a file watch), and also polls the files' size and mtime every
// Interval, because notifications do not cross every mount (virtiofs, NFS):
// notification only makes the wake earlier.
type Watcher struct {
	dir      string
	names    []string
	interval time.Duration
	c        chan struct{}
	done     chan struct{}
	fw       *fsnotify.Watcher
	once     sync.Once
	wg       sync.WaitGroup
	notify   bool
}

// Options configure NewWatcher.
type Options struct {
	// Interval is the polling fallback; default DefaultInterval.
	Interval time.Duration
	// NoNotify disables fsnotify: polling only.
	NoNotify bool
}

// NewWatcher watches the files named names (base names) inside dir. When
// the OS gives no notification for dir, it falls back to polling alone.
func NewWatcher(dir string, names []string, o Options) (*Watcher, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	w := &Watcher{dir: dir, names: append([]string(nil), names...), interval: o.Interval,
		c: make(chan struct{}, 1), done: make(chan struct{})}
	if !o.NoNotify {
		if fw, err := fsnotify.NewWatcher(); err == nil {
			if err := fw.Add(dir); err == nil {
				w.fw, w.notify = fw, true
			} else {
				fw.Close()
			}
		}
	}
	w.wg.Add(1)
	go w.poll()
	if w.fw != nil {
		w.wg.Add(1)
		go w.listen()
	}
	return w, nil
}

// Notify is NewWatcher with a goroutine that calls fn after each change
// (coalesced like C) until the watcher is closed. Close does not wait for a
// call under way, so fn may take a lock that Close's caller holds; a call
// may still begin as Close runs.
func Notify(dir string, names []string, o Options, fn func()) (*Watcher, error) {
	w, err := NewWatcher(dir, names, o)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			select {
			case <-w.done:
				return
			case <-w.c:
				fn()
			}
		}
	}()
	return w, nil
}

// Notifying reports whether OS file-change notification is in use.
func (w *Watcher) Notifying() bool { return w.notify }

func (w *Watcher) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (w *Watcher) listen() {
	defer w.wg.Done()
	want := map[string]bool{}
	for _, n := range w.names {
		want[n] = true
	}
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if w.relevant(want, ev) {
				w.signal()
			}
		case _, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			// An overflow loses events: wake waiters to re-read.
			w.signal()
		}
	}
}

// journalSuffix names the rollback journal SQLite keeps beside a database
// file in DELETE mode while a write transaction is open.
const journalSuffix = "-journal"

// relevant decides whether ev should wake waiters. A writer in DELETE
// journal mode creates "<db>-journal", writes the database, then deletes the
// journal: the deletion is the commit. Waking on the earlier events would
// send readers into the writer's lock, where SQLite's busy handler sleeps
// them for milliseconds; so changes to a database file wake only when no
// journal is beside it, and the journal's removal always wakes.
func (w *Watcher) relevant(want map[string]bool, ev fsnotify.Event) bool {
	base := filepath.Base(ev.Name)
	if db, ok := strings.CutSuffix(base, journalSuffix); ok {
		if len(want) > 0 && !want[db] && !want[base] {
			return false
		}
		return ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename)
	}
	if len(want) > 0 && !want[base] {
		return false
	}
	if _, err := os.Lstat(ev.Name + journalSuffix); err == nil {
		return false // a transaction is open; its journal's removal will wake us
	}
	return true
}

func (w *Watcher) sigs() []filesig.Sig {
	out := make([]filesig.Sig, len(w.names))
	for i, n := range w.names {
		out[i] = filesig.Of(filepath.Join(w.dir, n))
	}
	return out
}

func (w *Watcher) poll() {
	defer w.wg.Done()
	last := w.sigs()
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			cur := w.sigs()
			for i := range cur {
				if cur[i] != last[i] {
					w.signal()
					break
				}
			}
			last = cur
		}
	}
}

// C delivers one value (coalesced) after each change.
func (w *Watcher) C() <-chan struct{} { return w.c }

// Wait blocks until a change is seen (true), timeout passes (false; timeout
// ≤ 0 waits for a change only), or ctx ends (ctx's error).
func (w *Watcher) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-w.c:
		return true, nil
	case <-tc:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Close stops the watcher; it is safe to call more than once.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		if w.fw != nil {
			err = w.fw.Close()
		}
		w.wg.Wait()
	})
	return err
}
