package fts

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/fts/ftstest"
)

func TestTSQuery(t *testing.T) {
	cases := []struct {
		in, want string
		terms    []Term
	}{
		{in: "hello world", want: "('hello' & 'world')", terms: []Term{{Words: []string{"hello"}}, {Words: []string{"world"}}}},
		{in: `"exact phrase"`, want: "('exact' <-> 'phrase')"},
		{in: "deploy*", want: "'deploy':*", terms: []Term{{Words: []string{"deploy"}, Prefix: true}}},
		{in: "docker OR kubernetes", want: "('docker' | 'kubernetes')"},
		{in: "python NOT java", want: "('python' & !'java')", terms: []Term{{Words: []string{"python"}}}},
		{in: "a NOT b NOT c", want: "('a' & !'b' & !'c')"},
		{in: "a OR b NOT c", want: "('a' | ('b' & !'c'))"},
		{in: "a b OR c", want: "(('a' & 'b') | 'c')"},
		{in: "a AND b", want: "('a' & 'b')"},
		{in: `"chat-send"*`, want: "('chat' <-> 'send':*)"},
		{in: `foo "bar baz" "qux-quux"`, want: "('foo' & ('bar' <-> 'baz') & ('qux' <-> 'quux'))"},
		{in: "my_var_name", want: "('my' <-> 'var' <-> 'name')"},
		{in: `"it""s"`, want: "('it' <-> 's')"},
		{in: "and or not", want: "('and' & 'or' & 'not')"},
		{in: "大别山项目", want: "'大别山项目'"},
		{in: `"..."`, want: ""},
		{in: `x "!!!"`, want: "'x'"},
		{in: `"!!!" NOT x`, want: ""},
		{in: "", want: ""},
		// FTS5's precedence: side by side binds tighter than NOT.
		{in: "world NOT hello foo", want: "('world' & !('hello' & 'foo'))", terms: []Term{{Words: []string{"world"}}}},
		{in: "a NOT b c NOT d", want: "('a' & !('b' & 'c') & !'d')"},
		{in: "a b NOT c", want: "(('a' & 'b') & !'c')"},
		// A column filter on the one column filters nothing; "-content:"
		// leaves no column, so its phrase matches nothing.
		{in: "content:hello", want: "'hello'", terms: []Term{{Words: []string{"hello"}}}},
		{in: "CONTENT : hello", want: "'hello'"},
		{in: `"Content":"hello world"`, want: "('hello' <-> 'world')"},
		{in: "content:hello*", want: "'hello':*"},
		{in: "content:hello world", want: "('hello' & 'world')"},
		{in: "-content:hello", want: ""},
		{in: `- "content" : hello`, want: ""},
		{in: "world -content:hello", want: ""},
		{in: "world OR -content:hello", want: "'world'", terms: []Term{{Words: []string{"world"}}}},
		{in: "-content:a OR -content:b", want: ""},
		{in: "world NOT -content:hello", want: "'world'"},
		{in: `content:"!!" hello`, want: "'hello'"},
	}
	for _, tc := range cases {
		got, err := TSQuery(tc.in)
		if err != nil {
			t.Errorf("TSQuery(%q): %v", tc.in, err)
			continue
		}
		if got.Text != tc.want {
			t.Errorf("TSQuery(%q) = %q, want %q", tc.in, got.Text, tc.want)
		}
		if tc.terms != nil && !reflect.DeepEqual(got.Terms, tc.terms) {
			t.Errorf("TSQuery(%q) terms = %v, want %v", tc.in, got.Terms, tc.terms)
		}
	}
}

// TestTSQueryRejectsWhatFTS5Rejects: these expressions are FTS5 syntax
// errors, so the store retries them escaped, as the SQLite backend does.
func TestTSQueryRejectsWhatFTS5Rejects(t *testing.T) {
	for _, in := range []string{"OR x", "x AND", "a AND OR b", "NOT", "TODO: fix", `user@"example.com"`, "what's", "hello -", `"unterminated`, "*", "a * b", "C#", "x=1", "(a)", "a+b", "foo.bar",
		"foo:hello", `"con tent":hello`, `"content ":hello`, "content*:hello", "content:", "hello content:", "content:content:hello",
		"content:-hello", "NOT content:hello", "content:NOT", "-hello", "- content hello", "x -y"} {
		if q, err := TSQuery(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("TSQuery(%q) = %q, %v; want ErrSyntax", in, q.Text, err)
		}
	}
}

// queryCorpus is every query the sanitizer's tests and fuzz seeds hold,
// plus the Python reference vectors.
func queryCorpus(t *testing.T) []string {
	t.Helper()
	out := seedQueries()
	out = append(out, corpus...)
	out = append(out, ftstest.Queries(t)...)
	out = append(out, strings.Repeat("a NOT ", 400)+"b", strings.Repeat(`"x y" OR `, 300)+"z", strings.Repeat("word* ", 2000))
	return out
}

// TestEscapedAlwaysTranslates: the second attempt never fails, so no
// query is refused once escaped.
func TestEscapedAlwaysTranslates(t *testing.T) {
	for _, q := range queryCorpus(t) {
		if e := Escape(q); e != "" {
			if _, err := TSQuery(e); err != nil {
				t.Errorf("TSQuery(Escape(%q) = %q): %v", q, e, err)
			}
		}
	}
}

func FuzzTSQuery(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := TSQuery(Sanitize(q)); err != nil && !errors.Is(err, ErrSyntax) {
			t.Fatalf("TSQuery(Sanitize(%q)): %v", q, err)
		}
		if e := Escape(q); e != "" {
			tq, err := TSQuery(e)
			if err != nil {
				t.Fatalf("TSQuery(Escape(%q) = %q): %v", q, e, err)
			}
			if strings.ContainsAny(tq.Text, "\\\x00") {
				t.Fatalf("TSQuery(Escape(%q)) = %q holds a backslash or NUL", q, tq.Text)
			}
		}
	})
}
