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

// schemaHandles is a control-plane harness: Open opens a store with open
// in a fresh schema of the test server, Reopen a second one (another pool,
// as another host would hold) on the schema of s.
func schemaHandles[S interface{ Close() error }](open func(context.Context, string, postgres.Options) (S, error), schemaOf func(s S) string) storetest.Handles[S] {
	openIn := func(t *testing.T, url, schema string, now sessiondb.Clock) S {
		t.Helper()
		s, err := open(context.Background(), url, postgres.Options{Schema: schema, Now: now, MaxConns: 4})
		if err != nil {
			t.Fatalf("open in schema %s: %v", schema, err)
		}
		return s
	}
	return storetest.Handles[S]{
		Open: func(t *testing.T, now sessiondb.Clock) S {
			url := pgtest.URL(t)
			return openIn(t, url, pgtest.Schema(t, url), now)
		},
		Reopen: func(t *testing.T, s S, now sessiondb.Clock) S {
			return openIn(t, pgtest.URL(t), schemaOf(s), now)
		},
	}
}

// TestSubagentConformance runs the subagent store's suite.
func TestSubagentConformance(t *testing.T) {
	storetest.RunSubagents(t, schemaHandles(func(ctx context.Context, url string, o postgres.Options) (sessiondb.SubagentService, error) {
		return postgres.OpenSubagents(ctx, url, o)
	}, func(s sessiondb.SubagentService) string { return s.(*postgres.Subagents).Schema() }))
}

// centralHarness opens the central registry.
func centralHarness() storetest.RegistryHarness {
	return schemaHandles(func(ctx context.Context, url string, o postgres.Options) (sessiondb.Registry, error) {
		return postgres.OpenCentral(ctx, url, o)
	}, func(r sessiondb.Registry) string { return r.(*postgres.Central).Schema() })
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
