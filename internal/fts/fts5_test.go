package fts

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// corpus is stored in the test FTS5 table, one row each; row ids start at 1
// in this order.
var corpus = []string{
	"hello world",
	"an exact phrase here",
	"foo bar baz and qux-quux",
	"deploy the deployment",
	"docker and kubernetes",
	"python not java",
	"chat-send failed",
	"milestone P2.2 done",
	"edit my-app.config.ts now",
	"rename my_var_name",
	"C++ and a+b",
	"大别山项目",
	"TODO: fix",
	"mail user@example.com",
	"what's up",
	"it's done",
	"new? a/b x=1 C# $HOME 100% -world",
	"foo.bar!",
}

// openFTS creates a temp-file database holding an FTS5 table t(content)
// filled with corpus. It is closed when tb ends.
func openFTS(tb testing.TB) *sql.DB {
	tb.Helper()
	db := openEmpty(tb)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE VIRTUAL TABLE t USING fts5(content)"); err != nil {
		tb.Fatalf("%s driver: %v", sqlitedb.DriverName, err)
	}
	for _, c := range corpus {
		if _, err := db.ExecContext(ctx, "INSERT INTO t(content) VALUES (?)", c); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// match runs q against t and returns the matching row ids in order.
func match(ctx context.Context, db *sql.DB, q string) ([]int64, error) {
	return sqlitedb.Append(ctx, db, "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", []any{q}, nil, sqlitedb.Value[int64])
}

// search is the flow of spec section 7: the sanitized query first, and on
// an FTS5 query error one retry with the escaped original.
func search(ctx context.Context, db *sql.DB, query string) (ids []int64, escaped bool, err error) {
	q := Sanitize(query)
	if q == "" {
		return nil, false, nil
	}
	ids, err = match(ctx, db, q)
	if err == nil || !sqlitedb.IsQueryError(err) {
		return ids, false, err
	}
	e := Escape(query)
	if e == "" {
		return nil, true, nil
	}
	ids, err = match(ctx, db, e)
	return ids, true, err
}

func TestSpecTableAgainstFTS5(t *testing.T) {
	ctx := context.Background()
	db := openFTS(t)
	for _, tc := range specTable {
		t.Run(tc.name, func(t *testing.T) {
			q := Sanitize(tc.in)
			if q != "" {
				_, err := match(ctx, db, q)
				switch {
				case tc.ftsError && err == nil:
					t.Errorf("MATCH %q (from %q) succeeded; the spec says FTS5 rejects it", q, tc.in)
				case tc.ftsError && !sqlitedb.IsQueryError(err):
					t.Errorf("MATCH %q: %v is not an FTS query error", q, err)
				case !tc.ftsError && err != nil:
					t.Errorf("MATCH %q (from %q): %v", q, tc.in, err)
				}
			}
			if e := Escape(tc.in); e != "" {
				if _, err := match(ctx, db, e); err != nil {
					t.Errorf("MATCH Escape(%q) = %q: %v", tc.in, e, err)
				}
			}
		})
	}
}

func TestSearchFindsPunctuatedText(t *testing.T) {
	ctx := context.Background()
	db := openFTS(t)
	tests := []struct {
		name, query string
		row         int64 // 1-based index into corpus
		escaped     bool  // found only by the Escape retry
	}{
		{"apostrophe", "what's", 15, true},
		{"apostrophe in a sentence", "it's done", 16, true},
		{"slash", "a/b", 17, true},
		{"hash", "C#", 17, true},
		{"email", "user@example.com", 14, true},
		{"percent", "100%", 17, true},
		{"column-filter lookalike", "TODO: fix", 13, true},
		{"dotted then bang", "foo.bar!", 18, true},
		{"leading minus", "-world", 17, true},
		{"hyphenated", "chat-send", 7, false},
		{"dotted version", "P2.2", 8, false},
		{"file name", "my-app.config.ts", 9, false},
		{"underscores", "my_var_name", 10, false},
		{"prefix", "deploy*", 4, false},
		{"phrase", `"exact phrase"`, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, escaped, err := search(ctx, db, tc.query)
			if err != nil {
				t.Fatalf("search %q: %v", tc.query, err)
			}
			if !slices.Contains(ids, tc.row) {
				t.Errorf("search %q = rows %v, want row %d (%q) among them", tc.query, ids, tc.row, corpus[tc.row-1])
			}
			if escaped != tc.escaped {
				t.Errorf("search %q used the escape retry: %v, want %v", tc.query, escaped, tc.escaped)
			}
		})
	}
}

func TestOperatorsStillWork(t *testing.T) {
	ctx := context.Background()
	db := openFTS(t)
	tests := []struct {
		name, query string
		want        []int64
	}{
		{"OR", "docker OR kubernetes", []int64{5}},
		{"NOT", "and NOT kubernetes", []int64{3, 11}},
		{"AND", "python AND java", []int64{6}},
		{"escaped OR", Escape("what's OR hello"), []int64{1, 15}},
		{"escaped NOT", Escape("it's NOT done"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := match(ctx, db, tc.query)
			if err != nil {
				t.Fatalf("MATCH %q: %v", tc.query, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("MATCH %q = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

// fuzzSeeds are extra inputs beyond the spec table for both fuzz targets:
// operator runs, quotes in odd places, controls, long NOT chains.
var fuzzSeeds = []string{
	"", `"`, `""`, `"""`, `a"b"c"d`, "*", "**a**", "a NOT NOT b", "NOT", "a\vb", "a\x00b", "\"a\x00b\"",
	"a:b", "**AND", "*OR*", "NEAR(a b)", "x^y", "\x1a*", "_", "é\u0301-x", "\xff\xfe",
}

// seedQueries are the spec table's inputs, then the fuzz seeds.
func seedQueries() []string {
	var out []string
	for _, tc := range specTable {
		out = append(out, tc.in)
	}
	return append(out, fuzzSeeds...)
}

// seedFuzz adds seedQueries to f's corpus.
func seedFuzz(f *testing.F) {
	for _, q := range seedQueries() {
		f.Add(q)
	}
}

func FuzzEscape(f *testing.F) {
	seedFuzz(f)
	db := openFTS(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string) {
		e := Escape(q)
		if !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) = %q: invalid UTF-8", q, e)
		}
		if e == "" {
			return
		}
		if _, err := match(ctx, db, e); err != nil {
			t.Fatalf("MATCH Escape(%q) = %q: %v", q, e, err)
		}
	})
}

func TestEscapeLongQueriesAgainstFTS5(t *testing.T) {
	ctx := context.Background()
	db := openFTS(t)
	tests := []struct{ name, q string }{
		{"NOT chain beyond FTS5's depth", "a" + strings.Repeat(" NOT b", 300)},
		{"NOT chain with implicit ANDs", "a" + strings.Repeat(" NOT b c", 300)},
		{"operators of every kind", strings.Repeat("x AND y OR z NOT w ", 150)},
		{"punctuation soup", strings.Repeat(`a:b "c (d)" e^f -g +h* `, 120)},
		{"one huge word", strings.Repeat("ab'", 3000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Escape(tc.q)
			if e == "" {
				t.Fatalf("Escape(%d bytes) is empty", len(tc.q))
			}
			if _, err := match(ctx, db, e); err != nil {
				t.Fatalf("MATCH Escape(...) (%d bytes): %v", len(e), err)
			}
		})
	}
}
