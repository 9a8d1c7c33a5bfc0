package sqlitetest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// Open opens a plain pool of one connection on the SQLite file at path
// (creating its folder, 0700), bypassing every store of ours, as another
// program writing the file would: tests build the files other programs
// leave with it. Foreign keys are on; the pool closes when t ends.
func Open(t testing.TB, path string) *sql.DB {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1, Pragmas: []string{"PRAGMA busy_timeout=5000", "PRAGMA foreign_keys=ON"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ExecAll runs each statement (or script) on db in order; the first that
// fails ends the test, naming the start of the statement.
func ExecAll(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			s = strings.TrimSpace(s)
			t.Fatalf("%s: %v", s[:min(len(s), 80)], err)
		}
	}
}

// HoldWriteLock takes the write lock of the SQLite file at path (BEGIN
// IMMEDIATE on a connection of its own), as another process in the middle
// of a write would, and holds it until release is called or t ends.
func HoldWriteLock(t testing.TB, path string) (release func()) {
	t.Helper()
	db := Open(t, path)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}
