package bench

import (
	"os"
	"path/filepath"
)

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
