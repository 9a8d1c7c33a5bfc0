package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func (e *env) search(q string, f sessiondb.SearchFilter) []sessiondb.SearchHit {
	e.t.Helper()
	hits, err := e.s.SearchMessages(e.ctx, q, f)
	if err != nil {
		e.t.Fatalf("SearchMessages(%q, %+v): %v", q, f, err)
	}
	return hits
}

func hitIDs(hits []sessiondb.SearchHit) []int64 {
	return pluck(hits, func(h sessiondb.SearchHit) int64 { return h.ID })
}

// testSearch covers section 6.1 and the query handling of section 7.
func testSearch(t *testing.T, h Harness) {
	t.Run("Filters", func(t *testing.T) {
		e := newEnv(t, h)
		e.createWith(sessiondb.NewSession{ID: "a", Source: "cli", Model: "m-a"})
		e.create("b", "telegram")
		e.create("c", "cron")
		m1 := e.msg("a", "user", "how do I deploy the docker container")
		m2 := e.msg("a", "assistant", "run docker compose up to deploy")
		m3 := e.append(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: str("docker output here"), ToolName: str("terminal"), ToolCallID: str("c1")})
		m4 := e.msg("b", "user", "docker is great")
		m5 := e.msg("c", "assistant", "nightly docker cleanup")
		e.msg("a", "user", "unrelated words")
		all := []int64{m1, m2, m3, m4, m5}
		cases := []struct {
			name string
			q    string
			f    sessiondb.SearchFilter
			want []int64
		}{
			{name: "all", q: "docker", want: all},
			{name: "one source", q: "docker", f: sessiondb.SearchFilter{Sources: []string{"cli"}}, want: []int64{m1, m2, m3}},
			{name: "two sources", q: "docker", f: sessiondb.SearchFilter{Sources: []string{"cli", "telegram"}}, want: []int64{m1, m2, m3, m4}},
			{name: "empty sources match nothing", q: "docker", f: sessiondb.SearchFilter{Sources: []string{}}, want: []int64{}},
			{name: "exclude sources", q: "docker", f: sessiondb.SearchFilter{ExcludeSources: []string{"cron"}}, want: []int64{m1, m2, m3, m4}},
			{name: "empty exclude excludes nothing", q: "docker", f: sessiondb.SearchFilter{ExcludeSources: []string{}}, want: all},
			{name: "sources and exclude", q: "docker", f: sessiondb.SearchFilter{Sources: []string{"cli", "cron"}, ExcludeSources: []string{"cron"}}, want: []int64{m1, m2, m3}},
			{name: "one role", q: "docker", f: sessiondb.SearchFilter{Roles: []string{"user"}}, want: []int64{m1, m4}},
			{name: "two roles", q: "docker", f: sessiondb.SearchFilter{Roles: []string{"assistant", "tool"}}, want: []int64{m2, m3, m5}},
			{name: "empty roles mean all", q: "docker", f: sessiondb.SearchFilter{Roles: []string{}}, want: all},
			{name: "limit", q: "docker", f: sessiondb.SearchFilter{Limit: 2}, want: nil}, // checked by count below
			{name: "no match", q: "kubernetes", want: []int64{}},
			{name: "AND of words", q: "deploy docker", want: []int64{m1, m2}},
			{name: "OR", q: "compose OR nightly", want: []int64{m2, m5}},
			{name: "NOT", q: "docker NOT deploy", want: []int64{m3, m4, m5}},
			{name: "prefix", q: "dep*", want: []int64{m1, m2}},
			{name: "phrase", q: `"docker compose"`, want: []int64{m2}},
			{name: "case-insensitive", q: "DOCKER Compose", want: []int64{m2}},
			// FTS5 binds words side by side tighter than NOT.
			{name: "NOT before words side by side", q: "docker NOT deploy container", want: []int64{m2, m3, m4, m5}},
			// Hermes v6's sanitizer leaves "col:" to FTS5, where it is a
			// column filter: on the one column, content, it filters nothing;
			// "-content:" leaves no column; another name is no column, and
			// the query is retried escaped (one phrase).
			{name: "column filter on content", q: "content:deploy", want: []int64{m1, m2}},
			{name: "column filter in capitals with spaces", q: "CONTENT : compose", want: []int64{m2}},
			{name: "column filter on a phrase", q: `content:"docker compose"`, want: []int64{m2}},
			{name: "column filter on a prefix", q: "content:dep* compose", want: []int64{m2}},
			{name: "content excluded", q: "docker -content:deploy", want: []int64{}},
			{name: "content excluded in an OR", q: "nightly OR -content:deploy", want: []int64{m5}},
			{name: "content excluded under NOT", q: "great NOT -content:docker", want: []int64{m4}},
			{name: "unknown column read escaped", q: "docker:compose", want: []int64{m2}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				hits := e.search(tc.q, tc.f)
				if tc.want == nil {
					if len(hits) != tc.f.Limit {
						t.Errorf("%d hits, want %d", len(hits), tc.f.Limit)
					}
					return
				}
				if got := sorted(hitIDs(hits)); !reflect.DeepEqual(got, sorted(tc.want)) {
					t.Errorf("hits %v, want %v", got, sorted(tc.want))
				}
			})
		}
		t.Run("offset pages partition the results", func(t *testing.T) {
			var seen []int64
			for off := 0; off < 6; off += 2 {
				page := e.search("docker", sessiondb.SearchFilter{Limit: 2, Offset: off})
				if want := min(2, len(all)-off); len(page) != want {
					t.Errorf("page at offset %d has %d hits, want %d", off, len(page), want)
				}
				seen = append(seen, hitIDs(page)...)
			}
			if got := sorted(seen); !reflect.DeepEqual(got, sorted(all)) {
				t.Errorf("pages together hold %v, want each of %v once", got, all)
			}
			if hits := e.search("docker", sessiondb.SearchFilter{Offset: 10}); len(hits) != 0 {
				t.Errorf("offset past the end gave %d hits", len(hits))
			}
		})
		t.Run("hit fields", func(t *testing.T) {
			sa := e.get("a")
			hits := e.search("compose", sessiondb.SearchFilter{})
			if len(hits) != 1 {
				t.Fatalf("%d hits, want 1", len(hits))
			}
			hit, msg := hits[0], e.messages("a")[1]
			if hit.ID != m2 || hit.SessionID != "a" || hit.Role != "assistant" || hit.Timestamp != msg.Timestamp ||
				hit.Source != "cli" || deref(hit.Model) != "m-a" || hit.SessionStarted != sa.StartedAt || hit.ToolName != nil {
				t.Errorf("hit = %+v", hit)
			}
			if want := "run docker >>>compose<<< up to deploy"; hit.Snippet != want {
				t.Errorf("snippet = %q, want %q", hit.Snippet, want)
			}
			hits = e.search("output", sessiondb.SearchFilter{})
			if len(hits) != 1 || deref(hits[0].ToolName) != "terminal" || deref(hits[0].Model) != "m-a" || hits[0].Role != "tool" {
				t.Errorf("tool hit = %+v, want tool_name terminal and the session's model", hits)
			}
			hits = e.search("great", sessiondb.SearchFilter{})
			if len(hits) != 1 || hits[0].Model != nil || hits[0].Source != "telegram" {
				t.Errorf("hit in a session without model = %+v", hits)
			}
		})
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		for i := 0; i < 25; i++ {
			e.msg("a", "user", fmt.Sprintf("walrus number %d", i))
		}
		if hits := e.search("walrus", sessiondb.SearchFilter{}); len(hits) != 20 {
			t.Errorf("zero Limit gave %d hits, want 20", len(hits))
		}
		if hits := e.search("walrus", sessiondb.SearchFilter{Limit: 25}); len(hits) != 25 {
			t.Errorf("Limit 25 gave %d hits, want 25", len(hits))
		}
	})

	t.Run("Rank", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		filler := strings.Repeat("lorem ipsum dolor sit amet ", 10)
		weak := e.msg("a", "user", filler+"otter "+filler)
		strong := e.msg("a", "user", "otter otter otter")
		if got := hitIDs(e.search("otter", sessiondb.SearchFilter{})); !reflect.DeepEqual(got, []int64{strong, weak}) {
			t.Errorf("hits %v, want the denser match first %v", got, []int64{strong, weak})
		}
	})

	t.Run("Sort", func(t *testing.T) {
		// Hermes' sort=newest/oldest: by the message's time (not its
		// id), then by relevance.
		e := newEnv(t, h)
		e.create("a", "cli")
		filler := strings.Repeat("lorem ipsum dolor sit amet ", 10)
		late := e.msg("a", "user", filler+"heron "+filler)
		e.clock.Advance(-time.Hour)
		early := e.msg("a", "user", "heron heron heron")
		e.clock.Advance(2 * time.Hour)
		lastWeak := e.msg("a", "user", filler+"heron "+filler)
		e.clock.Advance(-time.Second) // the same time as lastWeak
		lastStrong := e.msg("a", "user", "heron heron")
		for _, c := range []struct {
			sort sessiondb.SearchSort
			want []int64
		}{
			{sessiondb.SearchNewest, []int64{lastStrong, lastWeak, late, early}},
			{sessiondb.SearchOldest, []int64{early, late, lastStrong, lastWeak}},
		} {
			if got := hitIDs(e.search("heron", sessiondb.SearchFilter{Sort: c.sort})); !reflect.DeepEqual(got, c.want) {
				t.Errorf("sort %q: hits %v, want %v", c.sort, got, c.want)
			}
		}
		if got := hitIDs(e.search("heron", sessiondb.SearchFilter{Sort: sessiondb.SearchOldest, Limit: 2, Offset: 1})); !reflect.DeepEqual(got, []int64{late, lastStrong}) {
			t.Errorf("oldest, second page of 2: %v, want %v", got, []int64{late, lastStrong})
		}
		_, err := e.s.SearchMessages(e.ctx, "heron", sessiondb.SearchFilter{Sort: "latest"})
		wantCode(t, "SearchMessages(sort latest)", err, sessiondb.EINVALID)
	})

	t.Run("Blank", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.msg("a", "user", "AND OR NOT star * and (parens) here")
		for _, q := range []string{"", "   ", "\t\n", "*", "***", "AND", "()", "{}", "^"} {
			t.Run(fmt.Sprintf("%q", q), func(t *testing.T) {
				if hits := e.search(q, sessiondb.SearchFilter{}); len(hits) != 0 {
					t.Errorf("blank query %q gave %d hits, want []", q, len(hits))
				}
			})
		}
	})

	t.Run("NeverSilentlyEmpty", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		cases := []struct{ q, content string }{
			{"what's", "so what's the plan"},
			{"it's done", "I think it's done now"},
			{"a/b", "we ran an a/b test"},
			{"C#", "rewrite it in C# please"},
			{"C++", "C++ templates are hard"},
			{"user@example.com", "mail user@example.com tomorrow"},
			{"100%", "coverage is 100% today"},
			{"TODO: fix", "TODO: fix the flaky test"},
			{"foo.bar!", "then call foo.bar! quickly"},
			{"chat-send", "the chat-send command failed"},
			{"chat-send*", "the chat-sender daemon"},
			{"P2.2", "milestone P2.2 is late"},
			{"my-app.config.ts", "edit my-app.config.ts first"},
			{"my_var_name", "set my_var_name to 3"},
			{"new?", "anything new? ok"},
			{"x=1", "assign x=1 then"},
			{"$HOME", "look in $HOME for it"},
			{"-world", "hello -world flag"},
			{"(unbalanced", "an unbalanced paren"},
			{`say "hi`, `they say "hi" loudly`},
			{"caret^", "the caret sign"},
			{"hello AND", "hello there friend"},
			{"OR world", "brave new world"},
			{"a AND OR b", "a b"},
			{"hello -", "hello minus"},
			{"not this", "this and that"},
		}
		want := map[string]int64{}
		for _, tc := range cases {
			want[tc.q] = e.msg("a", "user", tc.content)
		}
		for _, tc := range cases {
			t.Run(tc.q, func(t *testing.T) {
				hits, err := e.s.SearchMessages(e.ctx, tc.q, sessiondb.SearchFilter{Limit: 50})
				noErr(t, fmt.Sprintf("SearchMessages(%q)", tc.q), err)
				for _, hit := range hits {
					if hit.ID == want[tc.q] {
						return
					}
				}
				t.Errorf("SearchMessages(%q) = %v, want a hit on %q", tc.q, hitIDs(hits), tc.content)
			})
		}
	})

	t.Run("Diacritics", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		umlaut := e.msg("a", "user", "the üser guide")
		plain := e.msg("a", "user", "the user manual")
		accent := e.msg("a", "user", "a naïve café")
		cases := []struct {
			q    string
			want []int64
		}{
			{"user", []int64{umlaut, plain}},
			{"üser", []int64{umlaut, plain}},
			{"USER", []int64{umlaut, plain}},
			{"cafe naive", []int64{accent}},
			{"café", []int64{accent}},
		}
		for _, tc := range cases {
			t.Run(tc.q, func(t *testing.T) {
				if got := sorted(hitIDs(e.search(tc.q, sessiondb.SearchFilter{}))); !reflect.DeepEqual(got, sorted(tc.want)) {
					t.Errorf("hits %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("Snippet", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		words := make([]string, 100)
		for i := range words {
			words[i] = fmt.Sprintf("w%d", i)
		}
		words[50] = "needle"
		e.msg("a", "user", strings.Join(words, " "))
		hits := e.search("needle", sessiondb.SearchFilter{})
		if len(hits) != 1 {
			t.Fatalf("%d hits, want 1", len(hits))
		}
		sn := hits[0].Snippet
		if !strings.Contains(sn, ">>>needle<<<") {
			t.Errorf("snippet %q does not mark the match", sn)
		}
		if !strings.HasPrefix(sn, "...") || !strings.HasSuffix(sn, "...") {
			t.Errorf("snippet %q should show cuts at both ends with ...", sn)
		}
		plain := strings.NewReplacer("...", " ", ">>>", " ", "<<<", " ").Replace(sn)
		if n := len(strings.Fields(plain)); n > 40 || n < 10 {
			t.Errorf("snippet holds %d tokens, want a window of at most 40: %q", n, sn)
		}
		if strings.Contains(sn, "w0 ") || strings.Contains(sn, "w99") {
			t.Errorf("snippet %q is not a window around the match", sn)
		}
	})

	t.Run("Context", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.create("b", "cli")
		e.create("d", "cli")
		e.create("z", "cli")
		e.msg("a", "user", "alpha first")
		e.msg("b", "user", "noise from another session")
		e.msg("a", "assistant", "needle middle")
		e.msg("b", "assistant", "more noise")
		e.msg("a", "user", "gamma last")
		e.append(sessiondb.NewMessage{SessionID: "d", Role: "user"})
		e.msg("d", "assistant", "longword "+strings.Repeat("ü", 300))
		e.msg("d", "user", strings.Repeat("é", 300))
		// Clock steps back: neighbours are still by insertion order.
		e.msg("z", "user", "before")
		e.clock.Advance(-time.Hour)
		e.msg("z", "assistant", "steppedback target")
		e.clock.Advance(-time.Hour)
		e.msg("z", "user", "after")
		type row = sessiondb.ContextRow
		cr := func(role, content string) row { return row{Role: role, Content: content} }
		cases := []struct {
			q    string
			want []row
		}{
			{"needle", []row{cr("user", "alpha first"), cr("assistant", "needle middle"), cr("user", "gamma last")}},
			{"alpha", []row{cr("user", "alpha first"), cr("assistant", "needle middle")}},
			{"gamma", []row{cr("assistant", "needle middle"), cr("user", "gamma last")}},
			{"longword", []row{cr("user", ""), cr("assistant", "longword "+strings.Repeat("ü", 191)), cr("user", strings.Repeat("é", 200))}},
			{"steppedback", []row{cr("user", "before"), cr("assistant", "steppedback target"), cr("user", "after")}},
		}
		for _, tc := range cases {
			t.Run(tc.q, func(t *testing.T) {
				hits := e.search(tc.q, sessiondb.SearchFilter{})
				if len(hits) != 1 {
					t.Fatalf("%d hits, want 1", len(hits))
				}
				if got := hits[0].Context; !reflect.DeepEqual(got, tc.want) {
					t.Errorf("context = %q\nwant      %q", got, tc.want)
				}
			})
		}
	})

	t.Run("CJKFallback", func(t *testing.T) {
		e := newEnv(t, h)
		e.create("a", "cli")
		e.create("b", "telegram")
		project := e.msg("a", "user", "我们的大别山项目很好")
		older := e.msg("a", "assistant", "去大别山玩")
		newer := e.msg("b", "user", "大别山很美")
		long := e.msg("a", "user", strings.Repeat("中", 100)+"长江大桥"+strings.Repeat("中", 100))
		pct := e.msg("a", "user", "大别山100%项目")
		pctX := e.msg("a", "user", "大别山100X项目")
		und := e.msg("a", "user", "大别山1_2项目")
		undX := e.msg("a", "user", "大别山1X2项目")
		e.msg("a", "tool", "工具大别山输出")
		cases := []struct {
			name    string
			q       string
			f       sessiondb.SearchFilter
			want    []int64 // in order
			snippet string  // of the first hit, when set
		}{
			// The substring search's snippet marks its terms and shows
			// its cuts, as the word index's does.
			{name: "substring", q: "大别山项目", want: []int64{project}, snippet: "我们的>>>大别山项目<<<很好"},
			{name: "every term marked", q: "我们 很好", want: []int64{project}, snippet: ">>>我们<<<的大别山项目>>>很好<<<"},
			{name: "quoted", q: `"大别山项目"`, want: []int64{project}},
			{name: "substring in another session", q: "别山很", want: []int64{newer}},
			{name: "source filter", q: "大别山玩", f: sessiondb.SearchFilter{Sources: []string{"telegram"}}, want: []int64{}},
			{name: "timestamp order", q: "别山", f: sessiondb.SearchFilter{Roles: []string{"assistant", "user"}, Sources: []string{"cli", "telegram"}, Limit: 3}, want: []int64{undX, und, pctX}},
			{name: "role filter", q: "大别山", f: sessiondb.SearchFilter{Roles: []string{"assistant"}}, want: []int64{older}},
			{name: "exclude source", q: "大别山很美", f: sessiondb.SearchFilter{ExcludeSources: []string{"telegram"}}, want: []int64{}},
			{name: "snippet window", q: "长江大桥", want: []int64{long}, snippet: "..." + strings.Repeat("中", 40) + ">>>长江大桥<<<" + strings.Repeat("中", 76) + "..."},
			{name: "ASCII case ignored", q: "大别山 x", want: []int64{undX, pctX}, snippet: ">>>大别山<<<1>>>X<<<2项目"},
			{name: "every token must match", q: "我们 不在", want: []int64{}},
			{name: "percent escaped", q: "山100%项", want: []int64{pct}},
			{name: "underscore escaped", q: "山1_2项", want: []int64{und}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				hits := e.search(tc.q, tc.f)
				if got := hitIDs(hits); !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("hits %v, want %v", got, tc.want)
				}
				if tc.snippet != "" && hits[0].Snippet != tc.snippet {
					t.Errorf("snippet = %q, want %q", hits[0].Snippet, tc.snippet)
				}
			})
		}
		t.Run("hit fields", func(t *testing.T) {
			hits := e.search("大别山很美", sessiondb.SearchFilter{})
			if len(hits) != 1 || hits[0].SessionID != "b" || hits[0].Source != "telegram" || hits[0].Role != "user" ||
				hits[0].SessionStarted != e.get("b").StartedAt || len(hits[0].Context) != 1 {
				t.Errorf("hits = %+v", hits)
			}
		})
	})
}
