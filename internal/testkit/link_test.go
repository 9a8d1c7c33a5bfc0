package testkit

import (
	"os"
	"testing"
)

// recorder is a testing.TB that notes failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

// TestPlantLink: the link points at the target, and Untouched fails once
// anything is written or chmodded through the link, not before.
func TestPlantLink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(link string) error
		fails bool
	}{
		{"left alone", func(string) error { return nil }, false},
		{"written through", func(link string) error { return os.WriteFile(link, []byte("attack"), 0o644) }, true},
		{"chmodded through", func(link string) error { return os.Chmod(link, 0o600) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlantLink(t, t.TempDir(), "out.txt")
			if to, err := os.Readlink(p.Link); err != nil || to != p.Target {
				t.Fatalf("link points at %q (%v), want %q", to, err, p.Target)
			}
			if err := tc.spoil(p.Link); err != nil {
				t.Fatal(err)
			}
			r := &recorder{TB: t}
			p.Untouched(r)
			if r.failed != tc.fails {
				t.Fatalf("Untouched failed: %v, want %v", r.failed, tc.fails)
			}
		})
	}
}
