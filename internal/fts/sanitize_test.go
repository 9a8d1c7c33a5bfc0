package fts

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb/internal/fts/ftstest"
)

// strCase is an input of a string function, what the function must give,
// and the name of its subtest.
type strCase struct{ name, in, want string }

// checkCases runs f on every case's input, each in a subtest, and reports
// every result other than the case's want, calling f fname.
func checkCases(t *testing.T, fname string, f func(string) string, cases []strCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := f(tc.in); got != tc.want {
				t.Errorf("%s(%q) = %q, want %q", fname, tc.in, got, tc.want)
			}
		})
	}
}

// specRow is one row of the table in section 7 of the history-store spec.
// escape is what Escape(in) must give, for the rows whose sanitized form
// FTS5 rejects; ftsError says FTS5 rejects the sanitized form.
type specRow struct {
	name      string
	in        string
	sanitized string
	ftsError  bool
	escape    string
}

// specTable holds every input of the section-7 table, one row each.
var specTable = []specRow{
	{name: "plain words", in: "hello world", sanitized: "hello world"},
	{name: "exact phrase", in: `"exact phrase"`, sanitized: `"exact phrase"`},
	{name: "phrase kept, hyphenated quoted", in: `foo "bar baz" qux-quux`, sanitized: `foo "bar baz" "qux-quux"`},
	{name: "prefix", in: "deploy*", sanitized: "deploy*"},
	{name: "leading stars", in: "***deploy", sanitized: "deploy"},
	{name: "lone star", in: "*", sanitized: ""},
	{name: "inner star run", in: "ab**c", sanitized: "ab*c"},
	{name: "OR", in: "docker OR kubernetes", sanitized: "docker OR kubernetes"},
	{name: "NOT", in: "python NOT java", sanitized: "python NOT java"},
	{name: "trailing AND", in: "hello AND", sanitized: "hello"},
	{name: "leading OR", in: "OR world", sanitized: "world"},
	{name: "only AND", in: "AND", sanitized: ""},
	{name: "trailing OR with spaces", in: "hello  OR  ", sanitized: "hello"},
	{name: "lowercase not eaten", in: "not this", sanitized: "this"},
	{name: "hyphenated", in: "chat-send", sanitized: `"chat-send"`},
	{name: "dotted", in: "P2.2", sanitized: `"P2.2"`},
	{name: "dotted and hyphenated", in: "my-app.config.ts", sanitized: `"my-app.config.ts"`},
	{name: "hyphenated prefix", in: "chat-send*", sanitized: `"chat-send"*`},
	{name: "underscores", in: "my_var_name", sanitized: "my_var_name"},
	{name: "unbalanced paren", in: "(unbalanced", sanitized: "unbalanced"},
	{name: "unbalanced quote", in: `say "hi`, sanitized: "say  hi"},
	{name: "plus signs", in: "C++", sanitized: "C"},
	{name: "inner plus", in: "a+b", sanitized: "a b"},
	{name: "braces", in: "{x}", sanitized: "x"},
	{name: "caret", in: "caret^", sanitized: "caret"},
	{name: "CJK", in: "大别山项目", sanitized: "大别山项目"},
	{name: "column filter", in: "TODO: fix", sanitized: "TODO: fix", ftsError: true, escape: `"TODO:" fix`},
	{name: "email", in: "user@example.com", sanitized: `user@"example.com"`, ftsError: true, escape: `"user@example.com"`},
	{name: "apostrophe", in: "what's", sanitized: "what's", ftsError: true, escape: `"what's"`},
	{name: "apostrophe then word", in: "it's done", sanitized: "it's done", ftsError: true, escape: `"it's" done`},
	{name: "question mark", in: "new?", sanitized: "new?", ftsError: true, escape: `"new?"`},
	{name: "slash", in: "a/b", sanitized: "a/b", ftsError: true, escape: `"a/b"`},
	{name: "equals", in: "x=1", sanitized: "x=1", ftsError: true, escape: `"x=1"`},
	{name: "hash", in: "C#", sanitized: "C#", ftsError: true, escape: `"C#"`},
	{name: "dollar", in: "$HOME", sanitized: "$HOME", ftsError: true, escape: `"$HOME"`},
	{name: "percent", in: "100%", sanitized: "100%", ftsError: true, escape: `"100%"`},
	{name: "leading minus", in: "-world", sanitized: "-world", ftsError: true, escape: `"-world"`},
	{name: "dotted then bang", in: "foo.bar!", sanitized: `"foo.bar"!`, ftsError: true, escape: `"foo.bar!"`},
	{name: "operator run", in: "a AND OR b", sanitized: "a AND OR b", ftsError: true, escape: "a OR b"},
	{name: "leading operator run", in: "AND OR hello", sanitized: "OR hello", ftsError: true, escape: "hello"},
	{name: "trailing minus", in: "hello -", sanitized: "hello -", ftsError: true, escape: "hello"},
}

// TestSpecTable: Sanitize gives every input's sanitized form, and Escape
// its escaped form where the table has one.
func TestSpecTable(t *testing.T) {
	for _, tc := range specTable {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sanitize(tc.in); got != tc.sanitized {
				t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.sanitized)
			}
			if got := Escape(tc.in); tc.escape != "" && got != tc.escape {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.escape)
			}
		})
	}
}

func TestSanitizeEdges(t *testing.T) {
	checkCases(t, "Sanitize", Sanitize, []strCase{
		{"empty", "", ""},
		{"only spaces", " \t\n ", ""},
		{"python-only white space trimmed", "\x1chello\x1f", "hello"},
		{"NBSP and ideographic space trimmed", "\u00a0hi\u3000", "hi"},
		{"star after tab deleted", "a\t*b", "a\tb"},
		{"star inside word kept", "a*b", "a*b"},
		{"stars after space deleted, prefix kept", "foo* **bar", "foo* bar"},
		{"leading operator needs a word boundary", "ANDROID app", "ANDROID app"},
		{"leading NOTE kept", "NOTE to self", "NOTE to self"},
		{"leading operator before punctuation", "AND-x", "-x"},
		{"leading operator before CJK is not a boundary", "AND大", "AND大"},
		{"only one leading operator", "or and x", "and x"},
		{"mixed-case operators", "Or x aNd", "x"},
		{"trailing operator needs white space", "xAND", "xAND"},
		{"only one trailing operator", "x AND OR", "x AND"},
		{"trailing operator after NBSP", "x\u00a0NOT", "x"},
		{"lone operator pair", "AND OR", "OR"},
		{"phrase protects operator", `"AND"`, `"AND"`},
		{"phrase protects specials", `"a+b (c)"`, `"a+b (c)"`},
		{"phrase protects stars", `"*x*"`, `"*x*"`},
		{"two phrases", `"a" "b-c" d-e`, `"a" "b-c" "d-e"`},
		{"third quote unmatched", `"a" "b`, `"a"  b`},
		{"empty phrase", `""`, `""`},
		{"phrase glued to compound", `x-y"z"`, `"x-y""z"`},
		{"compound chain stops at double dot", "a.b..c", `"a.b"..c`},
		{"trailing dot not in compound", "v1.2.", `"v1.2".`},
		{"two compounds split by punctuation", "a.b.-c.d", `"a.b".-"c.d"`},
		{"unicode letters are word characters", "café-crème", `"café-crème"`},
		{"CJK compound", "项目-大", `"项目-大"`},
		{"Arabic-Indic digits", "v\u0663.\u0664", "\"v\u0663.\u0664\""},
		{"vulgar fraction is a number", "½-x", `"½-x"`},
		{"combining mark is not a word character", "e\u0301-x", "e\u0301-x"},
		{"combining mark splits words", "xe\u0301.y-z", "xe\u0301.\"y-z\""},
		{"underscore compound", "_a-_b", `"_a-_b"`},
		{"placeholder-shaped text is rewritten like Hermes", "\x00Q0\x00 \"x\"", `"x" "x"`},
		{"NUL alone survives", "a\x00b", "a\x00b"},
		{"invalid UTF-8 reads as U+FFFD", "a\xffb", "a\uFFFDb"},
	})
}

// TestSanitizeMatchesPythonReference replays queries whose expected results
// came from the spec written with Python's own re module
// (ftstest/testdata/sanitize_ref.py), the engine Hermes runs.
func TestSanitizeMatchesPythonReference(t *testing.T) {
	vs := ftstest.Vectors(t)
	for i, v := range vs {
		if got := Sanitize(v.In); got != v.Out {
			t.Errorf("line %d: Sanitize(%q) = %q, want %q", i+1, v.In, got, v.Out)
		}
	}
	if n := len(vs); n < 1000 {
		t.Fatalf("only %d vectors read", n)
	}
}

func TestEscapeEdges(t *testing.T) {
	long := strings.Repeat("a ", MaxEscapeRunes) // 4096 runes
	checkCases(t, "Escape", Escape, []strCase{
		{"empty", "", ""},
		{"only punctuation", "!? - :", ""},
		{"plain words unchanged", "hello world", "hello world"},
		{"lowercase operators are words", "and or not", "and or not"},
		{"operators kept between words", "a AND b OR c NOT d", "a AND b OR c NOT d"},
		{"operators at the ends dropped", "NOT a OR", "a"},
		{"operator run reduced to last", "a OR NOT AND b", "a AND b"},
		{"only operators", "AND OR NOT", ""},
		{"NEAR is a plain word", "NEAR x", "NEAR x"},
		{"star-hidden operator quoted", "**AND", `"AND"`},
		{"star-hidden operator keeps prefix", "x *OR* y", `x "OR"* y`},
		{"balanced phrase verbatim", `say "hi there" now`, `say "hi there" now`},
		{"phrase keeps specials", `"a:b (c)"`, `"a:b (c)"`},
		{"phrase without bareword dropped", `x "!?" y`, "x y"},
		{"empty phrase dropped", `x "" y`, "x y"},
		{"phrase glued to words", `foo"bar baz"qux`, `foo "bar baz" qux`},
		{"unmatched quote is a space", `say "hi`, "say hi"},
		{"third quote unmatched", `"a b" c"d`, `"a b" c d`},
		{"prefix kept", "deploy*", "deploy*"},
		{"leading stars dropped", "***deploy", "deploy"},
		{"star run collapsed, one kept", "dep**", "dep*"},
		{"lone stars dropped", "* ** x", "x"},
		{"inner star quoted", "ab**c", `"ab*c"`},
		{"quoted prefix", "chat-send*", `"chat-send"*`},
		{"colon quoted", "a:b", `"a:b"`},
		{"caret and plus quoted", "^x +y", `"^x" "+y"`},
		{"parens quoted", "(a OR b)", `"(a" OR "b)"`},
		{"non-ASCII is bareword", "café 大别山", "café 大别山"},
		{"NBSP splits", "a\u00a0b", "a b"},
		{"substitute char is bareword", "a\x1ab", "a\x1ab"},
		{"NUL splits", "a\x00b", "a b"},
		{"NUL inside phrase", "\"a\x00b\"", `"a b"`},
		{"invalid UTF-8", "a\xff", "a\uFFFD"},
		{"cut at MaxEscapeRunes", long, strings.TrimSpace(long[:MaxEscapeRunes])},
		{"cut splits a phrase", strings.Repeat("x", MaxEscapeRunes-3) + ` "ab"`, strings.Repeat("x", MaxEscapeRunes-3) + " a"},
	})
}

func TestEscapeBoundsNotChains(t *testing.T) {
	q := "a" + strings.Repeat(" NOT b", 300)
	got := Escape(q)
	if n := strings.Count(got, "NOT"); n != maxNots {
		t.Fatalf("Escape kept %d NOTs, want %d", n, maxNots)
	}
	if n := strings.Count(got, "b"); n != 300 {
		t.Fatalf("Escape kept %d operands b, want 300", n)
	}
}

func FuzzSanitize(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, q string) {
		got := Sanitize(q)
		if !utf8.ValidString(got) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", q, got)
		}
		if strings.TrimFunc(got, isPySpace) != got {
			t.Fatalf("Sanitize(%q) = %q: not trimmed", q, got)
		}
	})
}

// TestSanitizeNotes: SanitizeNotes gives Sanitize's query byte for byte
// (every reference vector and spec row), and names each change it made.
func TestSanitizeNotes(t *testing.T) {
	for _, v := range ftstest.Vectors(t) {
		if got, _ := SanitizeNotes(v.In); got != v.Out {
			t.Fatalf("SanitizeNotes(%q) = %q, Sanitize gives %q", v.In, got, v.Out)
		}
	}
	for _, r := range specTable {
		if got, _ := SanitizeNotes(r.in); got != r.sanitized {
			t.Errorf("SanitizeNotes(%q) = %q, want %q", r.in, got, r.sanitized)
		}
	}
	cases := []struct {
		in   string
		want []Note
	}{
		{"hello world", []Note{}},
		{`"exact phrase" python NOT java`, []Note{}},
		{"NOT docker", []Note{{DroppedLeadingOperator, "NOT"}}},
		{"not this", []Note{{DroppedLeadingOperator, "not"}}},
		{"hello  or  ", []Note{{DroppedTrailingOperator, "or"}}},
		{"OR a AND", []Note{{DroppedLeadingOperator, "OR"}, {DroppedTrailingOperator, "AND"}}},
		{"C++ (x) ^y", []Note{{RemovedSyntax, "+()^"}}},
		{`say "hi`, []Note{{RemovedSyntax, `"`}}},
		{`"a+b" c`, []Note{}},
		{"***deploy *x", []Note{{DroppedLeadingStar, "*"}}},
		{"deploy* ab**c", []Note{}},
		{"chat-send my-app.config.ts", []Note{{QuotedCompound, "chat-send"}, {QuotedCompound, "my-app.config.ts"}}},
	}
	for _, tc := range cases {
		_, got := SanitizeNotes(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SanitizeNotes(%q) notes %v, want %v", tc.in, got, tc.want)
		}
	}
}
