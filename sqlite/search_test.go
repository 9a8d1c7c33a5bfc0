package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/fts"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

var vocab = strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega docker deploy kubernetes")

// fillSearchCorpus writes sessions of three sources with messages of
// random length and word mix, so bm25 ranks vary.
func fillSearchCorpus(t testing.TB, s *Store, sessions, perSession int) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	sources := []string{"cli", "telegram", "cron"}
	roles := []string{"user", "assistant", "tool"}
	for i := 0; i < sessions; i++ {
		id := fmt.Sprintf("s%03d", i)
		mustCreate(t, s, id, sources[i%len(sources)])
		for j := 0; j < perSession; j++ {
			n := 3 + r.IntN(40)
			words := make([]string, n)
			for k := range words {
				words[k] = vocab[r.IntN(len(vocab))]
			}
			c := strings.Join(words, " ")
			if _, err := s.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: roles[r.IntN(3)], Content: &c}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// corpusFile writes fillSearchCorpus's sessions into a new store file,
// closes it and returns its path, for tests that open it again as they
// need.
func corpusFile(t testing.TB, sessions, perSession int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openTestStore(t, path, Options{})
	fillSearchCorpus(t, s, sessions, perSession)
	s.Close()
	return path
}

// naiveSearchIDs is Hermes v6's plan: join everything, ORDER BY rank.
func naiveSearchIDs(t *testing.T, s *Store, match string, f sessiondb.SearchFilter) []int64 {
	t.Helper()
	filters, args := s.searchFilters(f)
	q := "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?" +
		filters + " ORDER BY rank LIMIT 20"
	ids, err := sqlitedb.Append(context.Background(), s.db, q, append([]any{match}, args...), []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestSearchPlanMatchesNaivePlan(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	fillSearchCorpus(t, s, 30, 40)
	cases := []struct {
		name  string
		query string
		f     sessiondb.SearchFilter
	}{
		{"one word", "docker", sessiondb.SearchFilter{}},
		{"two words", "alpha omega", sessiondb.SearchFilter{}},
		{"or", "kubernetes OR deploy", sessiondb.SearchFilter{}},
		{"prefix", "ep*", sessiondb.SearchFilter{}},
		{"source filter", "docker", sessiondb.SearchFilter{Sources: []string{"cli"}}},
		{"exclude filter", "docker", sessiondb.SearchFilter{ExcludeSources: []string{"cron"}}},
		{"role filter", "alpha", sessiondb.SearchFilter{Roles: []string{"user", "tool"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.SearchMessages(ctx, tc.query, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			got := []int64{}
			for _, h := range hits {
				got = append(got, h.ID)
				if !strings.Contains(h.Snippet, ">>>") {
					t.Errorf("hit %d snippet %q has no match marker", h.ID, h.Snippet)
				}
				if len(h.Context) < 2 {
					t.Errorf("hit %d context %v", h.ID, h.Context)
				}
			}
			want := naiveSearchIDs(t, s, tc.query, tc.f)
			if len(want) != 20 {
				t.Fatalf("corpus too small: naive plan found %d", len(want))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ids = %v\nnaive = %v", got, want)
			}
		})
	}
}

func TestSearchContextNeighboursBySession(t *testing.T) {
	ctx := context.Background()
	c := newTestClock()
	s := openTestStore(t, "", Options{Now: c.Now})
	mustCreate(t, s, "a", "cli")
	mustCreate(t, s, "b", "cli")
	// Interleaved sessions: neighbours come from the hit's own session, in
	// id order even when the clock stepped back (IMP-1).
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("a1")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "b", Role: "user", Content: str("b1")})
	c.Advance(-10e9)
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: str("needle " + strings.Repeat("é", 300))})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "b", Role: "user", Content: str("b2")})
	mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: nil})
	hits, err := s.SearchMessages(ctx, "needle", sessiondb.SearchFilter{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("%v %v", hits, err)
	}
	want := []sessiondb.ContextRow{{Role: "user", Content: "a1"}, {Role: "assistant", Content: "needle " + strings.Repeat("é", 193)}, {Role: "tool", Content: ""}}
	if !reflect.DeepEqual(hits[0].Context, want) {
		t.Errorf("context = %q\nwant %q", hits[0].Context, want)
	}
}

func TestSearchCJKFallback(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	ids := map[string]int64{}
	for _, c := range []string{"我们在大别山项目上工作", "大别山的天气", "项目进度 100%_done", "unrelated"} {
		ids[c] = mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str(c)})
	}
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"substring", "大别山", []string{"大别山的天气", "我们在大别山项目上工作"}},
		{"two tokens are ANDed", "大别山 项目", []string{"我们在大别山项目上工作"}},
		{"quoted", `"项目"`, []string{"项目进度 100%_done", "我们在大别山项目上工作"}},
		{"wildcards are literal", "项目 %_", []string{"项目进度 100%_done"}},
		{"percent alone matches only a percent", "进度 %x", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.SearchMessages(ctx, tc.query, sessiondb.SearchFilter{})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, h := range hits {
				for c, id := range ids {
					if id == h.ID {
						got = append(got, c)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hits = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestSearchRetriesEscapedQuery(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "", Options{})
	mustCreate(t, s, "a", "cli")
	id := mustAppend(t, s, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: str("mail user@example.com about what's next: TODO: fix")})
	cases := []struct {
		query string
		found bool
	}{
		{"user@example.com", true}, // FTS5 syntax error, escaped retry finds it
		{"what's", true},
		{"TODO: fix", true}, // column filter error
		{"C#", false},       // accepted after escaping, no match
		{"hello -", false},
		{"a AND OR b", false},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := s.SearchMessages(ctx, tc.query, sessiondb.SearchFilter{})
			if err != nil {
				t.Fatalf("error %v; want the escaped retry to answer", err)
			}
			if found := len(hits) == 1 && hits[0].ID == id; found != tc.found || (!tc.found && len(hits) != 0) {
				t.Errorf("hits %+v; want found=%v", hits, tc.found)
			}
		})
	}
}

// naiveWindowIDs is the windowed ranking done the slow way: the newest n
// matches passing f, ranked by bm25 among themselves.
func naiveWindowIDs(t *testing.T, s *Store, match string, f sessiondb.SearchFilter, n int) []int64 {
	t.Helper()
	filters, args := s.searchFilters(f)
	from := " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?" + filters
	newest, err := sqlitedb.Append(context.Background(), s.db, "SELECT m.id"+from+" ORDER BY m.id DESC LIMIT ?", append(append([]any{match}, args...), n), []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	in := map[int64]bool{}
	for _, id := range newest {
		in[id] = true
	}
	var out []int64
	for _, id := range naiveAllIDs(t, s, match, f) {
		if in[id] && len(out) < 20 {
			out = append(out, id)
		}
	}
	return out
}

// naiveAllIDs is every match passing f in bm25 order.
func naiveAllIDs(t *testing.T, s *Store, match string, f sessiondb.SearchFilter) []int64 {
	t.Helper()
	filters, args := s.searchFilters(f)
	ids, err := sqlitedb.Append(context.Background(), s.db, "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?"+
		filters+" ORDER BY rank", append([]any{match}, args...), []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestSearchWindow: a search ranks the newest SearchWindow matches (those
// passing its filters); with no more matches than that, or a negative
// window, it ranks them all, as Hermes does.
func TestSearchWindow(t *testing.T) {
	ctx := context.Background()
	path := corpusFile(t, 30, 40)
	ids := func(hits []sessiondb.SearchHit) []int64 {
		out := []int64{}
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	cli := sessiondb.SearchFilter{Sources: []string{"cli"}}
	for _, tc := range []struct {
		name   string
		window int
		query  string
		f      sessiondb.SearchFilter
	}{
		{"a window of 60", 60, "docker", sessiondb.SearchFilter{}},
		{"a window of 60 with a filter", 60, "docker", cli},
		{"a window of 60, two words", 60, "alpha omega", sessiondb.SearchFilter{}},
		{"a window of 30, a phrase", 30, `"alpha beta"`, sessiondb.SearchFilter{}},
		{"no window", -1, "docker", sessiondb.SearchFilter{}},
		{"a window larger than the matches", 100_000, "docker", cli},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := openTestStore(t, path, Options{SearchWindow: tc.window, SearchWindowMessages: -1})
			hits, err := w.SearchMessages(ctx, tc.query, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			all := naiveAllIDs(t, w, fts.Sanitize(tc.query), tc.f)
			if len(all) <= 30 || tc.window > 0 && tc.window <= 60 && len(all) <= tc.window {
				t.Fatalf("corpus too small: %q has %d matches, the window %d", tc.query, len(all), tc.window)
			}
			want := all[:20]
			if tc.window > 0 && tc.window < len(all) {
				want = naiveWindowIDs(t, w, fts.Sanitize(tc.query), tc.f, tc.window)
				if reflect.DeepEqual(want, all[:20]) {
					t.Fatal("the window changes nothing here: the test proves nothing")
				}
			}
			if got := ids(hits); !reflect.DeepEqual(got, want) {
				t.Errorf("ids = %v\nwant %v", got, want)
			}
		})
	}
	// A page past the window widens it: offset 50 + limit 20 > 60.
	w := openTestStore(t, path, Options{SearchWindow: 60, SearchWindowMessages: -1})
	hits, err := w.SearchMessages(ctx, "docker", sessiondb.SearchFilter{Offset: 50, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := naiveWindowIDs70(t, w); !reflect.DeepEqual(ids(hits), want) {
		t.Errorf("page at offset 50 = %v\nwant %v", ids(hits), want)
	}
}

// TestSearchWindowMessages: where the recent index cannot serve (a
// read-only store without one, as here), a search ranks, besides its
// newest SearchWindow matches, every match among the newest
// SearchWindowMessages message ids, so a store no larger than that is
// ranked whole, as Hermes does.
func TestSearchWindowMessages(t *testing.T) {
	ctx := context.Background()
	path := corpusFile(t, 30, 40) // 1,200 messages, ids 1 to 1200
	cli := sessiondb.SearchFilter{Sources: []string{"cli"}}
	for _, tc := range []struct {
		name     string
		window   int
		messages int
		query    string
		f        sessiondb.SearchFilter
		floor    int64 // every match from this id on is ranked; 0: none
	}{
		{"the newest 600 ids hold more than 30 matches", 30, 600, "docker", sessiondb.SearchFilter{}, 601},
		{"with a filter", 30, 600, "docker", cli, 601},
		{"two words", 30, 600, "alpha omega", sessiondb.SearchFilter{}, 601},
		{"the store is within the messages window", 30, 1200, "docker", sessiondb.SearchFilter{}, 1},
		{"the newest 5 ids hold fewer than the window", 60, 5, "docker", sessiondb.SearchFilter{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := openTestStore(t, path, Options{ReadOnly: true, SearchWindow: tc.window, SearchWindowMessages: tc.messages})
			hits, err := w.SearchMessages(ctx, tc.query, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			got := []int64{}
			for _, h := range hits {
				got = append(got, h.ID)
			}
			match := fts.Sanitize(tc.query)
			all := naiveAllIDs(t, w, match, tc.f)
			matchWindow := naiveWindowIDs(t, w, match, tc.f, tc.window)
			if reflect.DeepEqual(matchWindow, all[:20]) {
				t.Fatalf("the match window changes nothing for %q: the test proves nothing", tc.query)
			}
			want := matchWindow
			if tc.floor > 0 {
				newest := map[int64]bool{}
				for _, id := range naiveNewestIDs(t, w, match, tc.f, tc.window) {
					newest[id] = true
				}
				want = []int64{}
				for _, id := range all {
					if (id >= tc.floor || newest[id]) && len(want) < 20 {
						want = append(want, id)
					}
				}
				if reflect.DeepEqual(want, matchWindow) {
					t.Fatal("the messages window changes nothing here: the test proves nothing")
				}
			}
			if tc.floor == 1 && !reflect.DeepEqual(want, all[:20]) {
				t.Fatal("a store within the messages window must be ranked whole")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ids = %v\nwant %v", got, want)
			}
		})
	}
}

// naiveNewestIDs is the ids of the newest n matches passing f.
func naiveNewestIDs(t *testing.T, s *Store, match string, f sessiondb.SearchFilter, n int) []int64 {
	t.Helper()
	filters, args := s.searchFilters(f)
	ids, err := sqlitedb.Append(context.Background(), s.db, "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?"+
		filters+" ORDER BY m.id DESC LIMIT ?", append(append([]any{match}, args...), n), []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// naiveWindowIDs70 is the third page of 20 (offset 50) of "docker" ranked
// among its newest 70 matches.
func naiveWindowIDs70(t *testing.T, s *Store) []int64 {
	t.Helper()
	newest, err := sqlitedb.Append(context.Background(), s.db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'docker' ORDER BY rowid DESC LIMIT 70", nil, []int64{}, sqlitedb.Value[int64])
	if err != nil {
		t.Fatal(err)
	}
	in := map[int64]bool{}
	for _, id := range newest {
		in[id] = true
	}
	var ranked []int64
	for _, id := range naiveAllIDs(t, s, "docker", sessiondb.SearchFilter{}) {
		if in[id] {
			ranked = append(ranked, id)
		}
	}
	return ranked[50:70]
}
