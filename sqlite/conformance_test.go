package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/storetest"
)

// TestConformance runs the backend-neutral suite against a fresh state.db
// file per case, under whichever driver this build links.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.Store {
			t.Helper()
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), sqlite.Options{Now: now})
			if err != nil {
				t.Fatalf("sqlite.Open: %v", err)
			}
			return s
		},
		SetMessageColumn: setMessageColumn,
	})
}

// setMessageColumn writes raw text into one column of one message through a
// connection of its own, as another program sharing the file would.
func setMessageColumn(t *testing.T, s sessiondb.Store, id int64, column, value string) {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: s.(*sqlite.Store).Path(), Pragmas: []string{"PRAGMA busy_timeout=5000"}, MaxConns: 1})
	if err != nil {
		t.Fatalf("open raw connection: %v", err)
	}
	defer db.Close()
	res, err := db.ExecContext(context.Background(), "UPDATE messages SET "+column+" = ? WHERE id = ?", value, id)
	if err != nil {
		t.Fatalf("set %s of message %d: %v", column, id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("set %s of message %d: %d rows changed", column, id, n)
	}
}

func TestMessageWaiter(t *testing.T) {
	storetest.RunMessageWaiter(t, storetest.WaiterHarness{Open: func(t *testing.T, now sessiondb.Clock) (sessiondb.Store, sessiondb.Store) {
		path := filepath.Join(t.TempDir(), "state.db")
		a, err := sqlite.Open(context.Background(), path, sqlite.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		b, err := sqlite.Open(context.Background(), path, sqlite.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}})
}

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

// TestSubagentConformance runs the subagent suite on a fresh janebot
// state.sqlite per case.
func TestSubagentConformance(t *testing.T) {
	storetest.RunSubagents(t, storetest.SubagentHarness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.SubagentService {
			return openSubagents(t, filepath.Join(t.TempDir(), ".janebot", "state.sqlite"), now)
		},
		Reopen: func(t *testing.T, s sessiondb.SubagentService, now sessiondb.Clock) sessiondb.SubagentService {
			return openSubagents(t, s.(*sqlite.Subagents).Path(), now)
		},
	})
}

func openSubagents(t testing.TB, path string, now sessiondb.Clock) *sqlite.Subagents {
	t.Helper()
	s, err := sqlite.OpenSubagents(context.Background(), path, sqlite.SubagentOptions{Now: now})
	if err != nil {
		t.Fatalf("OpenSubagents(%s): %v", path, err)
	}
	return s
}
