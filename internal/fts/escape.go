package fts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEscapeRunes is how many code points of a query Escape reads; the rest
// is ignored. It bounds the work and the size of the expression FTS5 parses.
const MaxEscapeRunes = 2048

// maxNots bounds the NOT operators Escape keeps. FTS5 rejects an expression
// tree deeper than SQLITE_FTS5_MAX_EXPR_DEPTH (256 by default). AND and OR
// chains are flattened and do not nest, but every NOT adds a level: "a NOT b
// NOT c …" is rejected from 257 NOTs, "a NOT b c NOT d e …" from 256, and
// no mix of operators did worse in our measurements. A NOT beyond this many
// is dropped, leaving its neighbours joined by the implicit AND.
const maxNots = 64

// Escape returns an FTS5 expression for q that FTS5 accepts: the second
// attempt (IMP-5) when FTS5 rejects Sanitize's output for the same query.
//
// It reads the first MaxEscapeRunes code points of q. A "…" pair is kept
// verbatim as one phrase, unless it holds no bareword character; a quote
// without a partner becomes a space. The rest is split on white space. The
// exact words AND, OR and NOT are operators. Any other piece loses its
// leading stars and keeps one trailing star as a prefix marker; what remains
// is dropped if it holds no bareword character (ASCII letter or digit, '_',
// U+001A, any non-ASCII code point), written bare if it holds nothing else
// and does not spell an operator, and quoted as a phrase (inner quotes
// doubled) otherwise. Operators at the ends are dropped and a run of
// operators is reduced to its last one.
//
// NUL reads as white space, since SQLite stops reading the query there;
// invalid UTF-8 reads as U+FFFD. The result is valid UTF-8 and may be empty,
// meaning there is nothing to search for.
func Escape(q string) string {
	s := make([]rune, 0, min(len(q), MaxEscapeRunes))
	for _, r := range q {
		if len(s) == MaxEscapeRunes {
			break
		}
		if r == 0 {
			r = ' '
		}
		s = append(s, r)
	}

	var toks []token
	var rest []rune // text outside phrases not yet split into pieces
	flush := func() {
		toks = appendPieces(toks, rest)
		rest = rest[:0]
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			rest = append(rest, s[i])
			continue
		}
		j := closingQuote(s, i)
		if j == len(s) {
			rest = append(rest, ' ')
			continue
		}
		flush()
		if anyBareword(s[i+1 : j]) {
			toks = append(toks, token{text: string(s[i : j+1])})
		}
		i = j
	}
	flush()
	return joinTokens(toks)
}

// token is one element of an escaped expression: an operand, or one of the
// operators AND, OR, NOT.
type token struct {
	text string
	op   bool
}

// appendPieces splits text on white space and appends a token per piece.
func appendPieces(toks []token, text []rune) []token {
	for _, piece := range strings.FieldsFunc(string(text), unicode.IsSpace) {
		if isOperator(piece) {
			toks = append(toks, token{text: piece, op: true})
			continue
		}
		if t, ok := operand(piece); ok {
			toks = append(toks, token{text: t})
		}
	}
	return toks
}

// operand turns one white-space-free piece into an FTS5 operand, or reports
// false when the piece holds nothing searchable.
func operand(piece string) (string, bool) {
	// Collapse star runs, then drop the leading star: FTS5 has no suffix
	// search, and a bare "*" is a syntax error.
	var b strings.Builder
	prev := rune(0)
	for _, r := range piece {
		if r == '*' && prev == '*' {
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	core := strings.TrimPrefix(b.String(), "*")
	star := strings.HasSuffix(core, "*")
	core = strings.TrimSuffix(core, "*")
	suffix := ""
	if star {
		suffix = "*"
	}
	rs := []rune(core)
	switch {
	case !anyBareword(rs):
		return "", false
	case allBareword(rs) && !isOperator(core):
		return core + suffix, true
	}
	return `"` + strings.ReplaceAll(core, `"`, `""`) + `"` + suffix, true
}

// joinTokens drops operators at either end, reduces each run of operators
// to its last one, keeps at most maxNots NOTs, and joins the rest with
// single spaces.
func joinTokens(toks []token) string {
	var parts []string
	pending := "" // an operator waiting for its right-hand operand
	nots := 0
	for _, t := range toks {
		if t.op {
			if len(parts) > 0 {
				pending = t.text
			}
			continue
		}
		if pending == "NOT" {
			nots++
		}
		if pending != "" && (pending != "NOT" || nots <= maxNots) {
			parts = append(parts, pending)
		}
		pending = ""
		parts = append(parts, t.text)
	}
	return strings.Join(parts, " ")
}

// isOperator reports whether FTS5 reads the bare word w as an operator. It
// matters for pieces that become operators only after their stars are
// removed ("*AND"): those are quoted so they stay words.
func isOperator(w string) bool { return w == "AND" || w == "OR" || w == "NOT" }

// isBareword reports whether FTS5 accepts r inside an unquoted term.
func isBareword(r rune) bool {
	return r >= utf8.RuneSelf || r == '_' || r == 0x1A ||
		'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

func anyBareword(s []rune) bool {
	for _, r := range s {
		if isBareword(r) {
			return true
		}
	}
	return false
}

func allBareword(s []rune) bool {
	for _, r := range s {
		if !isBareword(r) {
			return false
		}
	}
	return true
}
