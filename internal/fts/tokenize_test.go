package fts

import (
	"context"
	"database/sql"
	"encoding/hex"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// openEmpty returns a fresh database for FTS5 experiments, closed when tb
// ends.
func openEmpty(tb testing.TB) *sql.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "tok.db")
	if _, _, err := sqlitedb.CreateFile(path, 0o700, 0o600); err != nil {
		tb.Fatal(err)
	}
	db, err := sqlitedb.Open(sqlitedb.Config{Path: path, MaxConns: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// sqliteTokens indexes docs in an FTS5 table with tokenizer tok and returns
// the terms SQLite stored for each document, in order.
func sqliteTokens(t *testing.T, db *sql.DB, tok string, docs []string) [][]string {
	t.Helper()
	ctx := context.Background()
	table := "tok_" + tok
	for _, q := range []string{
		"CREATE VIRTUAL TABLE " + table + " USING fts5(x, tokenize=" + tok + ")",
		"CREATE VIRTUAL TABLE " + table + "_v USING fts5vocab(" + table + ", 'instance')",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+"(rowid, x) VALUES (?, ?)", i+1, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// One row a document, joined in SQLite: reading a row per token costs
	// minutes under the race detector.
	out := make([][]string, len(docs))
	err = sqlitedb.Each(ctx, db, "SELECT doc, group_concat(hex(term), ',' ORDER BY offset) FROM "+table+"_v GROUP BY doc", nil, func(r sqlitedb.Row) error {
		var doc int
		var terms string
		if err := r.Scan(&doc, &terms); err != nil {
			return err
		}
		for _, h := range strings.Split(terms, ",") {
			b, err := hex.DecodeString(h)
			if err != nil {
				return err
			}
			out[doc-1] = append(out[doc-1], string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tokenDocs are documents covering every code point SQLite can store in
// valid UTF-8 (64 a document, each between two ASCII letters, so that
// separators, token characters and marks each leave a different trace),
// plus documents of random bytes, which are mostly invalid UTF-8.
func tokenDocs() []string {
	var docs []string
	var b strings.Builder
	n := 0
	for c := rune(1); c <= 0x10FFFF; c++ {
		if c >= 0xD800 && c < 0xE000 {
			continue
		}
		b.WriteByte('x')
		b.WriteRune(c)
		if n++; n == 64 {
			docs = append(docs, b.String()+"x")
			b.Reset()
			n = 0
		}
	}
	docs = append(docs, b.String()+"x")
	rng := rand.New(rand.NewPCG(8, 1))
	for range 2000 {
		d := make([]byte, 1+rng.IntN(40))
		for i := range d {
			switch rng.IntN(5) {
			case 0:
				d[i] = byte('a' + rng.IntN(26))
			case 1:
				d[i] = ' '
			case 2:
				d[i] = 0
			default:
				d[i] = byte(0x80 + rng.IntN(0x80))
			}
		}
		docs = append(docs, string(d))
	}
	return docs
}

// TestTokenizersMatchSQLite checks the generated tables and both tokenizers
// against the linked SQLite over the whole code space and random invalid
// UTF-8: the same tokens, folded the same way, in the same order.
func TestTokenizersMatchSQLite(t *testing.T) {
	db := openEmpty(t)
	docs := tokenDocs()
	for _, tc := range []struct {
		name string
		tok  Tokenizer
	}{{"unicode61", Unicode61}, {"trigram", Trigram}} {
		t.Run(tc.name, func(t *testing.T) {
			want := sqliteTokens(t, db, tc.name, docs)
			bad := 0
			for i, d := range docs {
				toks, _ := tc.tok.tokenize([]byte(d), -1)
				got := make([]string, len(toks.list))
				for j := range toks.list {
					got[j] = toks.text(j)
				}
				if !slices.Equal(got, want[i]) {
					if bad++; bad <= 5 {
						t.Errorf("document %d %+q:\n got %+q\nwant %+q", i, d, got, want[i])
					}
				}
			}
			if bad > 5 {
				t.Errorf("... %d documents differ in all", bad)
			}
		})
	}
}
