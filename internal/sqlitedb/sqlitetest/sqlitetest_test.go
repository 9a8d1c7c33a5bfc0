package sqlitetest

import (
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func TestQueryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (a TEXT, b INTEGER); INSERT INTO t VALUES ('x', 1), (NULL, 2)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rows := QueryFile(t, path, "SELECT a, b FROM t ORDER BY b")
	if len(rows) != 2 || rows[0][0] != "x" || rows[0][1] != int64(1) || rows[1][0] != nil {
		t.Fatalf("rows %v", rows)
	}
}

func TestQueryValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, "CREATE TABLE t (a TEXT)")
	ExecFile(t, path, "INSERT INTO t VALUES ('x'), ('y')")
	if v := QueryValue(t, path, "SELECT count(*) FROM t"); v != int64(2) {
		t.Fatalf("count = %#v", v)
	}
	if v := QueryValue(t, path, "SELECT a FROM t WHERE a = ?", "y"); v != "y" {
		t.Fatalf("a = %#v", v)
	}
}

func TestExecFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, "CREATE TABLE t (a TEXT)")
	ExecFile(t, path, "INSERT INTO t VALUES (?)", "\x1b[2J")
	if rows := QueryFile(t, path, "SELECT a FROM t"); len(rows) != 1 || rows[0][0] != "\x1b[2J" {
		t.Fatalf("rows %q", rows)
	}
}

func TestOpenAndExecAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "t.db")
	db := Open(t, path)
	ExecAll(t, db, "CREATE TABLE p (id TEXT PRIMARY KEY); CREATE TABLE c (p TEXT REFERENCES p(id))", "INSERT INTO p VALUES ('a')", "INSERT INTO c VALUES ('a')")
	if _, err := db.Exec("INSERT INTO c VALUES ('ghost')"); err == nil {
		t.Error("a row naming a missing parent was stored: foreign keys are off")
	}
	db.Close()
	if rows := QueryFile(t, path, "SELECT p FROM c"); len(rows) != 1 || rows[0][0] != "a" {
		t.Fatalf("rows %q", rows)
	}
}

func TestHoldWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, "CREATE TABLE t (a TEXT)")
	release := HoldWriteLock(t, path)
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO t VALUES ('x')"); sqlitedb.Code(err) != "busy" {
		t.Fatalf("a write under the held lock = %v, want busy", err)
	}
	release()
	release()
	if _, err := db.Exec("INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatalf("a write after release: %v", err)
	}
}
