package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// batchFile is a database file written through a batch writer whose
// connections the test counts and can hold up or fail.
type batchFile struct {
	t    *testing.T
	path string
	w    *Writer

	mu         sync.Mutex
	connects   int
	open       int // connections connected and not yet released
	entered    chan struct{}
	gate       chan struct{} // when set, the next connect waits for it
	connectErr error         // when set, the next connect fails with it
	releaseErr error         // when set, the next release fails with it
	commits    []int
}

func newBatchFile(t *testing.T) *batchFile {
	t.Helper()
	f := &batchFile{t: t, path: filepath.Join(t.TempDir(), "b.db")}
	if _, _, err := CreateFile(f.path, 0o700, 0o600); err != nil {
		t.Fatal(err)
	}
	f.w = NewBatchWriter(f.connect)
	f.w.OnCommit = func(n int) { f.mu.Lock(); f.commits = append(f.commits, n); f.mu.Unlock() }
	f.do(t.Context(), "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	return f
}

func (f *batchFile) connect(ctx context.Context) (*sql.Conn, func() error, error) {
	f.mu.Lock()
	f.connects++
	gate, fail := f.gate, f.connectErr
	f.gate, f.connectErr = nil, nil
	f.mu.Unlock()
	if gate != nil {
		f.entered <- struct{}{}
		<-gate
	}
	if fail != nil {
		return nil, nil, fail
	}
	db, err := Open(Config{Path: f.path, MaxConns: 1, BusyTimeout: time.Second, Pragmas: []string{"PRAGMA journal_mode=DELETE"}})
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	f.mu.Lock()
	f.open++
	f.mu.Unlock()
	return conn, func() error {
		err := db.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.open--
		if f.releaseErr != nil {
			err, f.releaseErr = f.releaseErr, nil
		}
		return err
	}, nil
}

func (f *batchFile) do(ctx context.Context, query string, args ...any) error {
	return f.w.Do(ctx, func(tx *Tx) error {
		_, err := tx.Exec(query, args...)
		return err
	})
}

// state returns the connects so far, the connections still open and the
// size of each commit.
func (f *batchFile) state() (connects, open int, commits []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects, f.open, append([]int(nil), f.commits...)
}

func (f *batchFile) rows() string {
	f.t.Helper()
	db, err := Open(Config{Path: f.path, ReadOnly: true})
	if err != nil {
		f.t.Fatal(err)
	}
	defer db.Close()
	var s sql.NullString
	if err := db.QueryRow("SELECT group_concat(id || '=' || v, ' ') FROM (SELECT * FROM t ORDER BY id)").Scan(&s); err != nil {
		f.t.Fatal(err)
	}
	return s.String
}

// TestBatchWriterConnectsPerBatch: a batch writer holds a connection only
// for one transaction; writes queued while a batch connects share its
// commit, each failing alone; the same statement runs again on the next
// connection.
func TestBatchWriterConnectsPerBatch(t *testing.T) {
	ctx := t.Context()
	f := newBatchFile(t)
	for i := 1; i <= 2; i++ {
		if err := f.do(ctx, "INSERT INTO t(id, v) VALUES (?, ?)", i, "one"); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if connects, open, _ := f.state(); connects != 1+i || open != 0 {
			t.Fatalf("after write %d: %d connects, %d open; want %d, 0 (one per batch, released before Do returns)", i, connects, open, 1+i)
		}
	}

	// The next batch waits in its connect while four more writes queue.
	f.mu.Lock()
	f.entered, f.gate = make(chan struct{}), make(chan struct{})
	gate := f.gate
	f.mu.Unlock()
	errs := make([]error, 5)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = f.do(ctx, "INSERT INTO t(id, v) VALUES (10, 'a')") }()
	<-f.entered
	for i := 1; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 3 {
				errs[i] = f.do(ctx, "INSERT INTO t(id, v) VALUES (13, NULL)") // NOT NULL fails
				return
			}
			errs[i] = f.do(ctx, "INSERT INTO t(id, v) VALUES (?, 'a')", 10+i)
		}()
	}
	testkit.WaitFor(t, "five writes queued", func() bool { return f.w.Queued() == 5 })
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if (i == 3) != (err != nil) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	connects, open, commits := f.state()
	if connects != 4 || open != 0 || commits[len(commits)-1] != 4 {
		t.Fatalf("%d connects, %d open, commits %v; want 4, 0 and a last commit of the 4 writes that held", connects, open, commits)
	}
	if got := f.rows(); got != "1=one 2=one 10=a 11=a 12=a 14=a" {
		t.Fatalf("rows %q", got)
	}
}

// TestBatchWriterConnectAndReleaseErrors: a failed connect fails the write
// with its error and the next write connects again; a failed release is
// reported with the write it followed, which is committed.
func TestBatchWriterConnectAndReleaseErrors(t *testing.T) {
	ctx := t.Context()
	f := newBatchFile(t)
	f.connectErr = sessiondb.Errorf(sessiondb.ENOTFOUND, "the file went away")
	err := f.do(ctx, "INSERT INTO t(id, v) VALUES (1, 'x')")
	if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND || !strings.Contains(err.Error(), "went away") {
		t.Fatalf("write with a failing connect: %v; want the connect's not_found", err)
	}
	f.releaseErr = errors.New("close failed")
	err = f.do(ctx, "INSERT INTO t(id, v) VALUES (2, 'y')")
	if err == nil || !strings.Contains(err.Error(), "close failed") {
		t.Fatalf("write with a failing release: %v; want the release's error", err)
	}
	if err := f.do(ctx, "INSERT INTO t(id, v) VALUES (3, 'z')"); err != nil {
		t.Fatal(err)
	}
	if connects, open, _ := f.state(); connects != 4 || open != 0 {
		t.Fatalf("%d connects, %d open; want 4, 0", connects, open)
	}
	if got := f.rows(); got != "2=y 3=z" {
		t.Fatalf("rows %q; want the write before the failed release kept, none from the failed connect", got)
	}
}
