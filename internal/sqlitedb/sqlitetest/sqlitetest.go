// Package sqlitetest reads and writes SQLite files in tests: it keeps the driver out of
// internal/testkit, so the conformance suite (storetest) can share testkit's
// clock without linking SQLite into every backend's tests.
package sqlitetest

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// QueryFile runs q on the SQLite file at path through a fresh read-only
// connection and returns every row, text columns as strings.
func QueryFile(t testing.TB, path, q string, args ...any) [][]any {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, ReadOnly: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, err := sqlitedb.Append(context.Background(), db, q, args, nil, sqlitedb.Values)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// QueryValue runs q like QueryFile and returns the one value it must
// answer: a row of one column; anything else ends the test.
func QueryValue(t testing.TB, path, q string, args ...any) any {
	t.Helper()
	rows := QueryFile(t, path, q, args...)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: got %v, want one value", q, rows)
	}
	return rows[0][0]
}

// ExecFile runs statement q with args on the SQLite file at path through a
// fresh read-write connection, as another program writing the file would
// (Hermes, or an attacker with write access): tests use it to plant rows
// that no API of ours would store.
func ExecFile(t testing.TB, path, q string, args ...any) {
	t.Helper()
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA busy_timeout=5000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
