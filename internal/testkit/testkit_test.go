package testkit

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
	c.Set(start.Add(-time.Hour))
	if want := start.Add(-time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after Set: %v, want %v", c.Now(), want)
	}
}

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("%d bytes, want 800", n)
	}
}

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

func TestEnvInt(t *testing.T) {
	const name = "TESTKIT_ENVINT"
	for _, tc := range []struct {
		val  string
		want int
	}{{"", 7}, {"12", 12}, {"0", 7}, {"-3", 7}, {"x", 7}} {
		t.Setenv(name, tc.val)
		if got := EnvInt(name, 7); got != tc.want {
			t.Errorf("%s=%q: got %d, want %d", name, tc.val, got, tc.want)
		}
	}
}
