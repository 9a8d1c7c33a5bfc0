package fts

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// sequentialRestore is Hermes' restore step verbatim: the definition
// restoreExact must agree with.
func sequentialRestore(s string, phrases []string) string {
	for i, p := range phrases {
		s = strings.ReplaceAll(s, placeholder(i), p)
	}
	return s
}

func TestSanitizeWithPlaceholderText(t *testing.T) {
	// Expected values computed by testdata/sanitize_ref.py.
	checkCases(t, "Sanitize", Sanitize, []strCase{
		{"phrase holding a later placeholder twice", "\x00 \"\x00Q1\x00\x00Q1\x00\" \"x\"", "\x00 \"\"x\"\"x\"\" \"x\""},
		{"user text overlapping our placeholder", "\x00Q1\x00Q0\x00 \"a\" \"b\"", "\x00Q1\"a\" \"a\" \"b\""},
		{"overlapping occurrences of one placeholder", "\x00Q0\x00Q0\x00 \"a\"", "\"a\"Q0\x00 \"a\""},
		{"earlier placeholder inside a later phrase stays", "\"\x00Q1\x00\" \"\x00Q0\x00\"", "\"\"\x00Q0\x00\"\" \"\x00Q0\x00\""},
		{"leading zero is not a placeholder", "\x00Q01\x00 \"a\" \"b\"", "\x00Q01\x00 \"a\" \"b\""},
		{"later placeholder in user text and phrase", "\x00Q2\x00 \"\x00Q2\x00\" \"b\" \"c\"", "\"c\" \"\"c\"\" \"b\" \"c\""},
	})
}

func TestRestoreExactMatchesSequential(t *testing.T) {
	parts := []string{"\x00", "Q", "0", "1", "2", "10", "x", " ", "\x00Q0\x00", "\x00Q1\x00", "\x00Q2\x00", "\x00Q10\x00", "\x00Q01\x00"}
	gen := func(r *rand.Rand, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		return b.String()
	}
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		k := r.IntN(12)
		phrases := make([]string, k)
		for j := range phrases {
			phrases[j] = `"` + gen(r, r.IntN(5)) + `"`
		}
		s := gen(r, r.IntN(10))
		for j := range phrases { // our own placeholders, at random places
			at := r.IntN(len(s) + 1)
			s = s[:at] + placeholder(j) + s[at:]
		}
		want := sequentialRestore(s, phrases)
		if got := restoreExact(s, phrases, 1<<20); got != want {
			t.Fatalf("case %d: restoreExact(%q, %q) = %q, want %q", i, s, phrases, got, want)
		}
	}
}

func TestRestoreExactCapsExponentialGrowth(t *testing.T) {
	// Phrase i holds two copies of placeholder i+1: Hermes would build a
	// string of 2^40 phrases. The query must come back empty instead.
	const depth = 40
	var q strings.Builder
	q.WriteString("\x00")
	for i := 1; i <= depth; i++ {
		q.WriteString(` "` + placeholder(i) + placeholder(i) + `"`)
	}
	q.WriteString(` "end"`)
	if got := Sanitize(q.String()); got != "" {
		t.Fatalf("Sanitize of a %d-byte exponential query = %d bytes, want empty", q.Len(), len(got))
	}
	// A smaller instance of the same shape is restored exactly.
	s := "\x00Q0\x00 \x00Q1\x00"
	phrases := []string{`"` + placeholder(1) + placeholder(1) + `"`, `"` + placeholder(2) + placeholder(2) + `"`, `"z"`}
	if got, want := restoreExact(s, phrases, 1<<10), sequentialRestore(s, phrases); got != want {
		t.Fatalf("restoreExact = %q, want %q", got, want)
	}
}
