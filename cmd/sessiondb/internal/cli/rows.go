package cli

import (
	"fmt"
	"io"

	"github.com/sessiondb/sessiondb"
)

// Columns is how rows of T print as a table: a header, then the cells of
// each row.
type Columns[T any] struct {
	Header []string
	Cells  func(T) []string
}

// Write writes rows as a table under the header.
func (cs Columns[T]) Write(w io.Writer, rows []T) error {
	t := &Table{}
	t.Row(cs.Header...)
	for _, r := range rows {
		t.Row(cs.Cells(r)...)
	}
	return t.Write(w)
}

// WriteFields writes one record as aligned "name: value" lines, leaving out
// the fields whose value is empty.
func WriteFields(w io.Writer, fields [][2]string) error {
	t := &Table{}
	for _, f := range fields {
		if f[1] != "" {
			t.Row(f[0]+":", f[1])
		}
	}
	return t.Write(w)
}

// NothingToList is what a list with no rows prints on stderr, where a
// header over no rows would read as a broken table.
const NothingToList = "nothing to list"

// PrintList prints rows: as a JSON array with --json (empty, never null,
// when there are none), else as a table, or NothingToList on Err when
// there are no rows.
func PrintList[T any](f *Factory, rows []T, cols Columns[T]) error {
	if f.JSON {
		return f.PrintJSON(sessiondb.NonNil(rows))
	}
	if len(rows) == 0 {
		fmt.Fprintln(f.Err, NothingToList)
		return nil
	}
	return cols.Write(f.Out, rows)
}

// PrintPage prints one page of a paged list: the page as JSON with --json,
// else its rows as a table and then, on Err, the --cursor that continues
// after it when there is more; a page without rows prints NothingToList.
func PrintPage[T any](f *Factory, page any, rows []T, next string, cols Columns[T]) error {
	if f.JSON {
		return f.PrintJSON(page)
	}
	if len(rows) == 0 {
		fmt.Fprintln(f.Err, NothingToList)
		return nil
	}
	if err := cols.Write(f.Out, rows); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(f.Err, "more: --cursor %s\n", next)
	}
	return nil
}
