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
//     with FTS5's precedence (NOT binds tightest, OR loosest).
//
// Words are passed to to_tsquery quoted, so PostgreSQL lower-cases them and
// folds their diacritics exactly as it did the indexed text, and no input
// can make it raise a syntax error. An expression FTS5 rejects (an operator
// with a missing operand, an unterminated string, a stray * or any ASCII
// punctuation outside quotes, which FTS5 reads as syntax) returns
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
	q.Text = n.text()
	n.terms(&q.Terms, false)
	return q, nil
}

// lexeme is one lexeme of an FTS5 expression.
type lexeme struct {
	op     string // "AND", "OR", "NOT"; "" for a phrase
	words  []string
	prefix bool
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
			t := lexeme{words: words(b.String())}
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
			t := lexeme{words: words(w)}
			if j < len(s) && s[j] == '*' {
				t.prefix = true
				j++
			} else if isOperator(w) {
				t = lexeme{op: w}
			}
			out = append(out, t)
			i = j
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
		switch {
		case p.peekOp("AND"):
			p.i++
		case p.i < len(p.toks) && p.toks[p.i].op == "":
			// juxtaposition
		default:
			return n, nil
		}
	}
}

// not appends "t (NOT t)*" to the AND list n: a NOT b NOT c is a AND NOT b
// AND NOT c.
func (p *parser) not(n *node) error {
	t, err := p.phrase()
	if err != nil {
		return err
	}
	n.kids = append(n.kids, t)
	for p.peekOp("NOT") {
		p.i++
		t, err := p.phrase()
		if err != nil {
			return err
		}
		t.neg = true
		n.kids = append(n.kids, t)
	}
	return nil
}

func (p *parser) phrase() (*node, error) {
	if p.i >= len(p.toks) || p.toks[p.i].op != "" {
		return nil, ErrSyntax
	}
	t := p.toks[p.i]
	p.i++
	return &node{phrase: &t}, nil
}

// text writes n in to_tsquery's syntax; "" when n holds no word.
func (n *node) text() string {
	if n.phrase != nil {
		ws := n.phrase.words
		if len(ws) == 0 {
			return ""
		}
		parts := make([]string, len(ws))
		for i, w := range ws {
			parts[i] = "'" + w + "'"
		}
		if n.phrase.prefix {
			parts[len(parts)-1] += ":*"
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return "(" + strings.Join(parts, " <-> ") + ")"
	}
	var pos, neg []string
	for _, k := range n.kids {
		t := k.text()
		switch {
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
		// matches nothing here, as to_tsquery would make of it.
		return ""
	}
	all := append(pos, neg...)
	if len(all) == 1 {
		return all[0]
	}
	return "(" + strings.Join(all, " "+n.op+" ") + ")"
}

// terms collects the phrases of n not under NOT.
func (n *node) terms(out *[]Term, neg bool) {
	if n.neg || neg {
		return
	}
	if n.phrase != nil {
		if len(n.phrase.words) > 0 {
			*out = append(*out, Term{Words: n.phrase.words, Prefix: n.phrase.prefix})
		}
		return
	}
	for _, k := range n.kids {
		k.terms(out, false)
	}
}
