package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// openDB creates the database file at path (0600, its folder 0700),
// opens a pool of one connection on it with pragmas, closed when the test
// ends, and runs script in it ("" runs nothing).
func openDB(t testing.TB, path, script string, pragmas ...string) *sql.DB {
	t.Helper()
	if _, _, err := CreateFile(path, 0o700, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Config{Path: path, MaxConns: 1, Pragmas: pragmas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if script != "" {
		if _, err := db.Exec(script); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// openPool opens a database whose table t holds x = 1 to 5.
func openPool(t *testing.T) *sql.DB {
	return openDB(t, filepath.Join(t.TempDir(), "rows.db"), "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3), (4), (5)")
}

// xs collects column x of every row Each hands out.
func xs(ctx context.Context, q Querier, query string, args ...any) ([]int, error) {
	var out []int
	err := Each(ctx, q, query, args, func(r Row) error {
		var x int
		err := r.Scan(&x)
		out = append(out, x)
		return err
	})
	return out, err
}

// Each works the same on every kind of handle a caller may hold.
func TestEachOnEveryQuerier(t *testing.T) {
	ctx := context.Background()
	db := openPool(t)
	want := []int{2, 3, 4}
	const q = "SELECT x FROM t WHERE x BETWEEN ? AND ? ORDER BY x"
	check := func(name string, got []int, err error) {
		t.Helper()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}

	got, err := xs(ctx, db, q, 2, 4)
	check("*sql.DB", got, err)

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err = xs(ctx, conn, q, 2, 4)
	check("*sql.Conn", got, err)
	conn.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = xs(ctx, tx, q, 2, 4)
	check("*sql.Tx", got, err)
	tx.Rollback()

	conn, err = db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(conn)
	defer w.Close()
	err = w.Do(ctx, func(tx *Tx) error {
		got, err = xs(tx.Context(), tx, q, 2, 4)
		return err
	})
	check("*Tx", got, err)
}

// Append adds one value per row after what dst holds; with no rows it
// gives back dst as it was (nil stays nil, empty stays empty), and on an
// error nil with the error, the rows closed.
func TestAppend(t *testing.T) {
	ctx := context.Background()
	db := openPool(t)
	got, err := Append(ctx, db, "SELECT x FROM t WHERE x > ? ORDER BY x", []any{3}, []int{9}, Value[int])
	if err != nil || !slices.Equal(got, []int{9, 4, 5}) {
		t.Errorf("Append after [9] = %v, %v; want [9 4 5]", got, err)
	}
	none, err := Append(ctx, db, "SELECT x FROM t WHERE x > 5", nil, nil, Value[int])
	if err != nil || none != nil {
		t.Errorf("no rows into nil = %#v, %v; want nil", none, err)
	}
	empty, err := Append(ctx, db, "SELECT x FROM t WHERE x > 5", nil, []int{}, Value[int])
	if err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("no rows into [] = %#v, %v; want an empty slice", empty, err)
	}
	stop := errors.New("enough")
	got, err = Append(ctx, db, "SELECT x FROM t ORDER BY x", nil, []int{9}, func(r Row) (int, error) {
		x, err := Value[int](r)
		if x == 2 {
			return 0, stop
		}
		return x, err
	})
	if err != stop || got != nil {
		t.Errorf("scan error: %v, %v; want nil and the scan's own error", got, err)
	}
	if _, err := Append(ctx, db, "SELECT 'not a number' FROM t", nil, nil, Value[int]); err == nil {
		t.Errorf("Value's scan error not reported")
	}
	if n := db.Stats().InUse; n != 0 {
		t.Errorf("%d connections still in use after errors", n)
	}
}

// An error from the row function stops the walk, comes back as it is, and
// the rows are closed: the pool's one connection is free again.
func TestEachStopsAndClosesOnRowError(t *testing.T) {
	ctx := context.Background()
	db := openPool(t)
	stop := errors.New("enough")
	var seen []int
	err := Each(ctx, db, "SELECT x FROM t ORDER BY x", nil, func(r Row) error {
		var x int
		if err := r.Scan(&x); err != nil {
			return err
		}
		seen = append(seen, x)
		if x == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("err = %v; want the row function's own error", err)
	}
	if !slices.Equal(seen, []int{1, 2}) {
		t.Errorf("rows seen = %v; want [1 2]", seen)
	}
	if n := db.Stats().InUse; n != 0 {
		t.Errorf("%d connections still in use: the rows were not closed", n)
	}
}

// Errors of the query, of a scan and of stepping (here an overflow SQLite
// meets only on the third row) all reach the caller.
func TestEachReportsEveryError(t *testing.T) {
	ctx := context.Background()
	db := openPool(t)
	if _, err := xs(ctx, db, "SELECT x FROM no_such_table"); err == nil || !IsQueryError(err) {
		t.Errorf("query error: %v", err)
	}
	if _, err := xs(ctx, db, "SELECT 'not a number' FROM t"); err == nil {
		t.Errorf("scan error not reported")
	}
	got, err := xs(ctx, db, "SELECT CASE WHEN x = 3 THEN abs(-9223372036854775807 - 1) ELSE x END FROM t ORDER BY x")
	if err == nil {
		t.Errorf("stepping error not reported (rows %v)", got)
	}
	if n := db.Stats().InUse; n != 0 {
		t.Errorf("%d connections still in use after errors", n)
	}
	// Columns is available to the row function, and Values reads a whole
	// row, text as string whatever the driver returns.
	var cols []string
	var vals []any
	err = Each(ctx, db, "SELECT x AS first, 'text' AS second, CAST('blob' AS BLOB) AS third, NULL AS fourth FROM t LIMIT 1", nil, func(r Row) error {
		var err error
		if cols, err = r.Columns(); err != nil {
			return err
		}
		vals, err = Values(r)
		return err
	})
	if err != nil || !slices.Equal(cols, []string{"first", "second", "third", "fourth"}) {
		t.Errorf("columns = %v, %v", cols, err)
	}
	if want := []any{int64(1), "text", "blob", nil}; !slices.Equal(vals, want) {
		t.Errorf("values = %#v; want %#v", vals, want)
	}
}
