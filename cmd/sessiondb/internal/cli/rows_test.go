package cli

import (
	"bytes"
	"testing"
)

type pair struct{ k, v string }

var pairColumns = Columns[pair]{Header: []string{"KEY", "VALUE"}, Cells: func(p pair) []string { return []string{p.k, p.v} }}

// TestRows: a list prints as a table under its header, or as a JSON array
// (never null); a page adds on stderr the --cursor that continues it; a
// record's fields print as aligned lines without the empty ones.
func TestRows(t *testing.T) {
	for _, tc := range []struct {
		name             string
		json             bool
		print            func(f *Factory) error
		wantOut, wantErr string
	}{
		{"table", false, func(f *Factory) error { return PrintList(f, []pair{{"a", "1"}, {"bb", "\x1b[2J"}}, pairColumns) },
			"KEY  VALUE\na    1\nbb   \\x1b[2J\n", ""},
		{"no rows as JSON", true, func(f *Factory) error { return PrintList[pair](f, nil, pairColumns) }, "[]\n", ""},
		{"a page with more", false, func(f *Factory) error { return PrintPage(f, nil, []pair{{"a", "1"}}, "c2", pairColumns) },
			"KEY  VALUE\na    1\n", "more: --cursor c2\n"},
		{"the last page", false, func(f *Factory) error { return PrintPage(f, nil, []pair{{"a", "1"}}, "", pairColumns) },
			"KEY  VALUE\na    1\n", ""},
		{"a page as JSON", true, func(f *Factory) error {
			return PrintPage(f, map[string]string{"next_cursor": "c2"}, []pair{{"a", "1"}}, "c2", pairColumns)
		}, "{\n  \"next_cursor\": \"c2\"\n}\n", ""},
		{"fields", false, func(f *Factory) error {
			return WriteFields(f.Out, [][2]string{{"id", "s1"}, {"thread", ""}, {"last active", "now"}})
		}, "id:           s1\nlast active:  now\n", ""},
	} {
		var out, errOut bytes.Buffer
		f := New(nil, &out, &errOut)
		f.JSON = tc.json
		if err := tc.print(f); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out.String() != tc.wantOut || errOut.String() != tc.wantErr {
			t.Errorf("%s: out %q err %q, want %q and %q", tc.name, out.String(), errOut.String(), tc.wantOut, tc.wantErr)
		}
	}
}
