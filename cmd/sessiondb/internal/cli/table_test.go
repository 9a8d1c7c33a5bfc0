package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestTableAlignsWideCharacters(t *testing.T) {
	widths := []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"大别山", 6}, {"e\u0301", 1}, {"한국", 4}, {"ＡＢ", 4}, {"", 0},
	}
	for _, tc := range widths {
		if got := TermWidth(tc.in); got != tc.want {
			t.Errorf("TermWidth(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	var tb Table
	tb.Row("ID", "TITLE", "SOURCE")
	tb.Row("a", "大别山徒步计划", "telegram")
	tb.Row("bb", "Lisbon", "telegram")
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	col := -1
	for i, l := range lines {
		// The third column starts at the same terminal column on every line.
		at := TermWidth(l[:strings.LastIndex(l, "  ")+2])
		if i > 0 && at != col {
			t.Errorf("line %d: third column at %d, want %d:\n%s", i, at, col, b.String())
		}
		col = at
	}
}
