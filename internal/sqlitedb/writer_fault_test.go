package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// waitPending returns once n calls are queued on w.
func waitPending(w *Writer, n int) {
	for {
		w.mu.Lock()
		k := len(w.pending)
		w.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// groupOf runs write(0..n-1) as one group commit, in that order: a first
// call holds the writer while the n calls queue one after another, so the
// caller that gets the connection next takes all n as one batch.
func groupOf(t *testing.T, w *Writer, n int, write func(i int) func(*Tx) error) []error {
	t.Helper()
	ctx := context.Background()
	hold, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- w.Do(ctx, func(tx *Tx) error { close(hold); <-release; return nil })
	}()
	<-hold
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Do(ctx, write(i))
		}()
		waitPending(w, i+1)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("holding write: %v", err)
	}
	wg.Wait()
	return errs
}

// insertGroup runs n writes of query with the arguments (i, usual) as one
// group commit (groupOf), but for write odd, whose second argument is
// oddValue: the one write of the group meant to fail.
func insertGroup(t *testing.T, w *Writer, n int, query string, usual any, odd int, oddValue any) []error {
	t.Helper()
	return groupOf(t, w, n, func(i int) func(*Tx) error {
		v := usual
		if i == odd {
			v = oddValue
		}
		return func(tx *Tx) error {
			_, err := tx.Exec(query, i, v)
			return err
		}
	})
}

// refuseMarked is a table whose trigger raises ROLLBACK on a row marked 1:
// SQLite abandons the whole transaction, not only the statement.
const refuseMarked = `CREATE TABLE t(id INTEGER PRIMARY KEY, mark INTEGER NOT NULL);
CREATE TRIGGER refuse BEFORE INSERT ON t WHEN NEW.mark = 1 BEGIN SELECT RAISE(ROLLBACK, 'marked row refused'); END;`

// faultWriter opens a writer on a fresh file named name, closed when the
// test ends, and creates schema in it.
func faultWriter(t *testing.T, name, schema string) *Writer {
	t.Helper()
	w, done := openWriter(t, filepath.Join(t.TempDir(), name))
	t.Cleanup(done)
	if err := w.Do(context.Background(), func(tx *Tx) error { return tx.ExecScript(schema) }); err != nil {
		t.Fatal(err)
	}
	return w
}

// execAlone runs one statement as a write of its own.
func execAlone(w *Writer, query string, args ...any) error {
	return w.Do(context.Background(), func(tx *Tx) error {
		_, err := tx.Exec(query, args...)
		return err
	})
}

// storedIDs returns the ids in table t.
func storedIDs(t *testing.T, w *Writer) map[int]bool {
	t.Helper()
	var list []int
	err := w.Do(context.Background(), func(tx *Tx) error {
		var err error
		list, err = Append(tx.Context(), tx, "SELECT id FROM t", nil, nil, Value[int])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for _, id := range list {
		ids[id] = true
	}
	return ids
}

// checkAcknowledged asserts that every call that succeeded has its row and
// every call that failed has none: no acknowledged write is lost and no
// write reported as failed is on disk (a retry would store it twice).
func checkAcknowledged(t *testing.T, errs []error, ids map[int]bool) {
	t.Helper()
	for i, err := range errs {
		switch {
		case err == nil && !ids[i]:
			t.Errorf("write %d succeeded but its row is missing", i)
		case err != nil && ids[i]:
			t.Errorf("write %d failed (%v) but its row is stored", i, err)
		}
	}
	for id := range ids {
		if id < 0 || id >= len(errs) {
			t.Errorf("row %d was written by no call", id)
		}
	}
}

// A trigger that raises ROLLBACK in the middle of a group commit undoes the
// whole transaction: every write of the group must fail with the trigger's
// error, and none may run outside the transaction afterwards.
func TestWriterGroupCommitWholeRollbackFailsEveryCall(t *testing.T) {
	w := faultWriter(t, "r.db", refuseMarked)
	const n, marked = 40, 17
	errs := insertGroup(t, w, n, "INSERT INTO t(id, mark) VALUES (?, ?)", 0, marked, 1)
	checkAcknowledged(t, errs, storedIDs(t, w))
	for i, err := range errs {
		if err == nil {
			t.Errorf("write %d succeeded although the group's transaction was rolled back", i)
			continue
		}
		if !strings.Contains(err.Error(), "marked row refused") || !IsConstraint(err) {
			t.Errorf("write %d: err = %v; want the trigger's constraint error", i, err)
		}
		if code := Code(err); code != sessiondb.ECONFLICT {
			t.Errorf("write %d: code %q; want conflict", i, code)
		}
	}
	// The writer is usable afterwards, in a transaction of its own.
	if err := execAlone(w, "INSERT INTO t(id, mark) VALUES (?, 0)", n); err != nil {
		t.Fatalf("write after the failed group: %v", err)
	}
	if ids := storedIDs(t, w); len(ids) != 1 || !ids[n] {
		t.Errorf("rows after the failed group = %v; want only %d", ids, n)
	}
}

// A write that fills the file (SQLITE_FULL, here from max_page_count) in
// the middle of a group commit: SQLite rolls the whole transaction back,
// and every call of the group must say so.
func TestWriterGroupCommitDiskFull(t *testing.T) {
	w := faultWriter(t, "f.db", "CREATE TABLE t(id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
	// Room for the small rows, not for the big one. The limit belongs to
	// the writer's connection and holds for its life.
	if err := w.Do(context.Background(), func(tx *Tx) error {
		var pages int
		if err := tx.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
			return err
		}
		return tx.ExecScript(fmt.Sprintf("PRAGMA max_page_count = %d", pages+8))
	}); err != nil {
		t.Fatal(err)
	}
	const n, big = 40, 23
	errs := insertGroup(t, w, n, "INSERT INTO t(id, body) VALUES (?, zeroblob(?))", 16, big, 1<<20)
	ids := storedIDs(t, w)
	checkAcknowledged(t, errs, ids)
	t.Logf("%d of %d writes stored after the full write", len(ids), n)
	if !IsFull(errs[big]) {
		t.Fatalf("the big write: err = %v; want SQLITE_FULL", errs[big])
	}
	for i, err := range errs {
		if err == nil {
			continue // SQLite may undo only the failing statement
		}
		if !IsFull(err) {
			t.Errorf("write %d: err = %v; want the SQLITE_FULL that lost it", i, err)
		}
		if code := Code(err); code != sessiondb.EINTERNAL {
			t.Errorf("write %d: code %q; want internal", i, code)
		}
	}
}

// A write function that ignores the error which rolled the transaction back
// and goes on writing must not get its later statements committed on their
// own: the Tx refuses them, and the call fails with the first error.
func TestWriterRefusesWritesAfterTransactionLost(t *testing.T) {
	w := faultWriter(t, "l.db", refuseMarked)
	var later error
	err := w.Do(context.Background(), func(tx *Tx) error {
		tx.Exec("INSERT INTO t(id, mark) VALUES (0, 0)")
		tx.Exec("INSERT INTO t(id, mark) VALUES (1, 1)") // error ignored on purpose
		_, later = tx.Exec("INSERT INTO t(id, mark) VALUES (2, 0)")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "marked row refused") {
		t.Errorf("Do = %v; want the trigger's error", err)
	}
	if later == nil {
		t.Errorf("a statement after the rollback ran")
	}
	if ids := storedIDs(t, w); len(ids) != 0 {
		t.Errorf("rows stored: %v; want none", ids)
	}
	if !errors.Is(later, err) && !strings.Contains(fmt.Sprint(later), "marked row refused") {
		t.Errorf("later statement's error = %v; want it to name the rollback", later)
	}
}

// A COMMIT that fails (here a deferred foreign key, checked only at commit)
// fails every write of the group, none of which may be stored.
func TestWriterGroupCommitFailedCommit(t *testing.T) {
	w := faultWriter(t, "c.db", `CREATE TABLE parent(id INTEGER PRIMARY KEY);
CREATE TABLE t(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);`)
	const n, orphan = 20, 7
	errs := insertGroup(t, w, n, "INSERT INTO t(id, parent) VALUES (?, ?)", nil, orphan, 999)
	checkAcknowledged(t, errs, storedIDs(t, w))
	for i, err := range errs {
		if !IsForeignKey(err) || Code(err) != sessiondb.EINVALID {
			t.Errorf("write %d: err = %v (code %q); want the commit's foreign key error, invalid", i, err, Code(err))
		}
	}
	if err := execAlone(w, "INSERT INTO t(id, parent) VALUES (?, NULL)", n); err != nil {
		t.Fatalf("write after the failed commit: %v", err)
	}
}
