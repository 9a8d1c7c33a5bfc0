package filesig

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSigNoticesChanges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if s := Of(p); s.Found() || s != (Sig{}) {
		t.Fatalf("missing file: %+v", s)
	}
	if err := os.WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := Of(p)
	if !a.Found() || a != Of(p) {
		t.Fatalf("unchanged file gives different sigs: %+v", a)
	}
	if err := os.WriteFile(p, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if Of(p) == a {
		t.Fatal("a size change went unnoticed")
	}
	b := Of(p)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if Of(p) == b {
		t.Fatal("an mtime change went unnoticed")
	}
}
