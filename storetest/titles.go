package storetest

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// titled is a session to create: id and its title ("" = untitled).
type titled struct{ id, title string }

func (e *env) titledSessions(ss []titled) {
	e.t.Helper()
	for _, s := range ss {
		e.create(s.id, "cli")
		if s.title != "" {
			e.setTitle(s.id, s.title)
		}
	}
}

// compressionChain creates ids[0] → ids[1] → … where each was ended by
// compression before the next started, so each is a continuation.
func (e *env) compressionChain(ids ...string) {
	e.t.Helper()
	e.create(ids[0], "cli")
	for i := 1; i < len(ids); i++ {
		e.end(ids[i-1], "compression")
		e.child(ids[i], ids[i-1])
	}
}

// testTitles covers section 5.1.
func testTitles(t *testing.T, h Harness) {
	t.Run("Set", func(t *testing.T) {
		cases := []struct {
			name    string
			build   func(e *env)
			id      string
			title   string
			wantOK  bool
			code    string
			wantMsg string            // substring of the error message
			want    map[string]string // id → title after ("" = untitled)
		}{
			{name: "sanitized", id: "a", title: "  a\t\nb\u200b c  ", wantOK: true, want: map[string]string{"a": "a b c"}},
			{name: "NUL deleted", id: "a", title: "hello\x00world", wantOK: true, want: map[string]string{"a": "helloworld"}},
			{name: "controls and bidi deleted", id: "a", title: "x\x07y\u202ez\u2066w\ufffc", wantOK: true, want: map[string]string{"a": "xyzw"}},
			{name: "only invisible clears", build: func(e *env) { e.setTitle("a", "old") }, id: "a", title: "\x00\x01\u200b\ufeff", wantOK: true, want: map[string]string{"a": ""}},
			{name: "empty clears", build: func(e *env) { e.setTitle("a", "old") }, id: "a", title: "", wantOK: true, want: map[string]string{"a": ""}},
			{name: "100 code points", id: "a", title: strings.Repeat("é", 100), wantOK: true, want: map[string]string{"a": strings.Repeat("é", 100)}},
			{name: "length counted after sanitizing", id: "a", title: "  " + strings.Repeat("x", 100) + "\u200b\u200b  ", wantOK: true, want: map[string]string{"a": strings.Repeat("x", 100)}},
			{name: "101 code points invalid", build: func(e *env) { e.setTitle("a", "old") }, id: "a", title: strings.Repeat("é", 101),
				code: sessiondb.EINVALID, wantMsg: "Title too long (101 chars, max 100)", want: map[string]string{"a": "old"}},
			{name: "emoji CJK accents punctuation kept", id: "a", title: "🚀 项目 café — v2.0! (ok?)", wantOK: true, want: map[string]string{"a": "🚀 项目 café — v2.0! (ok?)"}},
			{name: "missing id", id: "ghost", title: "free", wantOK: false},
			{name: "taken by another is conflict", build: func(e *env) { e.setTitle("a", "proj") }, id: "b", title: "proj",
				code: sessiondb.ECONFLICT, wantMsg: "Title 'proj' is already in use by session a", want: map[string]string{"a": "proj", "b": ""}},
			{name: "taken after sanitizing is conflict", build: func(e *env) { e.setTitle("a", "proj") }, id: "b", title: " proj\u200b ",
				code: sessiondb.ECONFLICT, want: map[string]string{"a": "proj", "b": ""}},
			{name: "conflict even for a missing id", build: func(e *env) { e.setTitle("a", "proj") }, id: "ghost", title: "proj",
				code: sessiondb.ECONFLICT, want: map[string]string{"a": "proj"}},
			{name: "own title re-set", build: func(e *env) { e.setTitle("a", "proj") }, id: "a", title: "proj", wantOK: true, want: map[string]string{"a": "proj"}},
			{name: "uniqueness is case-sensitive", build: func(e *env) { e.setTitle("a", "My Project") }, id: "b", title: "my project",
				wantOK: true, want: map[string]string{"a": "My Project", "b": "my project"}},
			{name: "NULL titles never conflict", build: func(e *env) { e.setTitle("a", "") }, id: "b", title: "", wantOK: true, want: map[string]string{"a": "", "b": ""}},
			{name: "rename frees the old title", build: func(e *env) { e.setTitle("a", "one"); e.setTitle("a", "two") }, id: "b", title: "one",
				wantOK: true, want: map[string]string{"a": "two", "b": "one"}},
			{name: "compression parent's title moves", build: func(e *env) {
				e.setTitle("a", "proj")
				e.end("a", "compression")
				e.child("c", "a")
			}, id: "c", title: "proj", wantOK: true, want: map[string]string{"a": "", "c": "proj"}},
			{name: "compression grandparent's title moves", build: func(e *env) {
				e.setTitle("a", "proj")
				e.end("a", "compression")
				e.child("c", "a")
				e.end("c", "compression")
				e.child("d", "c")
			}, id: "d", title: "proj", wantOK: true, want: map[string]string{"a": "", "c": "", "d": "proj"}},
			{name: "non-compression parent keeps conflict", build: func(e *env) {
				e.setTitle("a", "proj")
				e.end("a", "user_exit")
				e.child("c", "a")
			}, id: "c", title: "proj", code: sessiondb.ECONFLICT, want: map[string]string{"a": "proj", "c": ""}},
			{name: "child started before the compression end keeps conflict", build: func(e *env) {
				e.setTitle("a", "proj")
				e.child("c", "a")
				e.end("a", "compression")
			}, id: "c", title: "proj", code: sessiondb.ECONFLICT, want: map[string]string{"a": "proj", "c": ""}},
			{name: "descendant's title does not move up", build: func(e *env) {
				e.end("a", "compression")
				e.child("c", "a")
				e.setTitle("c", "proj")
			}, id: "a", title: "proj", code: sessiondb.ECONFLICT, want: map[string]string{"a": "", "c": "proj"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.create("a", "cli")
				e.create("b", "cli")
				if tc.build != nil {
					tc.build(e)
				}
				ok, err := e.s.SetSessionTitle(e.ctx, tc.id, tc.title)
				if tc.code != "" {
					wantCode(t, "SetSessionTitle", err, tc.code)
					if tc.wantMsg != "" && !strings.Contains(err.Error(), tc.wantMsg) {
						t.Errorf("error %q does not say %q", err, tc.wantMsg)
					}
				} else {
					noErr(t, "SetSessionTitle", err)
					if ok != tc.wantOK {
						t.Errorf("SetSessionTitle = %v, want %v", ok, tc.wantOK)
					}
				}
				for id, want := range tc.want {
					got, has, err := e.s.GetSessionTitle(e.ctx, id)
					noErr(t, "GetSessionTitle", err)
					if has != (want != "") || got != want {
						t.Errorf("title of %s = %q (ok=%v), want %q", id, got, has, want)
					}
					if s := e.get(id); (s.Title == nil) != (want == "") {
						t.Errorf("session %s title column = %s, want %q (empty must be NULL)", id, deref(s.Title), want)
					}
				}
			})
		}
	})

	t.Run("Get", func(t *testing.T) {
		e := newEnv(t, h)
		e.titledSessions([]titled{{"a", "My Project"}, {"b", ""}})
		cases := []struct {
			name   string
			id     string
			want   string
			wantOK bool
		}{
			{"titled", "a", "My Project", true},
			{"untitled", "b", "", false},
			{"missing", "ghost", "", false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, ok, err := e.s.GetSessionTitle(e.ctx, tc.id)
				noErr(t, "GetSessionTitle", err)
				if got != tc.want || ok != tc.wantOK {
					t.Errorf("GetSessionTitle(%q) = %q, %v; want %q, %v", tc.id, got, ok, tc.want, tc.wantOK)
				}
			})
		}
	})

	t.Run("ByTitle", func(t *testing.T) {
		e := newEnv(t, h)
		e.titledSessions([]titled{{"a", "My Project"}, {"b", "My Project #2"}, {"c", "100%"}, {"d", ""}})
		cases := []struct {
			name  string
			title string
			want  string // "" = not_found
		}{
			{"exact", "My Project", "a"},
			{"exact variant", "My Project #2", "b"},
			{"case differs", "my project", ""},
			{"prefix only", "My", ""},
			{"wildcard is literal", "100_", ""},
			{"percent exact", "100%", "c"},
			{"missing", "nothing", ""},
			{"empty never matches an untitled session", "", ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s, err := e.s.GetSessionByTitle(e.ctx, tc.title)
				if tc.want == "" {
					wantCode(t, "GetSessionByTitle", err, sessiondb.ENOTFOUND)
					return
				}
				noErr(t, "GetSessionByTitle", err)
				if s == nil || s.ID != tc.want || deref(s.Title) != tc.title {
					t.Errorf("GetSessionByTitle(%q) = %+v, want session %s", tc.title, s, tc.want)
				}
			})
		}
	})

	t.Run("Resolve", func(t *testing.T) {
		cases := []struct {
			name     string
			sessions []titled // created in order: later = newer
			query    string
			want     string // "" = not_found
		}{
			{name: "exact only", sessions: []titled{{"a", "proj"}}, query: "proj", want: "a"},
			{name: "variant wins over exact", sessions: []titled{{"a", "proj"}, {"b", "proj #2"}}, query: "proj", want: "b"},
			{name: "most recently started variant", sessions: []titled{{"a", "proj"}, {"c", "proj #3"}, {"b", "proj #2"}}, query: "proj", want: "b"},
			{name: "variant without exact", sessions: []titled{{"b", "proj #2"}}, query: "proj", want: "b"},
			{name: "hashtag suffix counts", sessions: []titled{{"a", "proj"}, {"b", "proj #hashtag"}}, query: "proj", want: "b"},
			{name: "no space is not a variant", sessions: []titled{{"a", "proj"}, {"b", "proj#2"}}, query: "proj", want: "a"},
			{name: "variant match ignores ASCII case", sessions: []titled{{"a", "proj"}, {"b", "PROJ #2"}}, query: "proj", want: "b"},
			{name: "exact match keeps case", sessions: []titled{{"a", "Proj"}}, query: "proj", want: ""},
			{name: "underscore is literal", sessions: []titled{{"a", "testXproject #2"}}, query: "test_project", want: ""},
			{name: "underscore exact beside look-alike", sessions: []titled{{"a", "test_project"}, {"b", "testXproject #2"}}, query: "test_project", want: "a"},
			{name: "percent is literal", sessions: []titled{{"a", "50X off #2"}}, query: "50% off", want: ""},
			{name: "none", sessions: []titled{{"a", "other"}}, query: "proj", want: ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				e.titledSessions(tc.sessions)
				got, err := e.s.ResolveSessionByTitle(e.ctx, tc.query)
				if tc.want == "" {
					wantCode(t, "ResolveSessionByTitle", err, sessiondb.ENOTFOUND)
					return
				}
				noErr(t, "ResolveSessionByTitle", err)
				if got != tc.want {
					t.Errorf("ResolveSessionByTitle(%q) = %q, want %q", tc.query, got, tc.want)
				}
			})
		}
	})

	t.Run("NextInLineage", func(t *testing.T) {
		long := strings.Repeat("y", 100)
		cases := []struct {
			name     string
			existing []string
			input    string
			want     string
		}{
			{name: "none", input: "my project", want: "my project"},
			{name: "original exists", existing: []string{"my project"}, input: "my project", want: "my project #2"},
			{name: "after #3", existing: []string{"my project", "my project #2", "my project #3"}, input: "my project", want: "my project #4"},
			{name: "input numbered", existing: []string{"my project", "my project #2"}, input: "my project #2", want: "my project #3"},
			{name: "gap uses max", existing: []string{"my project", "my project #7"}, input: "my project", want: "my project #8"},
			{name: "only a numbered variant", existing: []string{"my project #5"}, input: "my project", want: "my project #6"},
			{name: "non-numeric suffix ignored", existing: []string{"my project", "my project #abc"}, input: "my project", want: "my project #2"},
			{name: "non-numeric input is its own base", existing: []string{"proj #x"}, input: "proj #x", want: "proj #x #2"},
			{name: "other bases ignored", existing: []string{"my projects #9", "my project2"}, input: "my project", want: "my project"},
			{name: "wildcards escaped", existing: []string{"aXb #5"}, input: "a_b", want: "a_b"},
			{name: "not length-checked", existing: []string{long}, input: long, want: long + " #2"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, h)
				for i, title := range tc.existing {
					id := string(rune('a' + i))
					e.create(id, "cli")
					e.setTitle(id, title)
				}
				got, err := e.s.NextTitleInLineage(e.ctx, tc.input)
				noErr(t, "NextTitleInLineage", err)
				if got != tc.want {
					t.Errorf("NextTitleInLineage(%q) = %q, want %q", tc.input, got, tc.want)
				}
			})
		}
	})
}
