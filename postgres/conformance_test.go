package postgres_test

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openStore opens a store in a fresh schema of the test server.
func openStore(t *testing.T, o postgres.Options) (*postgres.Store, string) {
	t.Helper()
	url := pgtest.URL(t)
	o.Schema = pgtest.Schema(t, url)
	if o.MaxConns == 0 {
		o.MaxConns = 4
	}
	s, err := postgres.Open(context.Background(), url, o)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	return s, url
}

// TestConformance runs the backend-neutral suite against a fresh schema
// per case.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.Store {
			t.Helper()
			s, _ := openStore(t, postgres.Options{Now: now})
			return s
		},
		SetMessageColumn: setMessageColumn,
	})
}

// setMessageColumn writes raw text into one column of one message through
// a connection of its own, as another program sharing the database would.
func setMessageColumn(t *testing.T, s sessiondb.Store, id int64, column, value string) {
	t.Helper()
	url := pgtest.URL(t)
	pgtest.Exec(t, pgtest.WithSearchPath(url, s.(*postgres.Store).Schema()), "UPDATE messages SET "+column+" = $1 WHERE id = $2", value, id)
}

// TestSubagentConformance runs the subagent store's suite against a fresh
// schema per case; Reopen is a second store (another pool) on the schema.
func TestSubagentConformance(t *testing.T) {
	open := func(t *testing.T, url, schema string, now sessiondb.Clock) *postgres.Subagents {
		t.Helper()
		s, err := postgres.OpenSubagents(context.Background(), url, postgres.Options{Schema: schema, Now: now, MaxConns: 4})
		if err != nil {
			t.Fatalf("postgres.OpenSubagents: %v", err)
		}
		return s
	}
	storetest.RunSubagents(t, storetest.SubagentHarness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.SubagentService {
			url := pgtest.URL(t)
			return open(t, url, pgtest.Schema(t, url), now)
		},
		Reopen: func(t *testing.T, s sessiondb.SubagentService, now sessiondb.Clock) sessiondb.SubagentService {
			return open(t, pgtest.URL(t), s.(*postgres.Subagents).Schema(), now)
		},
	})
}

// centralHarness opens the central registry in a fresh schema per case;
// Reopen is a second store (another pool, as another host would hold) on
// the schema.
func centralHarness() storetest.RegistryHarness {
	open := func(t *testing.T, url, schema string, now sessiondb.Clock) *postgres.Central {
		t.Helper()
		c, err := postgres.OpenCentral(context.Background(), url, postgres.Options{Schema: schema, Now: now, MaxConns: 4})
		if err != nil {
			t.Fatalf("postgres.OpenCentral: %v", err)
		}
		return c
	}
	return storetest.RegistryHarness{
		Open: func(t *testing.T, now sessiondb.Clock) sessiondb.Registry {
			url := pgtest.URL(t)
			return open(t, url, pgtest.Schema(t, url), now)
		},
		Reopen: func(t *testing.T, r sessiondb.Registry, now sessiondb.Clock) sessiondb.Registry {
			return open(t, pgtest.URL(t), r.(*postgres.Central).Schema(), now)
		},
	}
}

// TestRegistryConformance runs the central registry's suite.
func TestRegistryConformance(t *testing.T) { storetest.RunRegistry(t, centralHarness()) }

// TestHostLeases runs the host lease suite, which the PostgreSQL registry
// implements for host daemons on several machines.
func TestHostLeases(t *testing.T) { storetest.RunHostLeases(t, centralHarness()) }

// TestMessageWaiterConformance runs the change-notification suite with two
// pools on one schema.
func TestMessageWaiterConformance(t *testing.T) {
	storetest.RunMessageWaiter(t, storetest.WaiterHarness{Open: func(t *testing.T, now sessiondb.Clock) (sessiondb.Store, sessiondb.Store) {
		a, url := openStore(t, postgres.Options{Now: now})
		b, err := postgres.Open(context.Background(), url, postgres.Options{Schema: a.Schema(), MaxConns: 2, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}})
}
