package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func openWriter(t *testing.T, path string) (*Writer, func()) {
	t.Helper()
	db := openDB(t, path, "", "PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(conn)
	return w, func() { w.Close(); db.Close() }
}

func TestWriterGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "w.db")
	w, done := openWriter(t, path)
	defer done()
	var commits, writes int
	var mu sync.Mutex
	w.OnCommit = func(n int) { mu.Lock(); commits++; writes += n; mu.Unlock() }
	if err := w.Do(ctx, func(tx *Tx) error {
		return tx.ExecScript("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = w.Do(ctx, func(tx *Tx) error {
				if i%10 == 0 {
					_, err := tx.Exec("INSERT INTO t(id, v) VALUES (?, NULL)", i) // NOT NULL fails
					return err
				}
				_, err := tx.Exec("INSERT INTO t(id, v) VALUES (?, ?)", i, fmt.Sprint(i))
				return err
			})
		}(i)
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Errorf("write %d: err=%v", i, err)
		}
		if err != nil {
			failed++
		}
	}
	var rows int
	if err := w.Do(ctx, func(tx *Tx) error { return tx.QueryRow("SELECT count(*) FROM t").Scan(&rows) }); err != nil {
		t.Fatal(err)
	}
	if rows != n-failed {
		t.Fatalf("rows = %d, want %d", rows, n-failed)
	}
	mu.Lock()
	defer mu.Unlock()
	if writes != n-failed+2 { // + create + count
		t.Errorf("OnCommit saw %d writes, want %d", writes, n-failed+2)
	}
	t.Logf("%d writes in %d commits", writes, commits)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
}

func TestWriterBusyBudget(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	w1, done1 := openWriter(t, path)
	defer done1()
	w2, done2 := openWriter(t, path)
	defer done2()
	if err := w1.Do(ctx, func(tx *Tx) error { return tx.ExecScript("CREATE TABLE t(x)") }); err != nil {
		t.Fatal(err)
	}
	w2.Budget = 300 * 1e6 // 300ms
	hold := make(chan struct{})
	release := make(chan struct{})
	go w1.Do(ctx, func(tx *Tx) error {
		tx.Exec("INSERT INTO t VALUES (1)")
		close(hold)
		<-release
		return nil
	})
	<-hold
	err := w2.Do(ctx, func(tx *Tx) error { _, err := tx.Exec("INSERT INTO t VALUES (2)"); return err })
	close(release)
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Fatalf("err = %v (code %q), want busy", err, sessiondb.ErrorCode(err))
	}
	var se *sessiondb.Error
	if !errors.As(err, &se) || !IsBusy(err) {
		t.Errorf("busy error should wrap the driver's busy error: %v", err)
	}
}

func TestURIEscapesHostileNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a?mode=ro.db", "b#frag.db", "c%41.db", "d e.db"} {
		path := filepath.Join(dir, name)
		w, done := openWriter(t, path)
		if err := w.Do(context.Background(), func(tx *Tx) error { return tx.ExecScript("CREATE TABLE t(x); INSERT INTO t VALUES (1);") }); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		done()
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: database not written at the literal path (%v)", name, err)
		}
	}
}
