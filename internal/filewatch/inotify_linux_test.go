package filewatch

import (
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// quiet is how long a test gives a wrong wake to come.
const quiet = 300 * time.Millisecond

func openDB(t *testing.T, path, journalMode string) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA journal_mode=" + journalMode}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS t(a)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// watchMasks returns the event masks of the inotify watches this process
// holds on dir's inode (from /proc/self/fdinfo).
func watchMasks(t *testing.T, dir string) []uint32 {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	ino := " ino:" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 16) + " "
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var masks []uint32
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err != nil || link != "anon_inode:inotify" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if !strings.HasPrefix(line, "inotify wd:") || !strings.Contains(line, ino) {
				continue
			}
			_, m, _ := strings.Cut(line, " mask:")
			m, _, _ = strings.Cut(m, " ")
			v, err := strconv.ParseUint(m, 16, 32)
			if err != nil {
				t.Fatalf("fdinfo line %q: %v", line, err)
			}
			masks = append(masks, uint32(v))
		}
	}
	return masks
}

func woken(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.C():
	case <-time.After(30 * time.Second):
		t.Fatalf("not woken by %s", what)
	}
}

func notWoken(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.C():
		t.Fatalf("woken by %s", what)
	case <-time.After(quiet):
	}
}

// TestCommitsOnlyWakesAtACommitNotAtWrites: a commits-only watcher of a
// folder (a mailbox's) is woken by an SQLite commit in DELETE journal mode
// (the journal's removal), by notification alone (the poll is an hour
// away), and not by writes to the database that commit nothing: a pwrite
// into the open file, a change of its mtime. A watcher of the same Hub
// that wants every change is woken by them, so they did reach inotify.
func TestCommitsOnlyWakesAtACommitNotAtWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inbound.db")
	db := openDB(t, path, "DELETE")
	h := NewHub()
	defer h.Close()
	names := []string{"inbound.db", "inbound.db-journal"}
	commits, err := h.Watch(dir, names, Options{Interval: time.Hour, CommitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	own, err := NewWatcher(dir, names, Options{Interval: time.Hour, CommitsOnly: true}) // the folder's only watch asks for commits alone
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if !commits.Notifying() || !own.Notifying() {
		t.Fatal("this test needs file-change notification")
	}
	// The two watches of the folder (the Hub's, own's) ask for no write.
	masks := watchMasks(t, dir)
	if len(masks) != 2 {
		t.Fatalf("%d watches of the folder, want 2", len(masks))
	}
	for _, m := range masks {
		if m&(unix.IN_MODIFY|unix.IN_ATTRIB|unix.IN_CREATE) != 0 || m&unix.IN_DELETE == 0 {
			t.Fatalf("a commits-only watch has the mask %#x: it asks for writes, or not for removals", m)
		}
	}

	for i := range 3 {
		if _, err := db.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		woken(t, commits, "a commit")
		woken(t, own, "a commit")
	}
	// A write that commits nothing: the journal stays absent, the file's
	// size and contents change.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := h.Watch(dir, names, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	time.Sleep(50 * time.Millisecond) // the commits' wakes have all come
	drain(commits)
	drain(own)
	if _, err := f.WriteAt([]byte("not a commit"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if m := watchMasks(t, dir); len(m) != 2 || (m[0]|m[1])&unix.IN_MODIFY == 0 {
		t.Fatalf("with a watcher of every change, the folder's watches have the masks %#x: none asks for writes", m)
	}
	woken(t, all, "a write, asking for every change")
	notWoken(t, commits, "a write that commits nothing, beside a watcher asking for every change")
	notWoken(t, own, "a write that commits nothing")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	woken(t, all, "a new mtime, asking for every change")
	notWoken(t, own, "a new mtime")

	// With the watcher of every change gone, the folder's watch asks for
	// commits alone again; a commit still wakes.
	all.Close()
	for _, m := range watchMasks(t, dir) {
		if m&unix.IN_MODIFY != 0 {
			t.Fatalf("the watcher of every change went, yet a watch of the folder still asks for writes (mask %#x)", m)
		}
	}
	if _, err := f.WriteAt([]byte("again"), 1<<20); err != nil {
		t.Fatal(err)
	}
	notWoken(t, commits, "a write that commits nothing, after the watcher of every change went")
	if _, err := db.Exec("INSERT INTO t VALUES (9)"); err != nil {
		t.Fatal(err)
	}
	woken(t, commits, "a commit after the watcher of every change went")
}

// TestCommitsOnlyWakesAtAFilePublishedByRename: a mailbox file is made
// elsewhere and renamed into the folder whole (InitSession); the rename
// wakes a commits-only watcher, and so does the file's removal.
func TestCommitsOnlyWakesAtAFilePublishedByRename(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWatcher(dir, []string{"outbound.db"}, Options{Interval: time.Hour, CommitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tmp := filepath.Join(dir, ".outbound.db.tmp")
	if err := os.WriteFile(tmp, []byte("whole"), 0o600); err != nil {
		t.Fatal(err)
	}
	notWoken(t, w, "a file it does not watch")
	if err := os.Rename(tmp, filepath.Join(dir, "outbound.db")); err != nil {
		t.Fatal(err)
	}
	woken(t, w, "its file renamed into the folder")
	if err := os.Remove(filepath.Join(dir, "outbound.db")); err != nil {
		t.Fatal(err)
	}
	woken(t, w, "its file's removal")
}

// TestWALAppendWakes: the history store's watcher (every change: a WAL
// commit is a write to the -wal file, nothing is made or removed) is woken
// by each append, also once the -wal file exists.
func TestWALAppendWakes(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, filepath.Join(dir, "state.db"), "WAL")
	w, err := NewWatcher(dir, []string{"state.db", "state.db-wal", "state.db-journal"}, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		time.Sleep(50 * time.Millisecond)
		drain(w)
		if _, err := db.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		woken(t, w, "an append in WAL mode")
	}
}

// TestOverflowWakesEveryWatcher: when the kernel's event queue overflows
// (events were lost), every watcher of the Hub is woken, also those of a
// folder where nothing happened. The Hub's reader is held back (it waits
// to route the first event) while more events than the queue holds pile
// up in another folder.
func TestOverflowWakesEveryWatcher(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	busy, calm := t.TempDir(), t.TempDir()
	h := NewHub()
	defer h.Close()
	loud, err := h.Watch(busy, nil, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer loud.Close()
	quietW, err := h.Watch(calm, []string{"inbound.db"}, Options{Interval: time.Hour, CommitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer quietW.Close()
	files := [2]string{filepath.Join(busy, "a"), filepath.Join(busy, "b")}
	for _, f := range files {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	woken(t, loud, "a file made")
	time.Sleep(50 * time.Millisecond)
	drain(loud)

	h.routeMu.Lock()
	held := true
	defer func() {
		if held {
			h.routeMu.Unlock()
		}
	}()
	// Alternate two files: the kernel merges an event equal to the last
	// one queued. The reader's first read, which it holds while it waits,
	// may have taken up to a buffer of them (2048 of these).
	now := time.Now()
	for i := range limit + 4096 {
		ts := now.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(files[i%2], ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	h.routeMu.Unlock()
	held = false
	woken(t, quietW, "an overflow of the event queue")
	woken(t, loud, "its own folder's events")
}

// TestFolderRemovedOrRenamedWakes: a watched folder removed or renamed
// wakes its watchers (their files are gone from the name they watch), and
// its watch goes with it: the renamed folder's changes no longer reach
// them under the old name, and no watch is left behind.
func TestFolderRemovedOrRenamedWakes(t *testing.T) {
	root := t.TempDir()
	_, baseWatches := testkit.Inotify(t)
	h := NewHub()
	defer h.Close()
	gone, moved := filepath.Join(root, "gone"), filepath.Join(root, "moved")
	for _, d := range []string{gone, moved} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	wg, err := h.Watch(gone, []string{"inbound.db"}, Options{Interval: time.Hour, CommitsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wg.Close()
	wm, err := h.Watch(moved, []string{"inbound.db"}, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer wm.Close()
	if _, watches := testkit.Inotify(t); watches-baseWatches != 2 {
		t.Fatalf("%d watches for two folders", watches-baseWatches)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	woken(t, wg, "its folder's removal")
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Rename(moved, elsewhere); err != nil {
		t.Fatal(err)
	}
	woken(t, wm, "its folder's rename")
	testkit.WaitFor(t, "the watches of a removed and a renamed folder gone", func() bool {
		_, watches := testkit.Inotify(t)
		return watches == baseWatches
	})
	if err := os.WriteFile(filepath.Join(elsewhere, "inbound.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notWoken(t, wm, "a change in its folder after the folder was renamed away")
}

// TestCloseLeavesNothing: a Hub with watchers, closed, has given back its
// descriptors and ended its goroutines (the reader blocked in its read
// among them); Close returns while no event comes.
func TestCloseLeavesNothing(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	dir := t.TempDir()
	time.Sleep(50 * time.Millisecond) // goroutines of earlier tests have ended
	baseFDs, baseG := fds(), runtime.NumGoroutine()
	for range 3 {
		h := NewHub()
		for _, o := range []Options{{Interval: time.Hour}, {Interval: time.Hour, CommitsOnly: true}} {
			w, err := h.Watch(dir, []string{"inbound.db"}, o)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Notifying() {
				t.Fatal("this test needs file-change notification")
			}
		}
		if fds() <= baseFDs {
			t.Fatal("a notifying Hub holds no descriptor")
		}
		closed := make(chan error, 1)
		go func() { closed <- h.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not return")
		}
		w, err := NewWatcher(dir, nil, Options{Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := fds(); n > baseFDs {
		t.Fatalf("%d descriptors open after the Hubs closed, %d before", n, baseFDs)
	}
	testkit.WaitFor(t, "the Hubs' goroutines ended", func() bool { return runtime.NumGoroutine() <= baseG })
}
