package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/storetest"
)

// TestRegistryConformance runs the control plane's registry suite on a
// fresh central file per case, under whichever driver this build links.
func TestRegistryConformance(t *testing.T) {
	storetest.RunRegistry(t, storetest.RegistryHarness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.Registry {
			return openCentral(t, filepath.Join(t.TempDir(), "v2.db"), now)
		},
		Reopen: func(t *testing.T, r sessiondb.Registry, now sessiondb.Clock) sessiondb.Registry {
			return openCentral(t, r.(*sqlite.Central).Path(), now)
		},
	})
}

func openCentral(t testing.TB, path string, now sessiondb.Clock) *sqlite.Central {
	t.Helper()
	c, err := sqlite.OpenCentral(context.Background(), path, sqlite.CentralOptions{Now: now})
	if err != nil {
		t.Fatalf("OpenCentral(%s): %v", path, err)
	}
	return c
}
