package fts

import (
	"strings"
	"testing"
)

var benchQueries = []struct{ name, q string }{
	{"short", "docker deployment"},
	{"punctuated", `foo "bar baz" my-app.config.ts user@example.com what's C# 100%`},
	{"long", strings.Repeat(`"a b" c-d.e f* AND g `, 200)},
	// Placeholder-shaped user text: a raw string would hold the backslash
	// escapes, not the NULs, and miss restoreExact's rewriting.
	{"NUL", "\x00" + strings.Repeat("\"a\" \x00Q0\x00 b ", 200)},
}

func BenchmarkSanitize(b *testing.B) { benchQueryFunc(b, Sanitize) }

func BenchmarkEscape(b *testing.B) { benchQueryFunc(b, Escape) }

// benchQueryFunc times f over each of benchQueries, one sub-benchmark each.
func benchQueryFunc(b *testing.B, f func(string) string) {
	for _, bq := range benchQueries {
		b.Run(bq.name, func(b *testing.B) {
			b.SetBytes(int64(len(bq.q)))
			for b.Loop() {
				f(bq.q)
			}
		})
	}
}
