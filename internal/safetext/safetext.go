// Package safetext shows stored text (messages, titles, ids, tool output,
// errors from a store) without letting it act on whatever displays it: the
// characters a terminal would obey instead of show, and the invisible ones
// that make text read in another order than it is stored, are written as
// visible escapes. The command line prints through it (cli.Printable) and
// the web UI renders through it, so both show the same text the same way.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s ready for a person: every character that a terminal
// would act on instead of showing is shown as an escape, so a message
// holding "\x1b]0;PWNED\x07\x1b[2J" can neither retitle nor clear the
// terminal. Newlines and tabs stay, for transcripts that keep their lines
// (a CRLF line end becomes a newline); Line escapes them too.
//
// Escaped, as \xNN: C0 controls (ESC, BEL, CR, backspace, NUL, ...), DEL
// and bytes that are not UTF-8. Escaped as \uNNNN (\UNNNNNNNN past U+FFFF):
// C1 controls (U+0080-U+009F, which some terminals read as CSI), Unicode
// format characters (category Cf: the bidi overrides and isolates that make
// text read in another order than it is stored, zero-width spaces, the
// invisible tag characters) and the line and paragraph separators. The
// zero-width joiner and non-joiner stay: emoji sequences and several
// scripts need them.
func Text(s string) string { return printable(s, false) }

// Line is Text for text that must stay on one line (table cells, list
// entries, titles): newlines and tabs are escaped as well.
func Line(s string) string { return printable(s, true) }

func printable(s string, oneLine bool) string {
	if cleanText(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case (r == '\n' || r == '\t') && !oneLine:
			b.WriteRune(r)
		case r == '\r' && !oneLine && strings.HasPrefix(s[i+1:], "\n"):
			// A CRLF line end is a line end; only a lone CR can overwrite.
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff && invisible(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		case (r >= 0x80 && r < 0xa0) || invisible(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// cleanText reports whether s needs no escaping (the common case, checked
// without allocating).
func cleanText(s string, oneLine bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && (oneLine || (c != '\n' && c != '\t')) || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r < 0xa0 || invisible(r) {
			return false
		}
		i += size
	}
	return true
}

// invisible reports format characters and line separators that change how
// a terminal lays text out without being seen.
func invisible(r rune) bool {
	switch r {
	case '\u200c', '\u200d': // zero-width non-joiner and joiner: needed by scripts and emoji
		return false
	case '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}
