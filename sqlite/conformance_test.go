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
	switch column {
	case "tool_calls", "reasoning_details", "codex_reasoning_items", "content":
	default:
		t.Fatalf("setMessageColumn: column %q not allowed", column)
	}
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
