// Package ftstest holds the query sanitizer's reference vectors for the
// tests of package fts and of every backend that hands sanitized queries
// to its engine.
package ftstest

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"testing"
)

// vectors pairs queries with fts.Sanitize's expected output, computed by
// testdata/sanitize_ref.py with Python's re, the engine Hermes runs.
//
//go:embed testdata/sanitize_vectors.jsonl
var vectors []byte

// Vector is one reference query and what fts.Sanitize must make of it.
type Vector struct{ In, Out string }

// Vectors returns every reference vector, in file order.
func Vectors(tb testing.TB) []Vector {
	tb.Helper()
	var out []Vector
	sc := bufio.NewScanner(bytes.NewReader(vectors))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v Vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("sanitize vector %d: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Queries returns the vectors' queries.
func Queries(tb testing.TB) []string {
	tb.Helper()
	vs := Vectors(tb)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.In
	}
	return out
}
