package testkit

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"testing"
)

// StoreDigests are the SHA-256 digests of a SQLite store file and of its
// companions, zero where a file is absent: what a test compares before and
// after something that must not write the store.
type StoreDigests struct {
	File, WAL, SHM, Journal [32]byte
}

// DigestStore hashes the store at path and its -wal, -shm and -journal
// files.
func DigestStore(t testing.TB, path string) StoreDigests {
	t.Helper()
	var d StoreDigests
	for suffix, sum := range map[string]*[32]byte{"": &d.File, "-wal": &d.WAL, "-shm": &d.SHM, "-journal": &d.Journal} {
		b, err := os.ReadFile(path + suffix)
		switch {
		case err == nil:
			*sum = sha256.Sum256(b)
		case !errors.Is(err, fs.ErrNotExist):
			t.Fatal(err)
		}
	}
	return d
}
