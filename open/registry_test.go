package open

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// The registry and subagent openers refuse what they cannot open, by code,
// and create nothing they were told must exist.
func TestRegistryAndSubagentsOpeners(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		open func(string, Options) error
	}{
		{"registry", func(loc string, o Options) error {
			r, err := Registry(ctx, loc, o)
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"subagents", func(loc string, o Options) error {
			s, err := Subagents(ctx, loc, o)
			if err == nil {
				s.Close()
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing := filepath.Join(dir, tc.name, "missing.db")
			if err := tc.open(missing, Options{MustExist: true}); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
				t.Fatalf("missing: %v", err)
			}
			if _, err := os.Stat(missing); !os.IsNotExist(err) {
				t.Fatalf("a refused open created %s", missing)
			}
			for _, loc := range []string{"", "postgres://localhost/x"} {
				if err := tc.open(loc, Options{}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
					t.Fatalf("%q: %v", loc, err)
				}
			}
			made := filepath.Join(dir, tc.name, "made.db")
			if err := tc.open(made, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := tc.open(made, Options{MustExist: true}); err != nil {
				t.Fatalf("reopen: %v", err)
			}
		})
	}
}
