//go:build unix

package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSidecarLinksRefused: a link (or a folder, or a FIFO) planted at a
// database's -wal, -shm or -journal name is refused by name before SQLite
// sees it, and the link's target is never written.
func TestSidecarLinksRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	openDB(t, db, "CREATE TABLE t (a); INSERT INTO t VALUES (1)").Close()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range sidecars {
		for _, kind := range []string{"link", "folder", "fifo"} {
			p := db + suffix
			var plant error
			switch kind {
			case "link":
				plant = os.Symlink(victim, p)
			case "folder":
				plant = os.Mkdir(p, 0o700)
			case "fifo":
				plant = syscall.Mkfifo(p, 0o600)
			}
			if plant != nil {
				t.Fatal(plant)
			}
			_, err := Open(Config{Path: db, MaxConns: 1})
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s at %s: Open = %v, want a refusal naming it", kind, suffix, err)
			}
			if _, _, err := CreateFile(db, 0o700, 0o600); err == nil {
				t.Errorf("%s at %s: CreateFile accepted it", kind, suffix)
			}
			os.Remove(p)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was chmodded: %v", fi.Mode())
	}
}
