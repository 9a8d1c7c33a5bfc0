package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestTighten: only a regular file's extra permission bits go; a link is
// refused and what it points at keeps its mode; nothing is loosened.
func TestTighten(t *testing.T) {
	planted := testkit.PlantLink(t, t.TempDir(), "link.db")
	if changed, err := Tighten(planted.Link, 0o600); changed || err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Tighten(link) = %v, %v; want a refusal naming the link", changed, err)
	}
	planted.Untouched(t)
	file := planted.Target
	if changed, err := Tighten(file, 0o600); !changed || err != nil {
		t.Errorf("Tighten(file) = %v, %v", changed, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	os.Chmod(file, 0o400)
	if changed, err := Tighten(file, 0o600); changed || err != nil {
		t.Errorf("Tighten of a stricter file = %v, %v", changed, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o400 {
		t.Errorf("a stricter file was loosened to %v", fi.Mode().Perm())
	}
}

// TestCreateFileLeavesExistingAlone: an existing file keeps its mode and a
// planted link is neither followed nor replaced.
func TestCreateFileLeavesExistingAlone(t *testing.T) {
	planted := testkit.PlantLink(t, t.TempDir(), "state.db")
	for _, p := range []string{planted.Target, planted.Link} {
		if created, _, err := CreateFile(p, 0o700, 0o600); created || err != nil {
			t.Errorf("CreateFile(%s) = %v, %v", p, created, err)
		}
	}
	planted.Untouched(t)
	if fi, _ := os.Lstat(planted.Link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
}

// TestCreateFileRefusesALinkToNothing: a link whose target is missing is
// refused, naming both, and nothing is created where it points (SQLite
// would create it there with the umask's mode).
func TestCreateFileRefusesALinkToNothing(t *testing.T) {
	dir := t.TempDir()
	link, target := filepath.Join(dir, "state.db"), filepath.Join(dir, "elsewhere.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	created, _, err := CreateFile(link, 0o700, 0o600)
	if created || err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), target) {
		t.Errorf("CreateFile through a link to nothing = %v, %v; want an error naming the link's target", created, err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// TestOpenReaderCreatesNothing: reading a WAL-mode database, a damaged file
// and a text file leaves the folder as it was.
func TestOpenReaderCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	// The last connection to close checkpoints and removes -wal and -shm.
	openDB(t, good, "CREATE TABLE t(x); INSERT INTO t VALUES (1)", "PRAGMA journal_mode=WAL").Close()
	text := filepath.Join(dir, "text.db")
	os.WriteFile(text, []byte("hello"), 0o600)
	list := func() []string {
		des, _ := os.ReadDir(dir)
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	before := list()
	probe := func(db *sql.DB) error {
		_, err := db.ExecContext(context.Background(), "SELECT count(*) FROM sqlite_master")
		return err
	}
	r, err := OpenReader(Config{Path: good}, probe)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := r.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Errorf("read %d, %v", n, err)
	}
	r.Close()
	if _, err := OpenReader(Config{Path: text}, probe); !IsNotADB(err) {
		t.Errorf("OpenReader(text) = %v; want SQLITE_NOTADB", err)
	}
	// mode=ro by the owner may leave -wal/-shm of a sound WAL store (they
	// are the owner's); a file that is not a database gets none.
	after := slices.DeleteFunc(list(), func(n string) bool { return strings.HasPrefix(n, "good.db-") })
	if !slices.Equal(before, after) {
		t.Errorf("folder %v, then %v", before, after)
	}
	if d := DescribeNonDatabase(text); !strings.Contains(d, `is not a SQLite database (it starts with "hello")`) {
		t.Errorf("DescribeNonDatabase = %q", d)
	}
}
