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

func TestExecFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, "CREATE TABLE t (a TEXT)")
	ExecFile(t, path, "INSERT INTO t VALUES (?)", "\x1b[2J")
	if rows := QueryFile(t, path, "SELECT a FROM t"); len(rows) != 1 || rows[0][0] != "\x1b[2J" {
		t.Fatalf("rows %q", rows)
	}
}
