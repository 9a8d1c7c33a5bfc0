package faults

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileQueries are search strings a user or an agent could pass, each
// built to trip the query sanitizer, FTS5's parser or the terminal.
var hostileQueries = []struct{ name, q string }{
	{"fts syntax soup", `"a" AND (OR NOT *** NEAR( { } : ^ + - col:x "unterminated`},
	{"operators only", "AND OR NOT AND"},
	{"column filter", "content:docker {content}: hello"},
	{"near", "NEAR(docker compose, 2)"},
	{"punctuation 10 kB", strings.Repeat("!@#$%^&*()_+-=[]{};:,./<>?|~`'\"\\", 320)},
	{"invalid utf-8", "ab\xff\xfe\xc3(cd docker\xed\xa0\x80"},
	{"control characters", "docker\x1b]0;PWNED\x07\x1b[2J\x01\x7f\x08"},
	{"lone stars", "* ** *** docker* *docker"},
	{"long word", strings.Repeat("docker", 2000)},
	{"many terms", strings.Repeat("docker compose ", 300)},
}

// TestHostileSearchInput runs every hostile query against a store holding
// the example conversations, as text and as JSON: each search ends with
// results or with a clear "invalid" error, never an internal error, a
// panic or a hang, and the store file is not changed by it.
func TestHostileSearchInput(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "state.db")
	e.must(t, "--db", db, "quickstart")
	e.must(t, "--db", db, "doctor") // settle the file before taking its bytes
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range hostileQueries {
		t.Run(tc.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				args := []string{"--db", db, "search", tc.q}
				if asJSON {
					args = append([]string{"--json"}, args...)
				}
				r := e.run(t, "", args...)
				if strings.Contains(r.Stderr, "panic") || strings.Contains(r.Stderr, "goroutine ") {
					t.Fatalf("json=%v: the search panicked: %s", asJSON, r)
				}
				switch r.Code {
				case 0:
					if asJSON && !json.Valid([]byte(r.Stdout)) {
						t.Fatalf("json=%v: output is not JSON: %s", asJSON, r)
					}
				case 2:
					if !strings.Contains(r.Stderr, "search") {
						t.Fatalf("json=%v: the refusal does not say what was refused: %s", asJSON, r)
					}
				default:
					t.Fatalf("json=%v: want exit 0 (results) or 2 (invalid query): %s", asJSON, r)
				}
			}
		})
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("searching changed the store file (%d bytes before, %d after)", len(before), len(after))
	}
}
