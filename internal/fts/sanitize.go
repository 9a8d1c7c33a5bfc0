// Package fts turns a user's search string into an SQLite FTS5 MATCH
// expression.
//
// Sanitize reproduces Hermes v6's SanitizeFTSQuery byte for byte, so a
// search here finds what the same search finds in Hermes. Its output can
// still be rejected by FTS5 (a stray ':' reads as a column filter, an
// apostrophe as a syntax error); Escape is the second attempt for exactly
// those queries, and its output is built so that FTS5 never rejects it.
package fts

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns q cleaned the way Hermes v6 cleans a search query before
// handing it to FTS5 (history-store spec, section 7):
//
//  1. balanced "…" phrases are set aside, left to right;
//  2. + { } ( ) " ^ become spaces;
//  3. runs of * collapse to one, and a * at the start or after white space
//     is deleted;
//  4. after trimming, one leading AND/OR/NOT word (any case) with the space
//     after it is deleted, and after trimming again one trailing
//     space-separated AND/OR/NOT;
//  5. every maximal word([.-]word)+ run is wrapped in double quotes, where a
//     word character is a Unicode letter or number or '_' as in Python's re;
//  6. the phrases are put back and the result trimmed.
//
// White space, trimming and word characters follow Python 3's str rules,
// not Go's. The result may be empty (search nothing) and may still be an
// expression FTS5 rejects. Invalid UTF-8 in q is read as U+FFFD, so the
// result is always valid UTF-8.
//
// One deliberate limit: Hermes' restore step also rewrites placeholder-shaped
// text the user typed (NUL, 'Q', digits, NUL), which lets a query of a few
// hundred bytes expand to gigabytes. When the exact result would be longer
// than four times the query plus 4 KiB, Sanitize returns "" instead. Only a
// query holding NUL characters can reach that limit.
func Sanitize(q string) string { return sanitize(q, nil) }

// Change is a kind of thing Sanitize does to a query: what a face reports
// beside the results, so a search never silently runs another query than
// the one typed.
type Change int

const (
	// RemovedSyntax: characters FTS5 reads as syntax (+ { } ( ) ^ and a
	// quote without its partner) became spaces. Note.Text lists them.
	RemovedSyntax Change = iota + 1
	// DroppedLeadingStar: a * at the start of a word was deleted (FTS5
	// matches prefixes, word*, never suffixes).
	DroppedLeadingStar
	// DroppedLeadingOperator: an AND, OR or NOT (any case) that began the
	// query was deleted, as it had nothing before it. Note.Text is the word
	// as typed.
	DroppedLeadingOperator
	// DroppedTrailingOperator: an AND, OR or NOT that ended the query was
	// deleted, as it had nothing after it. Note.Text is the word as typed.
	DroppedTrailingOperator
	// QuotedCompound: words joined by '.' or '-' are searched as a phrase.
	// Note.Text is the compound.
	QuotedCompound
)

// Note is one change Sanitize made, with the text it concerns.
type Note struct {
	Change Change
	Text   string
}

// SanitizeNotes returns Sanitize(q) and the changes it made, in the order
// it made them. The query is the same as Sanitize's, byte for byte.
func SanitizeNotes(q string) (string, []Note) {
	notes := []Note{}
	out := sanitize(q, &notes)
	return out, notes
}

// sanitize is Sanitize, noting each change in notes when notes is not nil.
func sanitize(q string, notes *[]Note) string {
	note := func(c Change, text string) {
		if notes != nil {
			*notes = append(*notes, Note{c, text})
		}
	}
	s := []rune(q)

	// Step 1. The placeholder is Hermes' own: NUL, 'Q', the index, NUL.
	// Later steps leave it alone because NUL is neither white space, nor a
	// word character, nor one of the characters they remove.
	var phrases []string
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			out = append(out, s[i])
			continue
		}
		j := closingQuote(s, i)
		if j == len(s) { // unmatched: step 2 turns it into a space
			out = append(out, s[i:]...)
			break
		}
		out = append(out, []rune(placeholder(len(phrases)))...)
		phrases = append(phrases, string(s[i:j+1]))
		i = j
	}
	s = out

	// Step 2.
	var removed []rune
	for i, r := range s {
		switch r {
		case '+', '{', '}', '(', ')', '"', '^':
			s[i] = ' '
			if !slices.Contains(removed, r) {
				removed = append(removed, r)
			}
		}
	}
	if len(removed) > 0 {
		note(RemovedSyntax, string(removed))
	}

	// Step 3. After the runs collapse no two stars are adjacent, so "at the
	// start or after white space" can be judged on the collapsed text.
	collapsed := make([]rune, 0, len(s))
	for i, r := range s {
		if r == '*' && i > 0 && s[i-1] == '*' {
			continue
		}
		collapsed = append(collapsed, r)
	}
	s = make([]rune, 0, len(collapsed))
	dropped := false
	for i, r := range collapsed {
		if r == '*' && (i == 0 || isPySpace(collapsed[i-1])) {
			dropped = true
			continue
		}
		s = append(s, r)
	}
	if dropped {
		note(DroppedLeadingStar, "*")
	}

	// Step 4.
	s = pyStrip(s)
	if n := leadingOperator(s); n > 0 {
		note(DroppedLeadingOperator, string(s[:n]))
		s = s[n:]
		for len(s) > 0 && isPySpace(s[0]) {
			s = s[1:]
		}
	}
	s = pyStrip(s)
	if n := trailingOperator(s); n < len(s) {
		note(DroppedTrailingOperator, string(pyStrip(s[n:])))
		s = s[:n]
	}

	// Step 5.
	s = quoteCompounds(s, note)

	// Step 6.
	res := restore(string(s), phrases, strings.ContainsRune(q, 0))
	return string(pyStrip([]rune(res)))
}

func placeholder(i int) string { return "\x00Q" + strconv.Itoa(i) + "\x00" }

// restore puts the phrases back. Hermes does it with one str.replace per
// phrase, in order. Without a NUL in the user's query every NUL in s opens
// one of our own placeholders and the phrases hold none, so one pass gives
// the same string; otherwise restoreExact reproduces the sequence.
func restore(s string, phrases []string, userNUL bool) string {
	if len(phrases) == 0 {
		return s
	}
	if userNUL {
		return restoreExact(s, phrases, 4*len(s)+4096)
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i+1:], 0) + i + 1
		n, _ := strconv.Atoi(s[i+2 : end])
		b.WriteString(phrases[n])
		s = s[end+1:]
	}
}

// leadingOperator returns the length of an AND, OR or NOT (any case) at the
// start of s that ends at a word boundary, or 0.
func leadingOperator(s []rune) int {
	for _, op := range [...]string{"AND", "OR", "NOT"} {
		n := len(op)
		if len(s) >= n && foldEqual(s[:n], op) && (len(s) == n || !isPyWord(s[n])) {
			return n
		}
	}
	return 0
}

// trailingOperator returns where a trailing white-space run followed by AND,
// OR or NOT (any case) begins in s, which has no trailing white space, or
// len(s) when there is none.
func trailingOperator(s []rune) int {
	for _, op := range [...]string{"AND", "OR", "NOT"} {
		n := len(op)
		if len(s) < n+1 || !foldEqual(s[len(s)-n:], op) || !isPySpace(s[len(s)-n-1]) {
			continue
		}
		i := len(s) - n - 1
		for i > 0 && isPySpace(s[i-1]) {
			i--
		}
		return i
	}
	return len(s)
}

// foldEqual compares s with the upper-case ASCII word op, ignoring case.
// Python's IGNORECASE maps no non-ASCII letter onto A, D, N, O, R or T, so
// ASCII folding is exact here.
func foldEqual(s []rune, op string) bool {
	for i := range len(op) {
		r := s[i]
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		if r != rune(op[i]) {
			return false
		}
	}
	return true
}

// quoteCompounds wraps each maximal word([.-]word)+ run that starts at a
// word boundary in double quotes: the effect of Python's
// re.sub(r'\b(\w+(?:[.-]\w+)+)\b', r'"\1"', s). A greedy \w+ can only stop
// where a non-word character follows, so every match spans whole words and
// the closing \b always holds.
func quoteCompounds(s []rune, note func(Change, string)) []rune {
	wordEnd := func(i int) int {
		for i < len(s) && isPyWord(s[i]) {
			i++
		}
		return i
	}
	out := make([]rune, 0, len(s)+8)
	for i := 0; i < len(s); {
		if !isPyWord(s[i]) || (i > 0 && isPyWord(s[i-1])) {
			out = append(out, s[i])
			i++
			continue
		}
		j := wordEnd(i)
		k, parts := j, 0
		for k+1 < len(s) && (s[k] == '.' || s[k] == '-') && isPyWord(s[k+1]) {
			k = wordEnd(k + 1)
			parts++
		}
		if parts == 0 {
			out = append(out, s[i:j]...)
			i = j
			continue
		}
		out = append(out, '"')
		out = append(out, s[i:k]...)
		out = append(out, '"')
		note(QuotedCompound, string(s[i:k]))
		i = k
	}
	return out
}

// isPyWord reports whether Python 3's re matches r with \w in a str
// pattern: str.isalnum() (letters L*, and every character with a numeric
// value, which are the N* categories plus letters already counted) or '_'.
// Combining marks are not word characters there, and are not here.
func isPyWord(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// isPySpace reports whether Python 3's str.isspace() holds for r, which is
// what \s and str.strip() use. It is Go's unicode.IsSpace plus the four
// information separators U+001C–U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1C && r <= 0x1F
}

// pyStrip trims Python white space from both ends of s.
func pyStrip(s []rune) []rune {
	for len(s) > 0 && isPySpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isPySpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// closingQuote returns the index of the '"' that closes the phrase opened
// at s[i], or len(s) when no quote after i does.
func closingQuote(s []rune, i int) int {
	j := i + 1
	for j < len(s) && s[j] != '"' {
		j++
	}
	return j
}
