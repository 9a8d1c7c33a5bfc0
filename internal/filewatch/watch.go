// Package filewatch wakes waiters when files of one folder change: by
// file-change notification where the OS gives it (inotify of our own on
// Linux, fsnotify elsewhere), and by polling size and mtime as the
// fallback. The mailbox sides wait on their SQLite files with it, and the
// history store's change notification on its state.db and WAL.
//
// A process part that watches many folders, or one folder for many
// clients (the web server's event streams, the host daemon's running
// sessions), owns a Hub and takes its watchers from it: they share one OS
// notification instance. On Linux an inotify instance per watcher would
// run into the per-user limit (fs.inotify.max_user_instances, 128 by
// default), past which every new watcher of every program of the user
// falls back to polling.
package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiondb/sessiondb/internal/filesig"
)

// DefaultInterval is the polling fallback when Options.Interval is 0.
const DefaultInterval = time.Second

// ErrClosed is returned by a Hub's Watch and Notify once it is closed.
var ErrClosed = errors.New("filewatch: the hub is closed")

// Options configure a watcher.
type Options struct {
	// Interval is the polling fallback; default DefaultInterval.
	Interval time.Duration
	// NoNotify disables file-change notification: polling only.
	NoNotify bool
	// CommitsOnly says the files are SQLite databases in DELETE journal
	// mode (the mailbox files), so only files made, removed and renamed
	// in the folder need notification: a commit removes its journal, and
	// a whole file is published by a rename. The writes inside a
	// transaction are not listened to (on Linux; fsnotify cannot choose).
	// A change made in place any other way (a WAL, a plain rewrite, an
	// mtime) is then seen by the poll alone.
	CommitsOnly bool
}

// Hub gives out Watchers that share what can be shared: one OS
// notification instance for them all, made at the first watcher that
// wants notification; one notification watch per folder, counted by the
// watchers' groups that use it and removed with the last; and one group
// per folder, file names and options, which polls once and wakes every
// watcher in it. Its owner closes it after its watchers. A Hub is safe for
// concurrent use.
type Hub struct {
	// mu guards the groups and the notification watches, and orders the
	// calls that add and remove watches. The notifier's reading goroutine
	// never takes it: fsnotify may hold its own lock while it hands an
	// error over, so a watch added or removed under a lock the reader
	// waits for could deadlock.
	mu     sync.Mutex
	nt     notifier
	groups map[groupKey]*group
	dirs   map[string]*dirUse // the notifying groups of each folder
	closed bool

	// routeMu guards routes: the notifying groups of each folder, which
	// listen reads to hand an event to those it may concern.
	routeMu sync.RWMutex
	routes  map[string][]*group

	wg sync.WaitGroup // listen and the groups' polls
}

// NewHub returns a Hub. It holds no OS resource until its first watcher.
func NewHub() *Hub {
	return &Hub{groups: map[groupKey]*group{}, dirs: map[string]*dirUse{}, routes: map[string][]*group{}}
}

// dirUse counts the notifying groups of one folder, and among them those
// that want every change: the folder's watch asks for every change while
// one of them remains, and only for commits otherwise.
type dirUse struct{ groups, all int }

// notifier is a Hub's OS notification instance. Its reading goroutine,
// counted in the Hub's wg, hands what it reads to the Hub's dispatch.
type notifier interface {
	// add watches dir, for commits alone (see Options.CommitsOnly) or
	// for every change; adding dir again replaces what its watch asks for.
	add(dir string, commitsOnly bool) error
	// remove drops dir's watch; a folder that is gone took it with it.
	remove(dir string)
	// close ends the instance and its reading goroutine.
	close() error
}

// event is one notification as the Hub routes it.
type event struct {
	path string // the file or folder it names
	gone bool   // path was removed or renamed away
	// commit: the event is of a kind a commits-only watch asks for. A
	// folder's watch asks for every change while any group of it wants
	// them; its commits-only groups skip the rest.
	commit bool
	self   bool // path is a watched folder that was removed, renamed or unmounted
	all    bool // events were lost (the OS's queue overflowed): wake every group
}

// groupKey names the watchers that can share one poll and one relevance
// decision: the same folder, files and options.
type groupKey struct {
	dir         string
	names       string // the names, NUL-separated
	interval    time.Duration
	noNotify    bool
	commitsOnly bool
}

// group is the watchers of one groupKey.
type group struct {
	key    groupKey
	names  []string
	want   map[string]bool
	notify bool          // the Hub's notification watch on dir serves it
	done   chan struct{} // closed when its last watcher goes: the poll ends

	mu   sync.Mutex
	subs map[*Watcher]struct{}
}

// Watcher wakes waiters when chosen files of one folder change. Its folder
// is watched, not the files (SQLite's DELETE journal mode creates and
// deletes the journal beside the file, and replaced files would orphan a
// file watch), and the files' size and mtime are also polled every
// Interval, because notifications do not cross every mount (virtiofs, NFS):
// notification only makes the wake earlier.
type Watcher struct {
	c       chan struct{}
	changes atomic.Uint64 // wakes, counted before they coalesce in c
	done    chan struct{}
	once    sync.Once
	notify  bool
	release func()
	own     *Hub // the Hub made for this watcher alone (NewWatcher), closed with it
}

// NewWatcher watches the files named names (base names) inside dir, on a
// notification instance of its own, closed with it: for a process part
// that watches one folder. When the OS gives no notification for dir, it
// falls back to polling alone.
func NewWatcher(dir string, names []string, o Options) (*Watcher, error) {
	h := NewHub()
	w, err := h.Watch(dir, names, o)
	if err != nil {
		h.Close()
		return nil, err
	}
	w.own = h
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
	w.call(fn)
	return w, nil
}

// Notify is Watch with a goroutine that calls fn after each change, as the
// package's Notify does.
func (h *Hub) Notify(dir string, names []string, o Options, fn func()) (*Watcher, error) {
	w, err := h.Watch(dir, names, o)
	if err != nil {
		return nil, err
	}
	w.call(fn)
	return w, nil
}

func (w *Watcher) call(fn func()) {
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
}

// Watch watches the files named names (base names) inside dir, through
// h's notification instance, falling back to polling alone when the OS
// gives no notification for dir. Closing the watcher releases its share;
// the last watcher of a folder removes the folder's notification watch.
// After Close it fails with ErrClosed.
func (h *Hub) Watch(dir string, names []string, o Options) (*Watcher, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	dir = filepath.Clean(dir)
	key := groupKey{dir: dir, names: strings.Join(names, "\x00"), interval: o.Interval, noNotify: o.NoNotify, commitsOnly: o.CommitsOnly}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	g := h.groups[key]
	if g == nil {
		g = h.newGroup(key, names)
	}
	w := &Watcher{c: make(chan struct{}, 1), done: make(chan struct{}), notify: g.notify}
	w.release = func() { h.leave(g, w) }
	g.mu.Lock()
	g.subs[w] = struct{}{}
	g.mu.Unlock()
	return w, nil
}

// newGroup starts the group of key: its folder's notification watch (the
// instance made at need) and its poll. h.mu is held.
func (h *Hub) newGroup(key groupKey, names []string) *group {
	g := &group{key: key, names: append([]string(nil), names...), want: map[string]bool{},
		done: make(chan struct{}), subs: map[*Watcher]struct{}{}}
	for _, n := range names {
		g.want[n] = true
	}
	if !key.noNotify {
		g.notify = h.addWatch(key.dir, key.commitsOnly)
	}
	if g.notify {
		h.routeMu.Lock()
		h.routes[key.dir] = append(h.routes[key.dir], g)
		h.routeMu.Unlock()
	}
	h.groups[key] = g
	last := g.sigs()
	h.wg.Add(1)
	go g.poll(&h.wg, last)
	return g
}

// addWatch adds dir to the notification instance, making the instance at
// its first use, counts a new group of dir, and reports whether dir is
// watched. It adds dir again for each new group although dir may be
// watched already: a folder removed and made again under the same name is
// then watched anew, and the watch asks for every change as soon as one
// group wants them. h.mu is held.
func (h *Hub) addWatch(dir string, commitsOnly bool) bool {
	if h.nt == nil {
		nt, err := newNotifier(h)
		if err != nil {
			return false // no instance to be had (the user's limit): poll
		}
		h.nt = nt
	}
	u := h.dirs[dir]
	if u == nil {
		u = &dirUse{}
	}
	all := u.all
	if !commitsOnly {
		all++
	}
	if h.nt.add(dir, all == 0) != nil {
		return false
	}
	u.groups++
	u.all = all
	h.dirs[dir] = u
	return true
}

// leave takes w out of g; the last watcher of g stops its poll and gives
// up its share of the folder's notification watch.
func (h *Hub) leave(g *group, w *Watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g.mu.Lock()
	delete(g.subs, w)
	empty := len(g.subs) == 0
	g.mu.Unlock()
	if !empty || h.groups[g.key] != g {
		return // others remain, or Close already ended the group
	}
	delete(h.groups, g.key)
	close(g.done)
	if !g.notify {
		return
	}
	h.routeMu.Lock()
	rs := h.routes[g.key.dir]
	for i, x := range rs {
		if x == g {
			rs = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) == 0 {
		delete(h.routes, g.key.dir)
	} else {
		h.routes[g.key.dir] = rs
	}
	h.routeMu.Unlock()
	u := h.dirs[g.key.dir]
	u.groups--
	if !g.key.commitsOnly {
		u.all--
	}
	switch {
	case u.groups == 0:
		delete(h.dirs, g.key.dir)
		h.nt.remove(g.key.dir)
	case u.all == 0 && !g.key.commitsOnly:
		// The last group that wanted every change went: ask for commits
		// alone again. A folder that is gone has no watch to narrow.
		_ = h.nt.add(g.key.dir, true)
	}
}

// Close stops every watcher of h and its notification instance, and
// waits for its goroutines. Watchers closed afterwards only let go of it.
// It is safe to call more than once.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for key, g := range h.groups {
		close(g.done)
		delete(h.groups, key)
	}
	clear(h.dirs)
	h.routeMu.Lock()
	clear(h.routes)
	h.routeMu.Unlock()
	nt := h.nt
	h.nt = nil
	h.mu.Unlock()
	var err error
	if nt != nil {
		err = nt.close()
	}
	h.wg.Wait()
	return err
}

// dispatch wakes, once each, the groups that the events of one read from
// the OS concern: for a file, the groups of its folder that watch it (and
// those of the folder it names, for a folder's removal seen from its
// parent); for a watched folder removed, renamed or unmounted, every group
// of it; after an overflow of the OS's queue, which loses events, every
// group, to read again.
func (h *Hub) dispatch(evs []event) {
	type candidate struct {
		g  *group
		ev event
	}
	var cs []candidate
	h.routeMu.RLock()
	for _, ev := range evs {
		if ev.all {
			cs = cs[:0]
			for _, rs := range h.routes {
				for _, g := range rs {
					cs = append(cs, candidate{g, ev})
				}
			}
			break
		}
		if !ev.self {
			for _, g := range h.routes[filepath.Dir(ev.path)] {
				cs = append(cs, candidate{g, ev})
			}
		}
		for _, g := range h.routes[ev.path] {
			cs = append(cs, candidate{g, ev})
		}
	}
	h.routeMu.RUnlock()
	var wake []*group
	for _, c := range cs {
		if slices.Contains(wake, c.g) {
			continue
		}
		if c.ev.all || c.ev.self || c.g.relevant(c.ev) {
			wake = append(wake, c.g)
		}
	}
	for _, g := range wake {
		g.signal()
	}
}

// signal wakes every watcher of g.
func (g *group) signal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for w := range g.subs {
		w.signal()
	}
}

func (w *Watcher) signal() {
	w.changes.Add(1)
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// journalSuffix names the rollback journal SQLite keeps beside a database
// file in DELETE mode while a write transaction is open.
const journalSuffix = "-journal"

// relevant decides whether ev should wake g's watchers. A writer in DELETE
// journal mode creates "<db>-journal", writes the database, then deletes the
// journal: the deletion is the commit. Waking on the earlier events would
// send readers into the writer's lock, where SQLite's busy handler sleeps
// them for milliseconds; so changes to a database file wake only when no
// journal is beside it, and the journal's removal always wakes. A
// commits-only group skips the events it did not ask for, which reach it
// while another group of its folder asks for every change.
func (g *group) relevant(ev event) bool {
	if g.key.commitsOnly && !ev.commit {
		return false
	}
	base := filepath.Base(ev.path)
	if db, ok := strings.CutSuffix(base, journalSuffix); ok {
		if len(g.want) > 0 && !g.want[db] && !g.want[base] {
			return false
		}
		return ev.gone
	}
	if len(g.want) > 0 && !g.want[base] {
		return false
	}
	if _, err := os.Lstat(ev.path + journalSuffix); err == nil {
		return false // a transaction is open; its journal's removal will wake us
	}
	return true
}

func (g *group) sigs() []filesig.Sig {
	out := make([]filesig.Sig, len(g.names))
	for i, n := range g.names {
		out[i] = filesig.Of(filepath.Join(g.key.dir, n))
	}
	return out
}

// poll wakes g's watchers when a file's size or mtime differs from last.
func (g *group) poll(wg *sync.WaitGroup, last []filesig.Sig) {
	defer wg.Done()
	t := time.NewTicker(g.key.interval)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
			cur := g.sigs()
			for i := range cur {
				if cur[i] != last[i] {
					g.signal()
					break
				}
			}
			last = cur
		}
	}
}

// Notifying reports whether OS file-change notification is in use.
func (w *Watcher) Notifying() bool { return w.notify }

// Changes counts the changes w was woken for, before they coalesce in C. A
// reader that notes it while it holds what it reads (a read transaction)
// can tell afterwards whether a wake is for a change it has already read.
func (w *Watcher) Changes() uint64 { return w.changes.Load() }

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

// Close stops the watcher and releases its share of its Hub (a watcher of
// NewWatcher closes its own); it is safe to call more than once.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		w.release()
		if w.own != nil {
			err = w.own.Close()
		}
	})
	return err
}
