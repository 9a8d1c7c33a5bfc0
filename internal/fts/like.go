package fts

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// LikeTerms splits a sanitized query for the substring search that stands
// in when the word index cannot split the text (CJK): surrounding quotes
// then white space trimmed, split on white space, quotes and the operator
// words AND, OR and NOT dropped. Every term must occur in a hit. A term
// ends at a NUL, as SQLite's LIKE reads its pattern (and PostgreSQL cannot
// take a NUL at all).
func LikeTerms(q string) []string {
	r := strings.TrimSpace(strings.Trim(q, `"`))
	var out []string
	for _, t := range strings.Fields(r) {
		if i := strings.IndexByte(t, 0); i >= 0 {
			t = t[:i]
		}
		t = strings.Trim(t, `"`)
		if t == "" || isOperator(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// likeEscaper escapes the LIKE wildcards and the escape character itself.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// EscapeLike escapes \ % _ in s for a LIKE pattern written with
// ESCAPE '\' (SQLite and PostgreSQL read it the same way), so s matches
// only itself.
func EscapeLike(s string) string { return likeEscaper.Replace(s) }

// A substring search's snippet is the text from LikeLead code points
// before the first term's first exact occurrence, LikeSpan code points
// long (Hermes' substr(content, instr - 40, 120)).
const (
	LikeLead = 40
	LikeSpan = 120
)

// Like returns the function that makes a substring search's snippet from
// what its query read: "1" when the span starts after the text's start
// ("0" otherwise), then the span and the code point after it, if any.
// Every occurrence of a term in the span is marked (ASCII case ignored,
// as LIKE matches), and the ellipsis stands where the text was cut, as in
// FTS5's snippets: without it a CJK snippet read as if it began a
// sentence, and no match was marked.
func (o Snippet) Like(terms []string) func([]byte) string {
	sorted := slices.DeleteFunc(slices.Clone(terms), func(t string) bool { return t == "" })
	// The longest term is tried first where two start at one place.
	slices.SortStableFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	return func(raw []byte) string {
		if len(raw) == 0 {
			return ""
		}
		cutBefore, span := raw[0] == '1', raw[1:]
		cutAfter := false
		for i, n := 0, 0; i < len(span); n++ {
			if n == LikeSpan {
				span, cutAfter = span[:i], true
				break
			}
			_, size := utf8.DecodeRune(span[i:])
			i += size
		}
		var b strings.Builder
		if cutBefore {
			b.WriteString(o.Ellipsis)
		}
	next:
		for i := 0; i < len(span); {
			for _, t := range sorted {
				if len(t) <= len(span)-i && bytesEqualFoldASCII(span[i:i+len(t)], t) {
					b.WriteString(o.Open)
					b.Write(span[i : i+len(t)])
					b.WriteString(o.Close)
					i += len(t)
					continue next
				}
			}
			b.WriteByte(span[i])
			i++
		}
		if cutAfter {
			b.WriteString(o.Ellipsis)
		}
		return b.String()
	}
}

// bytesEqualFoldASCII reports whether b equals s, ASCII letters' case
// ignored (what SQLite's LIKE ignores).
func bytesEqualFoldASCII(b []byte, s string) bool {
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
