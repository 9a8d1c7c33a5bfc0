package fts

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// spec is the snippet the history store asks for (spec 6.1).
var spec = Snippet{Open: ">>>", Close: "<<<", Ellipsis: "...", Tokens: 40}

// docWords and seps make random documents: docWords repeat often enough for
// queries to find several instances, some fold (case, diacritics), and the
// separators include sentence ends, which move FTS5's windows.
var (
	docWords = []string{"docker", "Docker", "compose", "up", "café", "CAFE", "kubernetes", "pod", "log", "logs",
		"logging", "deploy", "über", "user", "a", "b", "x1", "ßtraße", "日本", "naïve", "naive"}
	seps = []string{" ", " ", " ", ", ", ". ", ": ", "\n", " - ", "...", "\t", "  ", "'", "\x00"}
)

func randomDoc(rng *rand.Rand, maxTokens int) string {
	var b strings.Builder
	if rng.IntN(4) == 0 {
		b.WriteString(seps[rng.IntN(len(seps))])
	}
	n := rng.IntN(maxTokens + 1)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		b.WriteString(docWords[rng.IntN(len(docWords))])
	}
	if rng.IntN(3) == 0 {
		b.WriteString(seps[rng.IntN(len(seps))])
	}
	return b.String()
}

func randomQuery(rng *rand.Rand) string {
	word := func() string {
		w := docWords[rng.IntN(len(docWords))]
		switch rng.IntN(6) {
		case 0:
			return `"` + w + " " + docWords[rng.IntN(len(docWords))] + `"`
		case 1:
			if len(w) > 2 {
				return w[:2] + "*"
			}
		case 2:
			return w + "*"
		}
		return `"` + w + `"`
	}
	q := word()
	for range rng.IntN(3) {
		switch rng.IntN(5) {
		case 0:
			q += " OR " + word()
		case 1:
			q += " NOT " + word()
		case 2:
			q += " AND " + word()
		default:
			q += " " + word()
		}
	}
	return q
}

func fill(t *testing.T, db *sql.DB, table, tok string, docs []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE VIRTUAL TABLE "+table+" USING fts5(content, tokenize="+tok+")"); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if _, err := db.ExecContext(ctx, "INSERT INTO "+table+"(rowid, content) VALUES (?, ?)", i+1, d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnippetMatchesSQLite compares Of with SQLite's own snippet() on
// random documents and queries (docWords, phrases, prefixes, AND, OR, NOT),
// under both tokenizers, and on the queries of the sanitizer's tests: every
// snippet must be byte for byte the same.
func TestSnippetMatchesSQLite(t *testing.T) {
	db := openEmpty(t)
	rng := rand.New(rand.NewPCG(8, 6))
	var docs []string
	for range 200 {
		docs = append(docs, randomDoc(rng, 120))
	}
	docs = append(docs, corpus...)
	fill(t, db, "u", "unicode61", docs)
	fill(t, db, "g", "trigram", docs)

	queries := []string{"docker", "docker*", `"docker compose"`, "compose + up", "^docker",
		"content: docker", "{content}: pod", "P2.2", `"my-app.config.ts"`, "my_var_name", "大别山"}
	for range 200 {
		queries = append(queries, randomQuery(rng))
	}
	for _, tc := range specTable {
		if q := Sanitize(tc.in); q != "" {
			queries = append(queries, q)
		}
		if q := Escape(tc.in); q != "" {
			queries = append(queries, q)
		}
	}
	for _, tc := range []struct {
		table string
		tok   Tokenizer
	}{{"u", Unicode61}, {"g", Trigram}} {
		t.Run(tc.table, func(t *testing.T) {
			o := spec
			o.Tokenizer = tc.tok
			rows, bad := 0, 0
			for _, q := range queries {
				if hasEmptyPhrase(q, tc.tok) {
					continue // see Snippet: FTS5's result depends on other rows
				}
				want, err := trySnippets(db, tc.table, q)
				if err != nil {
					continue // FTS5 rejects the query: no rows to snippet
				}
				for id, w := range want {
					rows++
					if got := o.Of(q, []byte(docs[id-1]), true); got != w {
						if bad++; bad <= 5 {
							t.Errorf("query %q, document %d %q:\n got %q\nwant %q", q, id, docs[id-1], got, w)
						}
					}
				}
			}
			if bad > 5 {
				t.Errorf("... %d of %d snippets differ", bad, rows)
			}
			if rows < 1000 {
				t.Errorf("only %d rows compared; the random corpus should give thousands", rows)
			}
			t.Logf("%d snippets compared", rows)
		})
	}
}

// trySnippets is sqliteSnippets returning FTS5's refusal of a query as an
// error instead of failing.
func trySnippets(db *sql.DB, table, query string) (map[int64]string, error) {
	out := map[int64]string{}
	err := sqlitedb.Each(context.Background(), db,
		"SELECT rowid, snippet("+table+", 0, '>>>', '<<<', '...', 40) FROM "+table+" WHERE "+table+" MATCH ?",
		[]any{query}, func(r sqlitedb.Row) error {
			var id int64
			var s sql.NullString
			if err := r.Scan(&id, &s); err != nil {
				return err
			}
			out[id] = s.String
			return nil
		})
	return out, err
}

// hasEmptyPhrase reports whether q holds a phrase with no tokens under tok
// (under trigram, any text shorter than three characters).
func hasEmptyPhrase(q string, tok Tokenizer) bool {
	for _, p := range parseQuery(q, tok).phrases {
		if len(p.terms) == 0 {
			return true
		}
	}
	return false
}
