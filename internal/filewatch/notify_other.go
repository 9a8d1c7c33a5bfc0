//go:build !linux

package filewatch

import "github.com/fsnotify/fsnotify"

// fsnotifier is a Hub's notifier where inotify is not to be had: fsnotify,
// which asks for every change whatever the options say.
type fsnotifier struct{ fw *fsnotify.Watcher }

func newNotifier(h *Hub) (notifier, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	h.wg.Add(1)
	go listen(h, fw)
	return fsnotifier{fw}, nil
}

func (n fsnotifier) add(dir string, _ bool) error { return n.fw.Add(dir) }

// remove drops dir's watch; a folder that is gone took it with it.
func (n fsnotifier) remove(dir string) { _ = n.fw.Remove(dir) }

func (n fsnotifier) close() error { return n.fw.Close() }

// listen hands each event to the Hub; an error, such as an overflow of
// the OS's queue, which loses events, wakes every group to read again.
func listen(h *Hub, fw *fsnotify.Watcher) {
	defer h.wg.Done()
	for {
		select {
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			gone := ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename)
			h.dispatch([]event{{path: ev.Name, gone: gone, commit: gone || ev.Op.Has(fsnotify.Create)}})
		case _, ok := <-fw.Errors:
			if !ok {
				return
			}
			h.dispatch([]event{{all: true}})
		}
	}
}
