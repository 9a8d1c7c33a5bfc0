package fts

import "sort"

//go:generate go run gen_unicode.go

// Tokenizer names an FTS5 tokenizer this package can reproduce: where a
// document's tokens start and end and what each folds to, byte for byte as
// the linked SQLite does, so that a snippet computed here marks what FTS5
// matched.
type Tokenizer int

const (
	// Unicode61 is FTS5's default tokenizer with its default options
	// (remove_diacritics=1, categories "L* N* Co"): the tokenizer of
	// messages_fts.
	Unicode61 Tokenizer = iota
	// Trigram is tokenize='trigram' with its default options (case folded,
	// diacritics kept): every run of three characters is a token.
	Trigram
)

type runeRange [2]rune
type runePair [2]rune

type foldRun struct {
	first          rune
	n, step, delta int32
}

// docToken is one token of a document: where its folded text is in the
// tokenization's text, and where the token is in the document's bytes.
type docToken struct {
	t0, t1     int32
	start, end int32
}

// tokens is a tokenized document: its tokens in order, with their folded
// texts laid end to end in one string (one allocation, not one a token).
type tokens struct {
	list   []docToken
	folded string
}

// text returns the folded text of token i.
func (t *tokens) text(i int) string { return t.folded[t.list[i].t0:t.list[i].t1] }

// utf8Lead is what a lead byte from 0xC0 up contributes to the code point
// before its continuation bytes, as SQLite's reader takes it.
var utf8Lead = [64]rune{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// readRune decodes one character at s[i:] the way SQLite's FTS5 does, which
// differs from utf8.DecodeRune on invalid input: a stray continuation byte
// is the code point of its own value, a lead byte takes every continuation
// byte that follows, and only overlong forms, surrogates and U+FFFE/FFFF
// become U+FFFD. It returns the code point and the index after it.
func readRune(s []byte, i int) (uint32, int) {
	c := uint32(s[i])
	i++
	if c < 0xC0 {
		return c, i
	}
	c = uint32(utf8Lead[c-0xC0])
	for i < len(s) && s[i]&0xC0 == 0x80 {
		c = c<<6 + uint32(s[i]&0x3F)
		i++
	}
	if c < 0x80 || c&0xFFFFF800 == 0xD800 || c&0xFFFFFFFE == 0xFFFE {
		c = 0xFFFD
	}
	return c, i
}

// appendRune writes c as SQLite's FTS5 writes a folded character: standard
// UTF-8 up to four bytes, the top bits of larger values dropped.
func appendRune(b []byte, c uint32) []byte {
	switch {
	case c < 0x80:
		return append(b, byte(c))
	case c < 0x800:
		return append(b, 0xC0+byte(c>>6&0x1F), 0x80+byte(c&0x3F))
	case c < 0x10000:
		return append(b, 0xE0+byte(c>>12&0x0F), 0x80+byte(c>>6&0x3F), 0x80+byte(c&0x3F))
	}
	return append(b, 0xF0+byte(c>>18&0x07), 0x80+byte(c>>12&0x3F), 0x80+byte(c>>6&0x3F), 0x80+byte(c&0x3F))
}

// bmpTokenStarts is tokenStarts for the Basic Multilingual Plane as a bit
// set, the lookup every character of most text takes.
var bmpTokenStarts = func() *[0x10000 / 64]uint64 {
	var bits [0x10000 / 64]uint64
	for _, r := range tokenStarts {
		for c := r[0]; c <= r[1] && c < 0x10000; c++ {
			bits[c/64] |= 1 << (c % 64)
		}
	}
	return &bits
}()

// isTokenStart reports whether unicode61 reads c as a token character.
func isTokenStart(c uint32) bool {
	switch {
	case c < 0x80:
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	case c < 0x10000:
		return bmpTokenStarts[c/64]&(1<<(c%64)) != 0
	case c > 0xFFFFF:
		return true // beyond SQLite's category table: category 0, a token character
	}
	i := sort.Search(len(tokenStarts), func(i int) bool { return uint32(tokenStarts[i][1]) >= c })
	return i < len(tokenStarts) && uint32(tokenStarts[i][0]) <= c
}

// isDiacriticMark reports whether c continues a unicode61 token without
// being able to start one.
func isDiacriticMark(c uint32) bool {
	i := sort.Search(len(diacriticMarks), func(i int) bool { return uint32(diacriticMarks[i]) >= c })
	return i < len(diacriticMarks) && uint32(diacriticMarks[i]) == c
}

// foldCase is SQLite's case fold of c (the trigram tokenizer's fold).
func foldCase(c uint32) uint32 {
	if c < 0x80 {
		if c >= 'A' && c <= 'Z' {
			return c + 32
		}
		return c
	}
	i := sort.Search(len(caseFolds), func(i int) bool { return uint32(caseFolds[i].first) > c }) - 1
	if i < 0 {
		return c
	}
	r := caseFolds[i]
	d := c - uint32(r.first)
	if d%uint32(r.step) == 0 && d/uint32(r.step) < uint32(r.n) {
		return uint32(int64(c) + int64(r.delta))
	}
	return c
}

// foldUnicode61 is unicode61's fold: case, then diacritics removed; 0 means
// the character is dropped from the token.
func foldUnicode61(c uint32) uint32 {
	c = foldCase(c)
	if c < 0x80 {
		return c
	}
	i := sort.Search(len(diacriticStrips), func(i int) bool { return uint32(diacriticStrips[i][0]) >= c })
	if i < len(diacriticStrips) && uint32(diacriticStrips[i][0]) == c {
		return uint32(diacriticStrips[i][1])
	}
	return c
}

// tokenize returns the tokens of doc under tok, at most limit of them
// (limit < 0: all), and whether it stopped at the limit.
func (tok Tokenizer) tokenize(doc []byte, limit int) (tokens, bool) {
	if tok == Trigram {
		return tokenizeTrigram(doc, limit)
	}
	return tokenizeUnicode61(doc, limit)
}

// tokenizeUnicode61 splits doc as unicode61 does: a token is a run of token
// characters (and diacritic marks after the first), each folded; anything
// else separates tokens.
func tokenizeUnicode61(doc []byte, limit int) (tokens, bool) {
	out := make([]docToken, 0, len(doc)/5+1)
	buf := make([]byte, 0, len(doc))
	done := func(stopped bool) (tokens, bool) { return tokens{list: out, folded: string(buf)}, stopped }
	i := 0
	for i < len(doc) {
		if limit >= 0 && len(out) == limit {
			return done(true)
		}
		// Skip separators.
		start := i
		var c uint32
		next := i
		for {
			if i >= len(doc) {
				return done(false)
			}
			start = i
			if b := doc[i]; b < 0x80 {
				if asciiFold[b] != 0 {
					c, next = uint32(b), i+1
					break
				}
				i++
				continue
			}
			c, next = readRune(doc, i)
			if isTokenStart(c) {
				break
			}
			i = next
		}
		t0 := len(buf)
		end := next
		if c < 0x80 {
			buf = append(buf, asciiFold[c])
		} else if f := foldUnicode61(c); f != 0 {
			buf = appendRune(buf, f)
		}
		i = next
		for i < len(doc) {
			if b := doc[i]; b < 0x80 {
				f := asciiFold[b]
				if f == 0 {
					break
				}
				buf = append(buf, f)
				i++
				end = i
				continue
			}
			c, next = readRune(doc, i)
			if !isTokenStart(c) && !isDiacriticMark(c) {
				i = next // SQLite has consumed the separator
				break
			}
			if f := foldUnicode61(c); f != 0 {
				buf = appendRune(buf, f)
			}
			i = next
			end = next
		}
		out = append(out, docToken{t0: int32(t0), t1: int32(len(buf)), start: int32(start), end: int32(end)})
	}
	return done(false)
}

// asciiFold is unicode61 on ASCII: a token character's folded byte, 0 for
// a separator.
var asciiFold = func() (t [128]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c] = c
		t[c-'a'+'A'] = c
	}
	return t
}()

// tokenizeTrigram splits doc as the trigram tokenizer of SQLite 3.49.2 and
// later does: every three consecutive characters, case folded, where a
// character that folds to 0 (NUL) is skipped, not a separator.
func tokenizeTrigram(doc []byte, limit int) (tokens, bool) {
	type char struct {
		c     uint32
		start int
	}
	var out []docToken
	var buf []byte
	done := func(stopped bool) (tokens, bool) { return tokens{list: out, folded: string(buf)}, stopped }
	var win [3]char
	n := 0
	i := 0
	// read returns the next character that does not fold to 0, and the
	// offset where reading stopped.
	read := func() (char, bool) {
		for i < len(doc) {
			at := i
			c, next := readRune(doc, i)
			i = next
			if c = foldCase(c); c != 0 {
				return char{c, at}, true
			}
		}
		return char{}, false
	}
	for n < 3 {
		ch, ok := read()
		if !ok {
			return done(false)
		}
		win[n] = ch
		n++
	}
	for {
		if limit >= 0 && len(out) == limit {
			return done(true)
		}
		// The token ends where the next character starts (after any
		// characters that fold to 0), or at the end of the document.
		nextStart := i
		for nextStart < len(doc) {
			c, nx := readRune(doc, nextStart)
			if foldCase(c) != 0 {
				break
			}
			nextStart = nx
		}
		t0 := len(buf)
		for _, ch := range win {
			buf = appendRune(buf, ch.c)
		}
		out = append(out, docToken{t0: int32(t0), t1: int32(len(buf)), start: int32(win[0].start), end: int32(nextStart)})
		ch, ok := read()
		if !ok {
			return done(false)
		}
		win[0], win[1], win[2] = win[1], win[2], ch
	}
}
