package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// benchStore is what the benchmark needs from a history store: the domain
// contract plus bulk import and the linked SQLite version.
type benchStore interface {
	sessiondb.Store
	ImportSession(ctx context.Context, rec map[string]any) (bool, error)
	SQLiteVersion(ctx context.Context) (string, error)
}

// openBenchStore opens (creating) the SQLite history store at path with the
// given synchronous level ("NORMAL" or "FULL").
func openBenchStore(ctx context.Context, path, synchronous string) (benchStore, error) {
	st, err := sqlite.Open(ctx, path, sqlite.Options{Synchronous: synchronous})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// parseSynchronous maps the --synchronous flag to the store's option value.
func parseSynchronous(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "normal":
		return "NORMAL", nil
	case "full":
		return "FULL", nil
	}
	return "", sessiondb.Errorf(sessiondb.EINVALID, "--synchronous %q: want normal or full", s)
}

// storeBytes returns the total size of a SQLite file and its -wal, -shm and
// -journal companions. It stats by path only (never opens them: that could
// drop another connection's locks).
func storeBytes(path string) int64 {
	var n int64
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// removeStore deletes a SQLite file and its companions.
func removeStore(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
}

// storePath names a store file inside the benchmark folder.
func storePath(dir, name string) string { return filepath.Join(dir, name+".db") }
