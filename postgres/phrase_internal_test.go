package postgres

import "testing"

// phraseWords gives a phrase's words as a condition every match meets,
// and nothing where that would not hold (a negated phrase) or help (no
// phrase).
func TestPhraseWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"('on' <-> 'riocacen')", "('on' & 'riocacen')"},
		{"('foo' & ('bar' <-> 'baz':*))", "('foo' & ('bar' & 'baz':*))"},
		{"'docker'", ""},
		{"('a' | 'b')", ""},
		{"!('on' <-> 'riocacen')", ""},
	} {
		if got := phraseWords(c.in); got != c.want {
			t.Errorf("phraseWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
