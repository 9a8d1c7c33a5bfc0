package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// Precious is what the target of a planted link holds.
const Precious = "precious"

// PlantedLink is a symbolic link planted where a command will write, and
// the file it points at: a test checks that the command refuses the link
// and leaves the target alone.
type PlantedLink struct {
	Link, Target string
}

// PlantLink writes dir/victim (Precious, mode 0644) and plants a symbolic
// link to it at dir/name.
func PlantLink(t testing.TB, dir, name string) PlantedLink {
	t.Helper()
	p := PlantedLink{Link: filepath.Join(dir, name), Target: filepath.Join(dir, "victim")}
	if err := os.WriteFile(p.Target, []byte(Precious), 0o644); err != nil {
		t.Fatal(err)
	}
	// Whatever the umask took away: Untouched expects 0644.
	if err := os.Chmod(p.Target, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p.Target, p.Link); err != nil {
		t.Fatal(err)
	}
	return p
}

// Untouched fails t unless the link's target still holds Precious with
// mode 0644: nothing was written or chmodded through the link.
func (p PlantedLink) Untouched(t testing.TB) {
	t.Helper()
	if b, err := os.ReadFile(p.Target); err != nil || string(b) != Precious {
		t.Errorf("the link's target now holds %.80q (%v)", b, err)
	}
	if fi, err := os.Stat(p.Target); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was chmodded (%v, %v)", fi.Mode(), err)
	}
}
