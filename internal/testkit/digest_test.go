package testkit

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// TestDigestStore: each file's digest lands in its own field, an absent
// file's is zero, and a changed byte changes only its file's digest.
func TestDigestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	for suffix, body := range map[string]string{"": "main", "-wal": "frames"} {
		if err := os.WriteFile(path+suffix, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := DigestStore(t, path)
	want := StoreDigests{File: sha256.Sum256([]byte("main")), WAL: sha256.Sum256([]byte("frames"))}
	if d != want {
		t.Fatalf("DigestStore = %x, want %x", d, want)
	}
	if err := os.WriteFile(path+"-wal", []byte("frameS"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := DigestStore(t, path)
	if after.File != d.File || after.WAL == d.WAL || after.SHM != d.SHM || after.Journal != d.Journal {
		t.Fatalf("a changed WAL gave %x, from %x", after, d)
	}
}
