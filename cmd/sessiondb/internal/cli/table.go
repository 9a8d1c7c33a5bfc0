package cli

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Table lays out rows in columns two spaces apart; the last cell of a row
// is not padded. Cells are measured in terminal columns, where CJK and
// other wide characters take two: a title like 大别山徒步计划 would push
// text/tabwriter's columns (which counts runes) out of line.
//
// Cells hold plain text, often stored text: each is passed through
// PrintableLine, so no cell can break the table's lines or reach the
// terminal as a control sequence.
type Table struct{ rows [][]string }

// Row adds one row.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = PrintableLine(c)
	}
	t.rows = append(t.rows, row)
}

// Write writes the table to w.
func (t *Table) Write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], TermWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-TermWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TermWidth is the number of terminal columns s takes: two for East Asian
// wide and full-width characters and most emoji, none for combining marks.
func TermWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		case wideRune(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

func wideRune(r rune) bool {
	switch {
	case r >= 0x1100 && r <= 0x115F, // Hangul Jamo initials
		r >= 0x2E80 && r <= 0xA4CF && r != 0x303F,              // CJK radicals … Yi
		r >= 0xAC00 && r <= 0xD7A3,                             // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF,                             // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F,                             // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, // full-width forms
		r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF, // emoji
		r >= 0x20000 && r <= 0x3FFFD: // CJK extensions
		return true
	}
	return false
}

// ANSI styles, for output that goes to a terminal (see Streams.Styled).
const (
	Bold  = "\x1b[1m"
	Dim   = "\x1b[2m"
	Reset = "\x1b[0m"
)

// Style wraps s in an ANSI style when on is set.
func Style(on bool, code, s string) string {
	if !on || s == "" {
		return s
	}
	return code + s + Reset
}

// OrDash shows an empty cell as "-".
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cut puts s on one line (runs of white space become one space) and
// shortens it to n code points, marking the cut with "…".
func Cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
