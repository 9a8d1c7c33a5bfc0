package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/fts/ftstest"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// searchCorpus is text of the kinds agents write: prose, commands, paths,
// hosts, identifiers, accents, CJK. Generated from a fixed seed.
func searchCorpus() []string {
	words := strings.Fields("deploy docker container kubernetes socket release golang profile lock permission request timeout " +
		"retry backoff build test flaky cache token session title search index rollout probe readyz healthz alpha beta gamma")
	extras := []string{"api.example.com", "x-request-id", "chat-send", "my_var_name", "user@example.com", "P2.2", "my-app.config.ts",
		"C++", "C#", "what's", "it's", "100%", "$HOME", "a/b", "TODO:", "foo.bar!", "naïve café", "üser", "Über", "大别山项目", "长江大桥",
		"deployment", "deploys", "DOCKER", "Compose", "kube-proxy", "v1.2.3", "e2e", "3e5", "_private", "__init__"}
	r := rand.New(rand.NewPCG(1234, 5678))
	var out []string
	for i := 0; i < 400; i++ {
		n := 3 + r.IntN(25)
		parts := make([]string, n)
		for j := range parts {
			if r.IntN(4) == 0 {
				parts[j] = extras[r.IntN(len(extras))]
			} else {
				parts[j] = words[r.IntN(len(words))]
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// compareQueries are queries whose answer is a set of messages both
// backends must agree on.
var compareQueries = []string{
	"deploy", "docker container", "DOCKER", "docker OR kubernetes", "docker NOT kubernetes", "deploy*", "dep*", "roll*",
	`"docker container"`, `"release golang"*`, "alpha OR beta NOT gamma", "alpha beta OR gamma", "alpha AND beta",
	"api.example.com", "x-request-id", "chat-send", "chat-send*", "my_var_name", "user@example.com", "P2.2",
	"my-app.config.ts", "C++", "C#", "what's", "it's", "100%", "$HOME", "a/b", "TODO: fix", "foo.bar!", "naive", "cafe",
	"café", "user", "uber", "Über", "kube-proxy", "v1.2.3", "e2e", "3e5", "_private", "__init__", "hello AND", "OR token",
	"a AND OR b", "token -", "not session", "(unbalanced", `say "hi`, "caret^", "{x}", "大别山项目", "大别山", "长江",
	"deploy 长江大桥", "docker NOT kubernetes container", "alpha NOT beta gamma NOT token", "content:deploy",
	"CONTENT : docker OR -content:alpha", `"content":"docker container"`, "content:roll* beta", "deploy -content:docker",
	"retry NOT -content:alpha", "socket:docker", "",
}

// TestSearchMatchesSQLite stores the same messages in both backends and
// runs the same queries: the hits (which messages, of which sessions) are
// the same. Rank order may differ (bm25 against ts_rank) and snippets are
// cut differently, so hits are compared as sets.
func TestSearchMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	pg, _ := openStore(t, postgres.Options{})
	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	for _, st := range []sessiondb.Store{pg, lite} {
		for i, src := range []string{"cli", "telegram", "cron"} {
			if _, err := st.CreateSession(ctx, sessiondb.NewSession{ID: fmt.Sprintf("s%d", i), Source: src}); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range searchCorpus() {
			c := c
			if _, err := st.AppendMessage(ctx, sessiondb.NewMessage{SessionID: fmt.Sprintf("s%d", i%3), Role: []string{"user", "assistant", "tool"}[i%3], Content: &c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	filters := []sessiondb.SearchFilter{{Limit: 1000}, {Limit: 1000, Sources: []string{"cli"}, Roles: []string{"user", "tool"}}}
	agreed := 0
	for _, q := range compareQueries {
		for _, f := range filters {
			a, errA := lite.SearchMessages(ctx, q, f)
			b, errB := pg.SearchMessages(ctx, q, f)
			if sessiondb.ErrorCode(errA) != sessiondb.ErrorCode(errB) {
				t.Errorf("%q: sqlite error %v, postgres error %v", q, errA, errB)
				continue
			}
			if got, want := hitSet(b), hitSet(a); !reflect.DeepEqual(got, want) {
				t.Errorf("%q %+v: postgres found %d hits, sqlite %d\npostgres only: %v\nsqlite only:   %v", q, f, len(got), len(want), minus(got, want), minus(want, got))
				continue
			}
			// The snippets are cut by the same code from the same text.
			want := map[int64]string{}
			for _, h := range a {
				want[h.ID] = h.Snippet
			}
			for _, h := range b {
				if h.Snippet != want[h.ID] {
					t.Errorf("%q %+v: hit %d's snippet\npostgres %q\nsqlite   %q", q, f, h.ID, h.Snippet, want[h.ID])
				}
			}
			if len(a) > 0 {
				agreed++
			}
		}
	}
	if agreed < len(compareQueries) {
		t.Errorf("only %d query/filter pairs had hits on which to agree: the corpus no longer exercises the queries", agreed)
	}
}

// hitSet is the hits' "session/id" keys, sorted.
func hitSet(hits []sessiondb.SearchHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s/%d/%s", h.SessionID, h.ID, h.Role))
	}
	sort.Strings(out)
	return out
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// TestSanitizerCorpusNeverRejected translates every query of the
// sanitizer's reference vectors (and long and odd ones) the way
// SearchMessages does and hands each to PostgreSQL's to_tsquery: none may
// be rejected, so no query a user types ends in a tsquery syntax error.
func TestSanitizerCorpusNeverRejected(t *testing.T) {
	s, url := openStore(t, postgres.Options{})
	queries := []string{strings.Repeat("a NOT ", 400) + "b", strings.Repeat(`"x y" OR `, 300) + "z", strings.Repeat("word* ", 3000),
		"\x00json:", "\xff\xfe", `'quoted' \back\slash`, "'", `\`, "a:*", "!x", "a & b | c", "<->", "a <2> b"}
	queries = append(queries, ftstest.Queries(t)...)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.WithSearchPath(url, s.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	b := &pgx.Batch{}
	var texts []string
	for _, q := range queries {
		tq, err := fts.TSQuery(fts.Sanitize(q))
		if errors.Is(err, fts.ErrSyntax) {
			tq, err = fts.TSQuery(fts.Escape(q))
		}
		if err != nil {
			t.Fatalf("query %q cannot be translated even escaped: %v", q, err)
		}
		if tq.Text == "" {
			continue
		}
		texts = append(texts, tq.Text)
		b.Queue("SELECT to_tsquery('sessiondb_fts', $1)::text", tq.Text)
	}
	if len(texts) < 2000 {
		t.Fatalf("only %d queries reached PostgreSQL", len(texts))
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	for _, text := range texts {
		var out string
		if err := br.QueryRow().Scan(&out); err != nil {
			t.Fatalf("to_tsquery(%q): %v", text, err)
		}
	}
	// And through the store, end to end, for a sample.
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "a", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(queries); i += 17 {
		if _, err := s.SearchMessages(ctx, queries[i], sessiondb.SearchFilter{}); err != nil {
			t.Errorf("SearchMessages(%q): %v", queries[i], err)
		}
	}
}

// FuzzSearchQuery sends queries through SearchMessages on PostgreSQL, from
// the sanitizer's reference vectors, the hostile queries of the fault
// suite and whatever the fuzzer makes of them: every one must come back
// with hits or none, never an error (a tsquery syntax error from
// to_tsquery above all: the translation quotes every operand). The store
// holds messages most queries find, so ranking and the snippets run too.
//
//	go test -run '^$' -fuzz FuzzSearchQuery -fuzztime 5m ./postgres/
func FuzzSearchQuery(f *testing.F) {
	seeds := []string{
		"", `"`, `""`, `"""`, `a"b"c"d`, "*", "**a**", "a NOT NOT b", "NOT", "a\vb", "a\x00b", "\"a\x00b\"",
		"a:b", "**AND", "*OR*", "NEAR(a b)", "x^y", "\x1a*", "_", "é\u0301-x", "\xff\xfe", "\x00json:",
		`"a" AND (OR NOT *** NEAR( { } : ^ + - col:x "unterminated`, "AND OR NOT AND", "content:docker {content}: hello",
		"NEAR(docker compose, 2)", strings.Repeat("!@#$%^&*()_+-=[]{};:,./<>?|~`'\"\\", 320), "ab\xff\xfe\xc3(cd docker\xed\xa0\x80",
		"docker\x1b]0;PWNED\x07\x1b[2J\x01\x7f\x08", "* ** *** docker* *docker", strings.Repeat("docker", 2000),
		strings.Repeat("docker compose ", 300), `'quoted' \back\slash`, "'", `\`, "a:*", "!x", "a & b | c", "<->", "a <2> b",
		"a:* & !b | (c <-> d)", "docker <-> compose", "docker:A", "docker:*B", "(((((a", ")))))a", "a'b'c", "大别山 OR 长江*",
	}
	seeds = append(seeds, compareQueries...)
	seeds = append(seeds, ftstest.Queries(f)...)
	for _, q := range seeds {
		f.Add(q)
	}

	url := pgtest.URL(f)
	schema := pgtest.Schema(f, url)
	s, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "fuzz", Source: "cli"}); err != nil {
		f.Fatal(err)
	}
	for _, c := range append(searchCorpus()[:40], "a b c d x y z word docker compose NOT AND OR NEAR content col json quoted back slash") {
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "fuzz", Role: "user", Content: &c}); err != nil {
			f.Fatal(err)
		}
	}
	if hits, err := s.SearchMessages(ctx, "docker compose", sessiondb.SearchFilter{}); err != nil || len(hits) == 0 {
		f.Fatalf("the fuzz store finds nothing: %v, %v", hits, err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := s.SearchMessages(ctx, q, sessiondb.SearchFilter{Limit: 5}); err != nil {
			t.Fatalf("SearchMessages(%q): %v (code %q)", q, err, sessiondb.ErrorCode(err))
		}
	})
}

// TestTrigramIndexHoldsCJKRowsOnly: the SQL twin of sessiondb.ContainsCJK
// agrees with it on each range's edges and their neighbours, the trigram
// index keeps only the rows holding CJK text, and a CJK substring search
// still finds every row it should, mixed with Latin text.
func TestTrigramIndexHoldsCJKRowsOnly(t *testing.T) {
	ctx := context.Background()
	s, conn, _, _ := freshSchema(t)

	edges := []rune{0x3000, 0x303F, 0x3040, 0x309F, 0x30A0, 0x30FF, 0x3400, 0x4DBF, 0x4E00, 0x9FFF, 0xAC00, 0xD7AF, 0x20000, 0x2A6DF}
	for _, e := range edges {
		for _, r := range []rune{e - 1, e, e + 1} {
			text := "a" + string(r) + "b"
			var got bool
			if err := conn.QueryRow(ctx, "SELECT sessiondb_has_cjk($1)", text).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := sessiondb.ContainsCJK(text); got != want {
				t.Errorf("sessiondb_has_cjk(U+%04X) = %v, sessiondb.ContainsCJK = %v", r, got, want)
			}
		}
	}

	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "cjk", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"plain deploy notes", "naïve café — “quoted”", "部署 the 长江大桥 today", "長江大橋 (traditional)", "カタカナ 长江大桥"}
	for _, c := range texts {
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "cjk", Role: "user", Content: strp(c)}); err != nil {
			t.Fatal(err)
		}
	}
	var with, without int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE sessiondb_has_cjk(content)), count(*) FILTER (WHERE NOT sessiondb_has_cjk(content)) FROM messages").Scan(&with, &without); err != nil {
		t.Fatal(err)
	}
	if with != 3 || without != 2 {
		t.Errorf("rows with CJK %d, without %d; want 3 and 2", with, without)
	}
	var pred string
	if err := conn.QueryRow(ctx, "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = 'messages_trgm'::regclass").Scan(&pred); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pred, "sessiondb_has_cjk") {
		t.Errorf("messages_trgm predicate = %q, want the rows holding CJK text only", pred)
	}
	// Substrings of a word the word index keeps whole: the word search
	// finds nothing and the substring search runs.
	hits, err := s.SearchMessages(ctx, "江大桥 today", sessiondb.SearchFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != 3 {
		t.Errorf("search 江大桥 today = %+v, want the one row holding both", hits)
	}
	hits, err = s.SearchMessages(ctx, "江大", sessiondb.SearchFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 {
		t.Errorf("search 江大 found %d rows, want 3", len(hits))
	}
}

// TestFTSTextKeepsVectors: migration 005's sessiondb_fts_text, which
// leaves spaces alone, gives every text the tsvector 001's gave (every run
// of non-alphanumeric ASCII, spaces included, made one space), so vectors
// stored before the upgrade and after it agree. Over the search corpus and
// random strings of separators, letters, digits and non-ASCII letters.
func TestFTSTextKeepsVectors(t *testing.T) {
	ctx := context.Background()
	_, conn, _, _ := freshSchema(t)
	texts := searchCorpus()
	alphabet := []string{" ", "  ", "\t", "\n", ".", "-", "_", "@", "/", ":", "'", "\"", "#", "+", "<b>", "://", "a", "Z", "x1", "2", "é", "ü", "ß", "İ", "ﬁ", "長", "١", "v1", ".2", "e", "E"}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for j := r.IntN(40); j >= 0; j-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	var differ []string
	err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(t), '{}') FROM unnest($1::text[]) AS u(t)
WHERE to_tsvector('sessiondb_fts', sessiondb_fts_text(t)) IS DISTINCT FROM
      to_tsvector('sessiondb_fts', regexp_replace(t, '[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+', ' ', 'g'))`, texts).Scan(&differ)
	if err != nil {
		t.Fatal(err)
	}
	if len(differ) > 0 {
		t.Errorf("%d of %d texts get another tsvector than before, the first %q", len(differ), len(texts), differ[0])
	}
}

// TestIndexUpkeepMigratesAFilledStore: migration 005 on a store that holds
// messages from before it (the whole-content trigram index, the former
// text function, the vectors it stored) leaves the index holding the CJK
// rows only, every stored vector equal to what the new function gives,
// and both searches finding what they found.
func TestIndexUpkeepMigratesAFilledStore(t *testing.T) {
	ctx := context.Background()
	s, conn, url, schema := freshSchema(t)
	// The schema as 004 left it, before any message was written (007's
	// table goes once the appends are in).
	var trgm string
	if err := conn.QueryRow(ctx, "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'").Scan(&trgm); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DROP INDEX messages_trgm;
CREATE INDEX messages_trgm ON messages USING gin (content `+trgm+`.gin_trgm_ops);
CREATE OR REPLACE FUNCTION sessiondb_fts_text(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT regexp_replace(coalesce(t, ''), '[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+', ' ', 'g') $$;
DROP FUNCTION sessiondb_has_cjk(text);
DELETE FROM sessiondb_migrations WHERE version >= 5`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, sessiondb.NewSession{ID: "old", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range searchCorpus()[:200] {
		if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "old", Role: "user", Content: strp(c)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if _, err := conn.Exec(ctx, "DROP TABLE sessiondb_listeners"); err != nil {
		t.Fatal(err)
	}
	wordBefore := pgtest.Count(t, pgtest.WithSearchPath(url, schema), "SELECT count(*) FROM messages WHERE fts @@ to_tsquery('sessiondb_fts', 'deploy')")

	s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pred string
	if err := conn.QueryRow(ctx, "SELECT coalesce(pg_get_expr(indpred, indrelid), '') FROM pg_index WHERE indexrelid = 'messages_trgm'::regclass").Scan(&pred); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pred, "sessiondb_has_cjk") {
		t.Errorf("after the upgrade messages_trgm's predicate = %q, want the CJK rows only", pred)
	}
	stale := pgtest.Count(t, pgtest.WithSearchPath(url, schema), "SELECT count(*) FROM messages WHERE fts IS DISTINCT FROM to_tsvector('sessiondb_fts', sessiondb_fts_text(content))")
	if stale != 0 {
		t.Errorf("%d stored vectors differ from what the new text function gives", stale)
	}
	if after := pgtest.Count(t, pgtest.WithSearchPath(url, schema), "SELECT count(*) FROM messages WHERE fts @@ to_tsquery('sessiondb_fts', 'deploy')"); after != wordBefore || after == 0 {
		t.Errorf("rows holding deploy: %d after the upgrade, %d before", after, wordBefore)
	}
	want := 0
	for _, c := range searchCorpus()[:200] {
		if strings.Contains(c, "江大") {
			want++
		}
	}
	hits, err := s.SearchMessages(ctx, "江大", sessiondb.SearchFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != want || want == 0 {
		t.Errorf("substring search after the upgrade found %d, want %d", len(hits), want)
	}
}

// freshSchema opens a store on a fresh schema, and a connection of its own
// whose search path is that schema; both close with the test.
func freshSchema(t *testing.T) (*postgres.Store, *pgx.Conn, string, string) {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := pgx.Connect(ctx, pgtest.WithSearchPath(url, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return s, conn, url, schema
}
