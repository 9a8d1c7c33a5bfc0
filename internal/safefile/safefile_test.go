//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// entries lists a folder's names, to prove no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(p, []byte("old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create("--output", p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half of the new")
	// Until Commit the old content is all a reader sees.
	if b, _ := os.ReadFile(p); string(b) != "old content\n" {
		t.Fatalf("before commit: %q", b)
	}
	f.Abort()
	if b, _ := os.ReadFile(p); string(b) != "old content\n" {
		t.Fatalf("after abort: %q", b)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("abort left %v", got)
	}
	if err := WriteFile("--output", p, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if b, _ := os.ReadFile(p); err != nil || string(b) != "new\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after write: %q, mode %v, %v", b, fi.Mode(), err)
	}
	if err := WriteFile("status", p, []byte("shared\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode())
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("writes left %v", got)
	}
}

func TestRefusesLinksAndFolders(t *testing.T) {
	dir := t.TempDir()
	planted := testkit.PlantLink(t, dir, "link")
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"link to a file", planted.Link, "symbolic link"},
		{"dangling link", dangling, "symbolic link"},
		{"folder", dir, "is a folder"},
		{"fifo", fifo, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFile("--output", tc.path, []byte("attack"), 0o600)
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--output") {
				t.Fatalf("WriteFile = %v, want invalid %q", err, tc.want)
			}
			if tc.path != dir {
				_, err := ReadFile("status", tc.path, 100)
				if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
					t.Fatalf("ReadFile = %v, want invalid", err)
				}
			}
		})
	}
	planted.Untouched(t)
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dangling link's target was created: %v", err)
	}
}

// TestCommitReplacesALinkPlantedMeanwhile: a link planted after Create is
// replaced by the rename, and its target is left alone.
func TestCommitReplacesALinkPlantedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	f, err := Create("--output", p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	planted := testkit.PlantLink(t, dir, "out")
	f.WriteString("mine")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(p)
	b, _ := os.ReadFile(p)
	if fi.Mode()&fs.ModeSymlink != 0 || string(b) != "mine" {
		t.Fatalf("path %v %q", fi.Mode(), b)
	}
	planted.Untouched(t)
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	if _, err := ReadFile("status", p, 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	os.WriteFile(p, []byte("0123456789"), 0o600)
	if b, err := ReadFile("status", p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile("status", p, 9); sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "larger than 9") {
		t.Fatalf("over the limit: %v", err)
	}
}
