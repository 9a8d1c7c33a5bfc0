package filewatch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestHubSharesOneInstance: 200 watchers of 50 folders from one Hub hold
// one inotify instance (not 200: the user's default limit is 128) and one
// watch per folder; a write wakes exactly the watchers of its folder, by
// notification alone (the polls are an hour apart); closing the watchers
// removes the watches, and closing the Hub its instance.
func TestHubSharesOneInstance(t *testing.T) {
	const folders, perFolder = 50, 4
	root := t.TempDir()
	baseInst, baseWatches := testkit.Inotify(t)
	h := NewHub()
	defer h.Close()
	ws := make([][]*Watcher, folders)
	for i := range ws {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for range perFolder {
			w, err := h.Watch(dir, []string{"a.db", "a.db-journal"}, Options{Interval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if !w.Notifying() {
				t.Fatalf("watcher of folder %d does not use notification", i)
			}
			ws[i] = append(ws[i], w)
		}
	}
	if inst, watches := testkit.Inotify(t); inst-baseInst != 1 || watches-baseWatches != folders {
		t.Fatalf("%d watchers hold %d inotify instances and %d watches; want 1 and %d", folders*perFolder, inst-baseInst, watches-baseWatches, folders)
	}

	for _, i := range []int{0, 17, folders - 1} {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprint(i), "a.db"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		for j, w := range ws[i] {
			select {
			case <-w.C():
			case <-time.After(30 * time.Second):
				t.Fatalf("watcher %d of folder %d was not woken by a write to its folder", j, i)
			}
		}
	}
	// A change wakes the watchers of its folder and file only. (The
	// writes above may still be waking: a create, a write and a close
	// each notify.)
	time.Sleep(50 * time.Millisecond)
	for i := range ws {
		for _, w := range ws[i] {
			drain(w)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "5", "other"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "7", "a.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for j, w := range ws[7] {
		select {
		case <-w.C():
		case <-time.After(30 * time.Second):
			t.Fatalf("watcher %d of folder 7 was not woken by a write to its folder", j)
		}
	}
	time.Sleep(50 * time.Millisecond) // give a wrong wake the time to come
	for i := range ws {
		if i == 7 {
			continue
		}
		for j, w := range ws[i] {
			select {
			case <-w.C():
				t.Errorf("watcher %d of folder %d woken by a change of a file it does not watch", j, i)
			default:
			}
		}
	}

	// Half the watchers of every folder go: the watches stay; the rest go:
	// the watches with them.
	for i := range ws {
		for _, w := range ws[i][:perFolder/2] {
			w.Close()
		}
	}
	if _, watches := testkit.Inotify(t); watches-baseWatches != folders {
		t.Fatalf("%d watches after half the watchers closed, want %d", watches-baseWatches, folders)
	}
	w := ws[3][perFolder-1]
	if err := os.WriteFile(filepath.Join(root, "3", "a.db"), []byte("xy"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C():
	case <-time.After(30 * time.Second):
		t.Fatal("a watcher left in its folder was not woken")
	}
	for i := range ws {
		for _, w := range ws[i][perFolder/2:] {
			w.Close()
		}
	}
	if inst, watches := testkit.Inotify(t); inst-baseInst != 1 || watches != baseWatches {
		t.Fatalf("after every watcher closed: %d instances, %d watches; want the Hub's 1, and no watch", inst-baseInst, watches-baseWatches)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if inst, _ := testkit.Inotify(t); inst != baseInst {
		t.Fatalf("%d inotify instances after the Hub closed, want %d", inst, baseInst)
	}
	if _, err := h.Watch(root, nil, Options{}); err != ErrClosed {
		t.Fatalf("Watch after Close: %v, want ErrClosed", err)
	}
}

// TestHubWatchesAFolderMadeAgain: a folder removed and made again under
// the same name is watched anew by the next watcher of it, and the
// watchers still open on the name are woken by it too.
func TestHubWatchesAFolderMadeAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	h := NewHub()
	defer h.Close()
	old, err := h.Watch(dir, []string{"a.db"}, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	drain(old)
	w, err := h.Watch(dir, []string{"a.db"}, Options{Interval: time.Hour, NoNotify: false})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A second group on the folder (other names) adds it again.
	w2, err := h.Watch(dir, []string{"a.db", "b.db"}, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := os.WriteFile(filepath.Join(dir, "a.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*Watcher{"the old watcher": old, "the new watcher": w, "the other group's": w2} {
		select {
		case <-x.C():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s was not woken in the folder made again", name)
		}
	}
}

func drain(w *Watcher) {
	select {
	case <-w.C():
	default:
	}
}
