package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// slowSearchStore writes a store on which searching the same word 400 times
// runs for minutes: FTS5 spends about a third of a second on each of its
// 200 messages, each made of that word.
func slowSearchStore(t *testing.T, e env) (db, query string) {
	t.Helper()
	db = filepath.Join(e.Home, "slow.db")
	var msgs []string
	for i := range 200 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q,"timestamp":%d}`, strings.Repeat("a ", 500), 1700000001+i))
	}
	e.importLines(t, db, `{"id":"slow","source":"cli","started_at":1700000000,"messages":[`+strings.Join(msgs, ",")+`]}`)
	return db, strings.Repeat("a ", 400)
}

// TestSearchStopsOnSignal: Ctrl-C (SIGINT) or SIGTERM during a search that
// would run for minutes ends the command soon after, with the shell's
// status for an interrupt, 130.
func TestSearchStopsOnSignal(t *testing.T) {
	e := newEnv(t)
	db, query := slowSearchStore(t, e)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, wait := e.start(t, "--db", db, "search", query)
			if !waitBusy(t, cmd.Process.Pid, 50) {
				t.Fatalf("the search ended before it was interrupted: %s", wait())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if r := wait(); r.Code != 130 {
				t.Fatalf("after %v: %s; want exit 130", sig, r)
			}
		})
	}
}

// TestSearchLargeMessage: a 5 MB message holding the term 1,000,000 times
// is found at once (FTS5's own snippet() took hours on it and ignored
// Ctrl-C), and the snippet marks the matches.
func TestSearchLargeMessage(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.Home, "big.db")
	e.importLines(t, db, fmt.Sprintf(`{"id":"big","source":"cli","started_at":1700000000,"messages":[{"role":"user","content":%q,"timestamp":1700000001}]}`,
		strings.Repeat("word ", 1_000_000)))
	r := e.must(t, "--db", db, "--json", "search", "word", "--limit", "1")
	var out struct{ Hits []struct{ Snippet string } }
	err := json.Unmarshal([]byte(r.Stdout), &out)
	hits := out.Hits
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v (%v) from %s", hits, err, r)
	}
	if want := strings.Repeat(">>>word<<< ", 39) + ">>>word<<<..."; hits[0].Snippet != want {
		t.Errorf("snippet = %q, want %q", hits[0].Snippet, want)
	}
}
