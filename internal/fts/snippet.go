package fts

import (
	"slices"
	"strings"
)

// Snippet reproduces FTS5's snippet() for one row, in time linear in the text
// it reads. SQLite's own snippet() scores a window at every phrase instance
// by walking all instances again, so a message in which a term occurs N
// times costs N² steps inside one SQL call (a 2 MB message of one repeated
// word took eleven minutes); this computes the same windows with running
// counts instead.
//
// It follows FTS5's snippet(table, col, Open, Close, Ellipsis, Tokens) of
// SQLite 3.53/3.54 step for step: every phrase instance, and every sentence
// start before one, proposes a window of Tokens tokens scored 1000 for each
// phrase it holds plus 1 for each further instance (plus 120 for the
// document's start, 100 for a later sentence's); the first best window
// wins; its matches are wrapped in Open/Close, overlapping instances
// coalesced, and Ellipsis marks a cut at either end. Which phrases' matches
// FTS5 counts for a row follows from the expression (see expr.mark). One
// case depends on the other rows of the table and is not reproduced: a
// phrase with no tokens at all (under trigram, a text of fewer than three
// characters) as an operand of AND or NOT stops FTS5 from moving the
// cursors of its siblings, which then count their matches in the first row
// holding them.
type Snippet struct {
	Open, Close, Ellipsis string
	// Tokens is the window's size in tokens; FTS5 clamps it to 0..64.
	Tokens int
	// Tokenizer is the tokenizer of the FTS5 table the row matched in.
	Tokenizer Tokenizer
}

// MaxSnippetInstances bounds the phrase instances Of collects: the reading
// of the text stops at the token where they would exceed it, as if the text
// had been cut there. It keeps a hostile query (the same word a thousand
// times over a text of that word) from making the instance list huge.
const MaxSnippetInstances = 1 << 20

// Of returns the snippet of doc for a row that matched query, where query
// is the MATCH expression FTS5 accepted and doc is the matched column's
// text. complete says whether doc is the whole text; when it is only its
// beginning (a long text cut by the caller), the window is chosen within
// that beginning and an Ellipsis marks the cut.
func (o Snippet) Of(query string, doc []byte, complete bool) string {
	return o.For(query).Of(doc, complete)
}

// SnippetWindow is how many bytes of a hit's text its snippet is chosen
// from. FTS5's snippet() is quadratic in the matches in it; ours is linear,
// and this bound keeps even that independent of the size of one message: a
// match beyond the first MiB of a longer text is not shown (the snippet
// then starts the text). Callers read the first SnippetWindow+1 bytes (or
// more) of the text, so Bounded can tell a cut text from a whole one.
const SnippetWindow = 1 << 20

// Bounded returns the function making the snippet of a row that matched
// query from its text, of which it reads at most SnippetWindow bytes; a
// nil text has no snippet.
func (o Snippet) Bounded(query string) func([]byte) string {
	sq := o.For(query)
	return func(raw []byte) string {
		if raw == nil {
			return ""
		}
		if len(raw) > SnippetWindow {
			return sq.Of(raw[:SnippetWindow], false)
		}
		return sq.Of(raw, true)
	}
}

// For reads query once for the snippets of many rows that matched it.
func (o Snippet) For(query string) *QuerySnippet {
	q := parseQuery(query, o.Tokenizer)
	ph, classOf := classes(q.phrases)
	sq := &QuerySnippet{o: o, q: q, ph: ph, classOf: classOf}
	for _, p := range ph {
		if t := p.terms[0].text; t != "" {
			sq.firstByte[t[0]] = true
		}
	}
	return sq
}

// QuerySnippet makes the snippets of rows that matched one query.
type QuerySnippet struct {
	o       Snippet
	q       query
	ph      []phraseClass
	classOf []int
	// firstByte marks the first bytes of the phrases' first terms: a token
	// starting otherwise begins no instance, with no need to look it up.
	firstByte [256]bool
}

// Of returns the snippet of doc, as Snippet.Of does.
func (sq *QuerySnippet) Of(doc []byte, complete bool) string {
	nToken := min(max(sq.o.Tokens, 0), 64)
	ph := slices.Clone(sq.ph) // countedInstances fills in this row's counts
	toks, stopped := sq.o.Tokenizer.tokenize(doc, -1)
	if n := len(toks.list); !complete && n > 0 && int(toks.list[n-1].end) == len(doc) {
		toks.list = toks.list[:n-1] // the cut may have split it
	}
	insts, cut := findInstances(&toks, ph, &sq.firstByte)
	if cut < len(toks.list) {
		toks.list = toks.list[:cut]
		stopped = true
	}
	insts = countedInstances(sq.q, ph, sq.classOf, insts)
	complete = complete && !stopped
	// nDocsize is FTS5's token count of the whole column; for a cut text
	// it is unknown and larger than anything here.
	nDocsize := len(toks.list)
	if !complete {
		nDocsize = 1 << 30
	}

	bestStart := 0
	if len(insts) > 0 {
		var sentences []int
		if nDocsize > nToken {
			sentences = sentenceStarts(doc, toks.list)
		}
		_, bestStart = bestWindow(insts, ph, sentences, nToken, nDocsize)
	}
	return sq.o.render(doc, toks.list, insts, ph, bestStart, nToken, nDocsize)
}

// term is one token of a query phrase; a prefix term matches every token
// it begins.
type term struct {
	text   string
	prefix bool
}

// phraseClass is one distinct phrase of a query. FTS5 counts each copy of
// a phrase in the query as its own phrase.
type phraseClass struct {
	terms []term
	first bool // '^': matches only at the column's first token
	// copies is how many copies of the phrase have their instances counted
	// for the row.
	copies int
	// last is the query position of the last counted copy: FTS5 lists the
	// instances at one token in query order.
	last int
}

// instance is a match of a phrase class starting at token off.
type instance struct {
	off, class int32
}

// Lexical tokens of an FTS5 expression.
const (
	lexString = iota
	lexAND
	lexOR
	lexNOT
	lexLP
	lexRP
	lexLCP
	lexRCP
	lexColon
	lexComma
	lexPlus
	lexStar
	lexMinus
	lexCaret
)

type matchToken struct {
	kind int
	text string
	bare bool
}

// lexMatch splits an FTS5 expression as FTS5's lexer does, stopping at the
// end of the string, at a NUL (FTS5 reads a C string) or at anything FTS5
// rejects.
func lexMatch(q string) []matchToken {
	var out []matchToken
	i := 0
	for i < len(q) {
		c := q[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		if k, ok := punct[c]; ok {
			out = append(out, matchToken{kind: k})
			i++
			continue
		}
		switch {
		case c == 0:
			return out
		case c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(q) || q[j] == 0 {
					return out // unterminated
				}
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(q[j])
				j++
			}
			out = append(out, matchToken{kind: lexString, text: b.String()})
			i = j + 1
		case isBarewordByte(c):
			j := i
			for j < len(q) && isBarewordByte(q[j]) {
				j++
			}
			w := q[i:j]
			switch w {
			case "AND":
				out = append(out, matchToken{kind: lexAND})
			case "OR":
				out = append(out, matchToken{kind: lexOR})
			case "NOT":
				out = append(out, matchToken{kind: lexNOT})
			default:
				out = append(out, matchToken{kind: lexString, text: w, bare: true})
			}
			i = j
		default:
			return out
		}
	}
	return out
}

var punct = map[byte]int{
	'(': lexLP, ')': lexRP, '{': lexLCP, '}': lexRCP, ':': lexColon, ',': lexComma,
	'+': lexPlus, '*': lexStar, '-': lexMinus, '^': lexCaret,
}

// isBarewordByte reports whether FTS5 reads byte c as part of a bareword:
// ASCII letters and digits, '_', U+001A, and every byte of a non-ASCII
// character.
func isBarewordByte(c byte) bool {
	return c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == 0x1A
}

// expr is a node of an FTS5 expression: a phrase (by its index in the
// query), or an operator over its children.
type expr struct {
	op     int // lexString for a phrase, lexAND (also implicit), lexOR, lexNOT
	phrase int
	kids   []*expr
}

// query is an FTS5 expression as FTS5 parses it: its phrases in query
// order and its tree (nil when the expression could not be read, in which
// case every phrase counts).
type query struct {
	phrases []phrase
	root    *expr
}

type phrase struct {
	terms []term
	first bool // '^': matches only at the column's first token
}

// matchParser reads an FTS5 expression with FTS5's grammar and precedence:
// juxtaposition (implicit AND) binds tightest, then NOT, AND, OR, all
// left-associative; a phrase is a string with an optional '*', joined to
// the next by '+', anchored by a leading '^'; "col :" and "{cols} :" filter
// columns and NEAR(...) groups phrases (both kept as plain AND here).
type matchParser struct {
	lx  []matchToken
	k   int
	tok Tokenizer
	q   *query
	bad bool
}

func parseQuery(s string, tok Tokenizer) query {
	var q query
	p := &matchParser{lx: lexMatch(s), tok: tok, q: &q}
	root := p.or()
	if !p.bad && p.k == len(p.lx) {
		q.root = root
	}
	return q
}

func (p *matchParser) peek(off int) int {
	if p.k+off < len(p.lx) {
		return p.lx[p.k+off].kind
	}
	return -1
}

func (p *matchParser) binary(op int, next func() *expr) *expr {
	left := next()
	for p.peek(0) == op {
		p.k++
		left = &expr{op: op, kids: []*expr{left, next()}}
	}
	return left
}

func (p *matchParser) or() *expr  { return p.binary(lexOR, p.and) }
func (p *matchParser) and() *expr { return p.binary(lexAND, p.not) }
func (p *matchParser) not() *expr { return p.binary(lexNOT, p.list) }

// list is one or more units side by side: their implicit AND.
func (p *matchParser) list() *expr {
	var kids []*expr
	for {
		switch p.peek(0) {
		case lexString, lexCaret, lexLCP, lexMinus, lexLP:
			if u := p.unit(); u != nil {
				kids = append(kids, u)
			}
			continue
		}
		break
	}
	if len(kids) == 0 {
		p.bad = true
		return &expr{op: lexAND}
	}
	// A phrase without tokens can never match; side by side with others
	// FTS5 drops it, so it does not stop them matching.
	kept := kids[:0]
	for _, k := range kids {
		if k.op != lexString || len(p.q.phrases[k.phrase].terms) > 0 {
			kept = append(kept, k)
		}
	}
	if len(kept) > 0 {
		kids = kept
	} else {
		kids = kids[:1]
	}
	if len(kids) == 1 {
		return kids[0]
	}
	return &expr{op: lexAND, kids: kids}
}

// unit is a parenthesized expression, a column filter with what it
// filters, a NEAR group, or a phrase.
func (p *matchParser) unit() *expr {
	switch p.peek(0) {
	case lexLP:
		p.k++
		e := p.or()
		if p.peek(0) != lexRP {
			p.bad = true
			return e
		}
		p.k++
		return e
	case lexMinus, lexLCP:
		p.colset()
		return p.filtered()
	case lexString:
		if p.peek(1) == lexColon {
			p.k++
			return p.filtered()
		}
		if p.lx[p.k].bare && p.lx[p.k].text == "NEAR" && p.peek(1) == lexLP {
			return p.near()
		}
	}
	return p.phrase()
}

// colset skips "-"? then a column name or {names}.
func (p *matchParser) colset() {
	if p.peek(0) == lexMinus {
		p.k++
	}
	if p.peek(0) == lexLCP {
		for p.k < len(p.lx) && p.lx[p.k].kind != lexRCP {
			p.k++
		}
		p.k++
		return
	}
	p.k++
}

// filtered reads ':' and what a column filter applies to.
func (p *matchParser) filtered() *expr {
	if p.peek(0) != lexColon {
		p.bad = true
		return nil
	}
	p.k++
	if p.peek(0) == lexLP {
		return p.unit()
	}
	if p.peek(0) == lexString && p.lx[p.k].bare && p.lx[p.k].text == "NEAR" && p.peek(1) == lexLP {
		return p.near()
	}
	return p.phrase()
}

// near reads NEAR(phrase phrase ... [, N]).
func (p *matchParser) near() *expr {
	p.k += 2
	e := &expr{op: lexAND}
	for p.peek(0) == lexString {
		e.kids = append(e.kids, p.phrase())
	}
	if p.peek(0) == lexComma {
		p.k += 2
	}
	if p.peek(0) != lexRP {
		p.bad = true
	}
	p.k++
	return e
}

// phrase reads ['^'] STRING ['*'] { '+' STRING ['*'] }.
func (p *matchParser) phrase() *expr {
	var ph phrase
	if p.peek(0) == lexCaret {
		ph.first = true
		p.k++
	}
	for {
		if p.peek(0) != lexString {
			p.bad = true
			break
		}
		toks, _ := p.tok.tokenize([]byte(p.lx[p.k].text), -1)
		p.k++
		n := len(ph.terms)
		for j := range toks.list {
			ph.terms = append(ph.terms, term{text: toks.text(j)})
		}
		if p.peek(0) == lexStar {
			p.k++
			if len(ph.terms) > n {
				ph.terms[len(ph.terms)-1].prefix = true
			}
		}
		if p.peek(0) != lexPlus {
			break
		}
		p.k++
	}
	p.q.phrases = append(p.q.phrases, ph)
	return &expr{op: lexString, phrase: len(p.q.phrases) - 1}
}

// matches reports whether e matches a row in which the phrases marked in
// occurs occur.
func (e *expr) matches(occurs []bool) bool {
	switch e.op {
	case lexString:
		return occurs[e.phrase]
	case lexOR:
		for _, k := range e.kids {
			if k.matches(occurs) {
				return true
			}
		}
		return false
	case lexNOT:
		return e.kids[0].matches(occurs) && !e.kids[1].matches(occurs)
	}
	for _, k := range e.kids {
		if !k.matches(occurs) {
			return false
		}
	}
	return true
}

// mark sets counted for the phrases whose instances FTS5 reports for a row
// e matches: FTS5 reports a phrase's instances when the phrase's cursor
// sits on the row, and after the row's match that holds for the phrases of
// every matching branch of an OR, every child of an AND, the left side of
// a NOT, and no others (a branch that did not match has moved its cursors
// past the row).
func (e *expr) mark(occurs, counted []bool) {
	switch e.op {
	case lexString:
		counted[e.phrase] = true
	case lexNOT:
		e.kids[0].mark(occurs, counted)
	case lexOR:
		for _, k := range e.kids {
			if k.matches(occurs) {
				k.mark(occurs, counted)
			}
		}
	default:
		for _, k := range e.kids {
			k.mark(occurs, counted)
		}
	}
}

// classes groups the query's phrases into distinct phrase classes: an
// instance is found once for all copies of a phrase.
func classes(phrases []phrase) (out []phraseClass, classOf []int) {
	classOf = make([]int, len(phrases))
	index := map[string]int{}
	for i, p := range phrases {
		classOf[i] = -1
		if len(p.terms) == 0 {
			continue // matches nothing in a row: no instances
		}
		var key strings.Builder
		for _, t := range p.terms {
			key.WriteString(t.text)
			if t.prefix {
				key.WriteString("\x00*")
			}
			key.WriteString("\x00\x00")
		}
		if p.first {
			key.WriteString("^")
		}
		c, ok := index[key.String()]
		if !ok {
			c = len(out)
			index[key.String()] = c
			out = append(out, phraseClass{terms: p.terms, first: p.first})
		}
		classOf[i] = c
	}
	return out, classOf
}

// countedInstances keeps the instances of the phrases whose instances FTS5
// reports for this row (see expr.mark), sets each class's copies and last,
// and orders instances at the same token as FTS5 does. If the expression
// could not be read, or reading it says the row does not match (it matched
// through a column or proximity this package does not model), every phrase
// counts.
func countedInstances(q query, ph []phraseClass, classOf []int, insts []instance) []instance {
	seen := make([]bool, len(ph))
	for _, in := range insts {
		seen[in.class] = true
	}
	occurs := make([]bool, len(q.phrases))
	counted := make([]bool, len(q.phrases))
	for i, c := range classOf {
		occurs[i] = c >= 0 && seen[c]
	}
	if q.root != nil && q.root.matches(occurs) {
		q.root.mark(occurs, counted)
	} else {
		for i := range counted {
			counted[i] = true
		}
	}
	for i, c := range classOf {
		if c >= 0 && counted[i] {
			ph[c].copies++
			ph[c].last = i
		}
	}
	out := insts[:0]
	for _, in := range insts {
		if ph[in.class].copies > 0 {
			out = append(out, in)
		}
	}
	// Among instances at one token, the phrase with the last counted copy
	// comes last.
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].off == out[i].off {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(out[i:j], func(a, b instance) int { return ph[a.class].last - ph[b.class].last })
		}
		i = j
	}
	return out
}

// findInstances returns every instance of the phrase classes in toks,
// ordered as FTS5 lists them (by token, then query order), and how many
// tokens it read: all of them, or fewer where the instances would have
// passed MaxSnippetInstances.
func findInstances(toks *tokens, ph []phraseClass, firstByte *[256]bool) ([]instance, int) {
	// Classes by their first term: exact texts in a map, prefixes by the
	// lengths they have, so each token costs a few map lookups whatever
	// the query.
	exact := map[string][]int32{}
	prefixes := map[string][]int32{}
	var prefixLens []int
	for c, p := range ph {
		t := p.terms[0]
		if !t.prefix {
			exact[t.text] = append(exact[t.text], int32(c))
			continue
		}
		prefixes[t.text] = append(prefixes[t.text], int32(c))
		if !slices.Contains(prefixLens, len(t.text)) {
			prefixLens = append(prefixLens, len(t.text))
		}
	}
	var out []instance
	var here []int32
	for i := range toks.list {
		here = here[:0]
		w := toks.text(i)
		if w == "" || !firstByte[w[0]] {
			continue
		}
		for _, c := range exact[w] {
			if matchesAt(toks, i, ph[c]) {
				here = append(here, c)
			}
		}
		for _, n := range prefixLens {
			if n <= len(w) {
				for _, c := range prefixes[w[:n]] {
					if matchesAt(toks, i, ph[c]) {
						here = append(here, c)
					}
				}
			}
		}
		if len(out)+len(here) > MaxSnippetInstances {
			return out, i
		}
		for _, c := range here {
			out = append(out, instance{off: int32(i), class: c})
		}
	}
	return out, len(toks.list)
}

// matchesAt reports whether phrase p occurs at token i.
func matchesAt(toks *tokens, i int, p phraseClass) bool {
	if p.first && i != 0 || i+len(p.terms) > len(toks.list) {
		return false
	}
	for j, t := range p.terms {
		w := toks.text(i + j)
		if t.prefix && !strings.HasPrefix(w, t.text) || !t.prefix && w != t.text {
			return false
		}
	}
	return true
}

// sentenceStarts returns the tokens that begin a sentence as FTS5's snippet
// sees them: the first token, and each token preceded by white space
// (space, tab, CR, LF) that follows a '.' or ':'.
func sentenceStarts(doc []byte, toks []docToken) []int {
	var out []int
	for i, t := range toks {
		if i == 0 {
			out = append(out, 0)
			continue
		}
		j := int(t.start) - 1
		for j >= 0 && (doc[j] == ' ' || doc[j] == '\t' || doc[j] == '\n' || doc[j] == '\r') {
			j--
		}
		if j != int(t.start)-1 && j >= 0 && (doc[j] == '.' || doc[j] == ':') {
			out = append(out, i)
		}
	}
	return out
}

// window holds the instances whose token lies in [from, to) with a running
// score: for each phrase class present, 1000 a copy for its first instance
// and 1 a copy for each further one, as FTS5 scores a window. Both bounds
// only ever move forward, so a pass over all windows is linear.
type window struct {
	insts  []instance
	ph     []phraseClass
	lo, hi int
	count  []int
	score  int
}

func newWindow(insts []instance, ph []phraseClass) *window {
	return &window{insts: insts, ph: ph, count: make([]int, len(ph))}
}

// moveTo moves the window to [from, to); neither may go back.
func (w *window) moveTo(from, to int) {
	for w.hi < len(w.insts) && int(w.insts[w.hi].off) < to {
		c := w.insts[w.hi].class
		if w.count[c] == 0 {
			w.score += 999 * w.ph[c].copies
		}
		w.count[c]++
		w.score += w.ph[c].copies
		w.hi++
	}
	for w.lo < w.hi && int(w.insts[w.lo].off) < from {
		c := w.insts[w.lo].class
		w.count[c]--
		w.score -= w.ph[c].copies
		if w.count[c] == 0 {
			w.score -= 999 * w.ph[c].copies
		}
		w.lo++
	}
}

// bestWindow returns the best score and the first token of the window FTS5
// would choose.
func bestWindow(insts []instance, ph []phraseClass, sentences []int, nToken, nDocsize int) (int, int) {
	best, bestStart := 0, 0
	at := newWindow(insts, ph)    // windows around instances
	after := newWindow(insts, ph) // windows from a sentence's start
	sentence := 0
	for k := 0; k < len(insts); k++ {
		io := int(insts[k].off)
		if k > 0 && io == int(insts[k-1].off) {
			continue // the same windows, the same scores: never better
		}
		at.moveTo(io, io+nToken)
		if at.hi > at.lo && at.score > best {
			last := insts[at.hi-1]
			iLast := int(last.off) + len(ph[last.class].terms)
			adj := io - (nToken-(iLast-io))/2
			if adj+nToken > nDocsize {
				adj = nDocsize - nToken
			}
			best, bestStart = at.score, max(adj, 0)
		}
		if len(sentences) > 0 && nDocsize > nToken {
			for sentence+1 < len(sentences) && sentences[sentence+1] <= io {
				sentence++
			}
			if s := sentences[sentence]; s < io {
				after.moveTo(s, s+nToken)
				score := after.score + 100
				if s == 0 {
					score += 20
				}
				if score > best {
					best, bestStart = score, s
				}
			}
		}
	}
	return best, bestStart
}

// render writes the window of nToken tokens from token start as FTS5's
// snippet does: text between and around the window's tokens kept, each run
// of overlapping instances wrapped in Open/Close, Ellipsis where the window
// does not reach an end of the text.
func (o Snippet) render(doc []byte, toks []docToken, insts []instance, ph []phraseClass, start, nToken, nDocsize int) string {
	var b []byte
	// add appends doc[from:to] as FTS5 does, through "%.*s": up to the
	// first NUL.
	add := func(from, to int) {
		if to <= from {
			return
		}
		seg := doc[from:to]
		if z := slices.Index(seg, 0); z >= 0 {
			seg = seg[:z]
		}
		b = append(b, seg...)
	}
	// Coalesced instances: runs of instances sharing tokens, in order.
	next := 0
	iStart, iEnd := -1, -1
	advance := func() {
		iStart, iEnd = -1, -1
		for next < len(insts) {
			in := insts[next]
			end := int(in.off) - 1 + len(ph[in.class].terms)
			switch {
			case iStart < 0:
				iStart, iEnd = int(in.off), end
			case int(in.off) <= iEnd:
				iEnd = max(iEnd, end)
			default:
				return
			}
			next++
		}
	}
	advance()
	end := start + nToken - 1
	if start > 0 {
		b = append(b, o.Ellipsis...)
	}
	for iStart >= 0 && iStart < start {
		advance()
	}
	off := 0
	open := false
	for pos := start; pos <= end && pos < len(toks); pos++ {
		ts, te := int(toks[pos].start), int(toks[pos].end)
		if start > 0 && pos == start {
			off = ts
		}
		if open && (pos <= iStart || iStart < 0) && ts > off {
			b = append(b, o.Close...)
			open = false
		}
		if pos == iStart && !open {
			add(off, ts)
			b = append(b, o.Open...)
			off = ts
			open = true
		}
		if pos == iEnd {
			if !open {
				b = append(b, o.Open...)
				open = true
			}
			add(off, te)
			off = te
			advance()
		}
		if pos == end {
			if open {
				if iStart >= 0 && pos >= iStart {
					add(off, te)
					off = te
				}
				b = append(b, o.Close...)
				open = false
			}
			add(off, te)
			off = te
		}
	}
	if open {
		b = append(b, o.Close...)
	}
	if end >= nDocsize-1 {
		add(off, len(doc))
	} else {
		b = append(b, o.Ellipsis...)
	}
	return string(b)
}
