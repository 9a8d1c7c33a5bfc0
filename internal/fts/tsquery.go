package fts

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrSyntax is what TSQuery returns for an expression FTS5 would reject:
// the caller then tries Escape's form of the user's query, as the SQLite
// backend does when FTS5 rejects Sanitize's output.
var ErrSyntax = errors.New("fts: the query is not a valid full-text expression")

// Query is an FTS5 expression translated for PostgreSQL.
type Query struct {
	// Text is the expression in to_tsquery's input syntax: every word a
	// quoted operand, phrases joined with <->, a prefix marked :*, and &,
	// |, ! for AND, OR and NOT. "" means the expression holds no word:
	// nothing to search for.
	Text string
	// Terms are the words a hit may show (those not under NOT), for
	// marking matches in snippets.
	Terms []Term
}

// Term is one phrase of a query: its words in order, the last one a
// prefix when Prefix is set.
type Term struct {
	Words  []string
	Prefix bool
}

// TSQuery translates an FTS5 expression, as Sanitize or Escape write them,
// into a PostgreSQL tsquery with the same meaning, so both backends find
// the same rows:
//
//   - a bareword or a "quoted string" is a phrase of the words in it, split
//     where FTS5's unicode61 tokenizer splits (every ASCII character other
//     than a letter or digit); a trailing * makes its last word a prefix;
//   - juxtaposition and AND are conjunction, OR disjunction, NOT "and not",
//     with FTS5's precedence (juxtaposition binds tightest, then NOT, AND,
//     OR: "a NOT b c" is a and not (b and c));
//   - a column filter "content:" (or "content :", "\"CONTENT\":") names
//     the one column every Hermes full-text table has, so it filters
//     nothing: "content:hello" finds what "hello" finds, as FTS5 does with
//     the expression Hermes v6's sanitizer leaves; "-content:" leaves no
//     column, so its phrase matches nothing.
//
// Words are passed to to_tsquery quoted, so PostgreSQL lower-cases them and
// folds their diacritics exactly as it did the indexed text, and no input
// can make it raise a syntax error. An expression FTS5 rejects (an operator
// with a missing operand, an unterminated string, a stray * or any ASCII
// punctuation outside quotes, which FTS5 reads as syntax, a column filter
// naming another column, which FTS5 refuses as "no such column") returns
// ErrSyntax. Phrases without words drop out, as to_tsquery drops operands
// without lexemes.
func TSQuery(expr string) (Query, error) {
	toks, err := lexFTS5(expr)
	if err != nil || len(toks) == 0 {
		return Query{}, err
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err != nil {
		return Query{}, err
	}
	if p.i < len(p.toks) {
		return Query{}, ErrSyntax
	}
	var q Query
	q.Text, _ = n.text() // an expression that matches nothing searches nothing
	n.terms(&q.Terms, false)
	return q, nil
}

// ftsColumn is the one column of every full-text table Hermes and this
// store make (messages_fts and its trigram and recent companions).
const ftsColumn = "content"

// lexeme is one lexeme of an FTS5 expression.
type lexeme struct {
	op     string // "AND", "OR", "NOT", ":", "-"; "" for a phrase
	raw    string // a phrase's text as written (unquoted): a column's name
	words  []string
	prefix bool
	none   bool // under a column filter that leaves no column: matches nothing
}

func isFTS5Space(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// lexFTS5 splits an expression into phrases and operators.
func lexFTS5(s string) ([]lexeme, error) {
	var out []lexeme
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case isFTS5Space(r):
			i += size
		case r == '"':
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return nil, ErrSyntax
				}
				b.WriteString(s[j : j+k])
				j += k + 1
				if j < len(s) && s[j] == '"' { // "" is a quote inside
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			t := lexeme{raw: b.String(), words: words(b.String())}
			if j < len(s) && s[j] == '*' {
				t.prefix = true
				j++
			}
			out = append(out, t)
			i = j
		case isBareword(r):
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if !isBareword(r) {
					break
				}
				j += size
			}
			w := s[i:j]
			t := lexeme{raw: w, words: words(w)}
			if j < len(s) && s[j] == '*' {
				t.prefix = true
				j++
			} else if isOperator(w) {
				t = lexeme{op: w}
			}
			out = append(out, t)
			i = j
		case r == ':' || r == '-':
			out = append(out, lexeme{op: string(r)})
			i += size
		default:
			return nil, ErrSyntax
		}
	}
	return out, nil
}

// words splits a phrase where unicode61 splits ASCII text: at every ASCII
// character that is not a letter or digit. Other characters stay in the
// words; PostgreSQL's parser splits them as it split the indexed text.
// Invalid UTF-8 reads as U+FFFD.
func words(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		if r < utf8.RuneSelf && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			flush()
			continue
		}
		b.WriteRune(r)
	}
	flush()
	return out
}

// node is a parsed expression: a phrase, or an AND/OR list, with NOT as
// an AND member marked negated.
type node struct {
	phrase *lexeme
	op     string // "&" or "|"
	kids   []*node
	neg    bool
}

type parser struct {
	toks []lexeme
	i    int
}

func (p *parser) peekOp(op string) bool { return p.i < len(p.toks) && p.toks[p.i].op == op }

// atUnit reports whether a phrase or a column filter starts here.
func (p *parser) atUnit() bool { return p.peekOp("") || p.peekOp("-") }

func (p *parser) or() (*node, error) {
	n := &node{op: "|"}
	for {
		k, err := p.and()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, k)
		if !p.peekOp("OR") {
			return n, nil
		}
		p.i++
	}
}

func (p *parser) and() (*node, error) {
	n := &node{op: "&"}
	for {
		if err := p.not(n); err != nil {
			return nil, err
		}
		if !p.peekOp("AND") {
			return n, nil
		}
		p.i++
	}
}

// not appends "l (NOT l)*" to the AND list n, where each l is a list of
// units side by side: a NOT b c NOT d is a AND NOT (b c) AND NOT d.
func (p *parser) not(n *node) error {
	l, err := p.list()
	if err != nil {
		return err
	}
	n.kids = append(n.kids, l)
	for p.peekOp("NOT") {
		p.i++
		l, err := p.list()
		if err != nil {
			return err
		}
		l.neg = true
		n.kids = append(n.kids, l)
	}
	return nil
}

// list reads one or more units side by side (FTS5's implicit AND).
func (p *parser) list() (*node, error) {
	u, err := p.unit()
	if err != nil || !p.atUnit() {
		return u, err
	}
	n := &node{op: "&", kids: []*node{u}}
	for p.atUnit() {
		u, err := p.unit()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, u)
	}
	return n, nil
}

// unit reads a phrase, with the column filter before it if any: "col :"
// or "- col :", where col is a bareword or a string naming ftsColumn in
// any case.
func (p *parser) unit() (*node, error) {
	neg := p.peekOp("-")
	if neg {
		p.i++
	}
	if p.i+1 < len(p.toks) && p.toks[p.i].op == "" && p.toks[p.i+1].op == ":" {
		col := p.toks[p.i]
		if col.prefix || !strings.EqualFold(col.raw, ftsColumn) {
			return nil, ErrSyntax
		}
		p.i += 2
		t, err := p.phrase()
		if err != nil {
			return nil, err
		}
		t.phrase.none = neg
		return t, nil
	}
	if neg {
		return nil, ErrSyntax
	}
	return p.phrase()
}

func (p *parser) phrase() (*node, error) {
	if p.i >= len(p.toks) || p.toks[p.i].op != "" {
		return nil, ErrSyntax
	}
	t := p.toks[p.i]
	p.i++
	return &node{phrase: &t}, nil
}

// text writes n in to_tsquery's syntax; "" when n holds no word. none
// reports an expression that matches nothing whatever the text (a phrase
// under "-content:", and what such a phrase makes of an AND or an OR).
func (n *node) text() (t string, none bool) {
	if n.phrase != nil {
		ws := n.phrase.words
		if n.phrase.none {
			return "", true
		}
		if len(ws) == 0 {
			return "", false
		}
		parts := make([]string, len(ws))
		for i, w := range ws {
			parts[i] = "'" + w + "'"
		}
		if n.phrase.prefix {
			parts[len(parts)-1] += ":*"
		}
		if len(parts) == 1 {
			return parts[0], false
		}
		return "(" + strings.Join(parts, " <-> ") + ")", false
	}
	var pos, neg []string
	nones := 0
	for _, k := range n.kids {
		t, none := k.text()
		switch {
		case none && k.neg:
			// and not nothing: no condition
		case none && n.op == "&":
			return "", true
		case none:
			nones++
		case t == "":
		case k.neg:
			neg = append(neg, "!"+t)
		default:
			pos = append(pos, t)
		}
	}
	if len(pos) == 0 {
		// Only negated (or empty) members: FTS5 has no such expression
		// (NOT needs a left operand), and a left operand without words
		// matches nothing here, as to_tsquery would make of it. An OR
		// whose every member matches nothing matches nothing.
		return "", n.op == "|" && nones == len(n.kids)
	}
	all := append(pos, neg...)
	if len(all) == 1 {
		return all[0], false
	}
	return "(" + strings.Join(all, " "+n.op+" ") + ")", false
}

// terms collects the phrases of n not under NOT.
func (n *node) terms(out *[]Term, neg bool) {
	if n.neg || neg {
		return
	}
	if n.phrase != nil {
		if len(n.phrase.words) > 0 && !n.phrase.none {
			*out = append(*out, Term{Words: n.phrase.words, Prefix: n.phrase.prefix})
		}
		return
	}
	for _, k := range n.kids {
		k.terms(out, false)
	}
}
