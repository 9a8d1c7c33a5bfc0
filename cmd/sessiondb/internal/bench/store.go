package bench

import "path/filepath"

// storePath names a store file inside the benchmark folder.
func storePath(dir, name string) string { return filepath.Join(dir, name+".db") }
