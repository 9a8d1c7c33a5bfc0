package filewatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The events a folder's watch asks inotify for. allEvents are fsnotify's
// (every change, as the history store's WAL needs: its commits are writes
// to the -wal file). commitEvents are what a DELETE-mode SQLite file needs:
// the journal's removal is the commit, a whole file is published by a
// rename, and a file removed or a folder gone must wake its readers. They
// leave out IN_MODIFY, one event per write of a transaction (some 80 a
// mailbox round trip, each read by both sides' watchers), IN_ATTRIB, and
// IN_CREATE: SQLite creates a file and then commits into it through a
// journal, and a journal's creation starts a transaction, which no reader
// should be woken into.
const (
	allEvents = unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_ATTRIB |
		unix.IN_MODIFY | unix.IN_MOVE_SELF | unix.IN_DELETE | unix.IN_DELETE_SELF
	commitEvents = unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_MOVE_SELF | unix.IN_DELETE | unix.IN_DELETE_SELF
)

// inotify is a Hub's notifier on Linux: one inotify instance, read by one
// goroutine through the runtime's poller, so that a wait holds no thread
// and closing the file ends the read.
type inotify struct {
	fd int
	f  *os.File

	// mu guards the maps and orders inotify_rm_watch against close, so
	// that a removal never reaches a descriptor number reused since.
	mu     sync.Mutex
	closed bool
	dirs   map[int32]string // watch descriptor → folder
	wds    map[string]int32 // folder → its current watch descriptor
}

func newNotifier(h *Hub) (notifier, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	n := &inotify{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), dirs: map[int32]string{}, wds: map[string]int32{}}
	h.wg.Add(1)
	go n.listen(h)
	return n, nil
}

func (n *inotify) add(dir string, commitsOnly bool) error {
	mask := uint32(allEvents)
	if commitsOnly {
		mask = commitEvents
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return os.ErrClosed
	}
	wd, err := unix.InotifyAddWatch(n.fd, dir, mask)
	if err != nil {
		return err
	}
	// The same watch comes back for a folder watched already (the mask
	// replaced); a folder made again under the name gets a new one, and
	// its old one is reported ignored.
	n.dirs[int32(wd)] = dir
	n.wds[dir] = int32(wd)
	return nil
}

func (n *inotify) remove(dir string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop(dir)
}

// drop removes dir's watch; its IN_IGNORED, read later, forgets the
// descriptor. n.mu is held.
func (n *inotify) drop(dir string) {
	wd, ok := n.wds[dir]
	if !ok || n.closed {
		return
	}
	delete(n.wds, dir)
	_, _ = unix.InotifyRmWatch(n.fd, uint32(wd))
}

func (n *inotify) close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	return n.f.Close() // ends listen's read with os.ErrClosed
}

// listen reads the instance until it is closed: one read takes every
// event queued, and the groups they concern are woken once for the read.
func (n *inotify) listen(h *Hub) {
	defer h.wg.Done()
	buf := make([]byte, 64<<10) // room for 4096 events with short names
	var evs []event
	for {
		k, err := n.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				// Not expected of inotify; stop reading rather than spin,
				// and let every group read again: the polls carry on.
				h.dispatch([]event{{all: true}})
			}
			return
		}
		evs = evs[:0]
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += unix.SizeofInotifyEvent
			name := string(bytes.TrimRight(buf[off:min(off+size, k)], "\x00"))
			off += size
			evs = n.event(evs, wd, mask, name)
		}
		h.dispatch(evs)
	}
}

// event appends to evs what one inotify event means for the Hub.
func (n *inotify) event(evs []event, wd int32, mask uint32, name string) []event {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return append(evs, event{all: true})
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	dir, ok := n.dirs[wd]
	if !ok {
		return evs // a watch removed while its events were queued
	}
	switch {
	case mask&unix.IN_IGNORED != 0:
		// The watch is gone: removed by us, or with its folder (after
		// IN_DELETE_SELF) or its file system.
		delete(n.dirs, wd)
		if n.wds[dir] == wd {
			delete(n.wds, dir)
		}
		return evs
	case mask&unix.IN_MOVE_SELF != 0:
		// The folder lives on under another name, which its watch would
		// go on reporting as dir: drop it. Its groups poll from now on,
		// until a new group of dir watches whatever dir names then.
		if n.wds[dir] == wd {
			n.drop(dir)
		}
		return append(evs, event{path: dir, self: true})
	case mask&(unix.IN_DELETE_SELF|unix.IN_UNMOUNT) != 0:
		return append(evs, event{path: dir, self: true})
	case name == "":
		return evs // a change of the folder's own attributes
	}
	return append(evs, event{path: dir + "/" + name, gone: mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0,
		commit: mask&commitEvents != 0})
}
