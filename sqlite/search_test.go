package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
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
