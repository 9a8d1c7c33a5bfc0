package sqlitedb

import (
	"context"
	"database/sql"
)

// Querier runs a query: *sql.DB, *sql.Conn, *sql.Tx and the writer's *Tx
// all satisfy it.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Row is the current result row handed to Each's function: it can be
// scanned and asked its columns, but gives no way to step or close the
// rows. It is a struct, not an interface, so Scan is a direct call and the
// variables a caller scans into can stay on its stack (through an
// interface every one of them escapes: an allocation per column per row).
type Row struct{ rows *sql.Rows }

// Scan copies the row's columns into dest, as sql.Rows.Scan does.
func (r Row) Scan(dest ...any) error { return r.rows.Scan(dest...) }

// Columns returns the result's column names.
func (r Row) Columns() ([]string, error) { return r.rows.Columns() }

// Each runs query with args on q and calls fn once per result row, in
// order. It is the one place that iterates rows: it steps them, closes them
// on every path and checks the error stepping may have deferred, so no
// caller writes that loop by hand or forgets a step of it. An error from fn
// stops the iteration and is returned as it is; otherwise Each returns the
// first error of the query, of stepping or of closing.
func Each(ctx context.Context, q Querier, query string, args []any, fn func(Row) error) (err error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	for rows.Next() {
		if err := fn(Row{rows}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Append runs query with args on q and appends to dst what scan makes of
// each result row, in order: Each for the common case of reading a list.
// Pass nil for dst to get nil when there is no row, an empty slice to get
// an empty one. On an error it returns nil and the error, as Each reports
// it.
func Append[T any](ctx context.Context, q Querier, query string, args []any, dst []T, scan func(Row) (T, error)) ([]T, error) {
	err := Each(ctx, q, query, args, func(r Row) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		dst = append(dst, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// Value reads a one-column row: the scan for Append of a list of ids,
// names or lines.
func Value[T any](r Row) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// Values reads every column of the current row, in order, a []byte value as
// string: which of the two a driver returns for text differs.
func Values(r Row) ([]any, error) {
	cols, err := r.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := r.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return vals, nil
}
