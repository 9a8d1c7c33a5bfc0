package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testFindSession holds the store to sessiondb.FindSession, the one way a
// face names a session: exact id, then unique id prefix, then (when asked)
// title, newest of its lineage.
func testFindSession(t *testing.T, h Harness) {
	type titled struct{ id, title string }
	cases := []struct {
		name    string
		ids     []string // created in this order (later = newer)
		titles  []titled
		ref     string
		byTitle bool
		want    string
		code    string
		msgHas  []string // parts the error message must hold, in this order
		msgNot  []string // parts it must not hold
	}{
		{name: "exact id", ids: []string{"abc", "abd"}, ref: "abc", want: "abc"},
		{name: "unique prefix", ids: []string{"20260315_a", "20260316_b"}, ref: "20260316", want: "20260316_b"},
		{name: "exact id wins over its prefix matches", ids: []string{"abc", "abcdef", "abcxyz"}, ref: "abc", want: "abc"},
		{name: "ambiguous prefix lists candidates newest first", ids: []string{"abc1", "abc2", "xyz", "abc3"}, ref: "abc",
			code: sessiondb.ECONFLICT, msgHas: []string{`"abc"`, "abc3, abc2, abc1", "type more of the id"}, msgNot: []string{"xyz"}},
		{name: "ambiguous prefix lists at most ten", ids: seq("p", 12), ref: "p",
			code: sessiondb.ECONFLICT, msgHas: []string{"p12, p11, p10, p09, p08, p07, p06, p05, p04, p03;"}, msgNot: []string{"p02", "p01"}},
		{name: "blank is invalid", ids: []string{"abc"}, ref: "  ", byTitle: true, code: sessiondb.EINVALID, msgHas: []string{"empty"}},
		{name: "empty is invalid", ids: []string{"abc"}, ref: "", code: sessiondb.EINVALID, msgHas: []string{"empty"}},
		{name: "title names the newest of its lineage", ids: []string{"s1", "s2", "s3"},
			titles: []titled{{"s1", "proj"}, {"s3", "proj #2"}}, ref: "proj", byTitle: true, want: "s3"},
		{name: "exact title", ids: []string{"s1"}, titles: []titled{{"s1", "notes"}}, ref: "notes", byTitle: true, want: "s1"},
		{name: "title not looked at without byTitle", ids: []string{"s1"}, titles: []titled{{"s1", "notes"}}, ref: "notes",
			code: sessiondb.ENOTFOUND, msgHas: []string{"id or id prefix", `"notes"`}, msgNot: []string{"title"}},
		{name: "nothing matches", ids: []string{"s1"}, ref: "ghost", byTitle: true,
			code: sessiondb.ENOTFOUND, msgHas: []string{"id, id prefix or title", `"ghost"`}},
		{name: "id prefix wins over a title", ids: []string{"projX", "s2"}, titles: []titled{{"s2", "proj"}}, ref: "proj", byTitle: true, want: "projX"},
		{name: "exact id wins over a title", ids: []string{"notes", "s2"}, titles: []titled{{"s2", "notes"}}, ref: "notes", byTitle: true, want: "notes"},
		{name: "a title in another case", ids: []string{"s1", "s2"}, titles: []titled{{"s1", "Lisbon weekend"}, {"s2", "Other"}},
			ref: "lisbon WEEKEND", byTitle: true, want: "s1"},
		{name: "a title in another case, beyond ASCII", ids: []string{"s1"}, titles: []titled{{"s1", "Été à Paris"}},
			ref: "été à paris", byTitle: true, want: "s1"},
		{name: "a lineage in another case names its newest", ids: []string{"s1", "s2", "s3"},
			titles: []titled{{"s1", "Été"}, {"s2", "Été #2"}, {"s3", "autre"}}, ref: "été", byTitle: true, want: "s2"},
		{name: "titles differing only in case are not guessed", ids: []string{"s1", "s2"}, titles: []titled{{"s1", "Notes"}, {"s2", "notes"}},
			ref: "NOTES", byTitle: true, code: sessiondb.ENOTFOUND, msgHas: []string{`"NOTES"`, "did you mean: ", `"notes"`, `"Notes"`}},
		{name: "a close title is offered", ids: []string{"s1", "s2"}, titles: []titled{{"s1", "Lisbon weekend"}, {"s2", "Fix Docker build"}},
			ref: "lisbon", byTitle: true, code: sessiondb.ENOTFOUND, msgHas: []string{"id, id prefix or title", `"lisbon"`, `did you mean: "Lisbon weekend"`}, msgNot: []string{"Docker"}},
		{name: "a typo's title is offered", ids: []string{"s1"}, titles: []titled{{"s1", "Fix Docker build"}},
			ref: "fix dcoker build", byTitle: true, code: sessiondb.ENOTFOUND, msgHas: []string{`did you mean: "Fix Docker build"`}},
		{name: "a typo of a title's word is offered", ids: []string{"s1", "s2"}, titles: []titled{{"s1", "Lisbon weekend"}, {"s2", "Fix Docker build"}},
			ref: "lisbn", byTitle: true, code: sessiondb.ENOTFOUND, msgHas: []string{`did you mean: "Lisbon weekend"`}, msgNot: []string{"Docker"}},
		{name: "nothing close, nothing offered", ids: []string{"s1"}, titles: []titled{{"s1", "Fix Docker build"}},
			ref: "ghost", byTitle: true, code: sessiondb.ENOTFOUND, msgNot: []string{"did you mean"}},
		{name: "ambiguous prefix is not read as a title", ids: []string{"pa", "pb", "s3"}, titles: []titled{{"s3", "p"}}, ref: "p", byTitle: true,
			code: sessiondb.ECONFLICT, msgHas: []string{"pb, pa"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, h)
			for _, id := range tc.ids {
				e.create(id, "cli")
			}
			for _, x := range tc.titles {
				e.setTitle(x.id, x.title)
			}
			got, err := sessiondb.FindSession(e.ctx, e.s, tc.ref, tc.byTitle)
			what := fmt.Sprintf("FindSession(%q, byTitle=%v)", tc.ref, tc.byTitle)
			if tc.code == "" {
				noErr(t, what, err)
				if got != tc.want {
					t.Errorf("%s = %q, want %q", what, got, tc.want)
				}
				return
			}
			wantCode(t, what, err, tc.code)
			msg := err.Error()
			for _, part := range tc.msgHas {
				i := strings.Index(msg, part)
				if i < 0 {
					t.Errorf("%s: error %q lacks %q", what, msg, part)
					continue
				}
				msg = msg[i+len(part):]
			}
			for _, part := range tc.msgNot {
				if strings.Contains(err.Error(), part) {
					t.Errorf("%s: error %q holds %q", what, err, part)
				}
			}
		})
	}
}

// testEachSession covers sessiondb.EachSession over more than one page of
// SearchSessions.
func testEachSession(t *testing.T, h Harness) {
	e := newEnv(t, h)
	all := seq("s", 1001) // two full pages of 500 and one more
	for i, id := range all {
		src := "cli"
		if i%2 == 1 {
			src = "telegram"
		}
		e.create(id, src)
	}
	newestFirst := func(src string) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- {
			if src == "" || (src == "telegram") == (i%2 == 1) {
				out = append(out, all[i])
			}
		}
		return out
	}
	cases := []struct {
		name   string
		source string
		stopAt int // fn returns false after this many; 0 never
		want   []string
	}{
		{name: "every session newest first", want: newestFirst("")},
		{name: "one source", source: "telegram", want: newestFirst("telegram")},
		{name: "stops when fn says so", stopAt: 502, want: newestFirst("")[:502]},
		{name: "unknown source", source: "discord", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := sessiondb.EachSession(e.ctx, e.s, tc.source, func(s *sessiondb.Session) bool {
				got = append(got, s.ID)
				return tc.stopAt == 0 || len(got) < tc.stopAt
			})
			noErr(t, "EachSession", err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("EachSession(%q) visited %d sessions, want %d (first %v)", tc.source, len(got), len(tc.want), first(got, 3))
			}
		})
	}
}

// seq returns n ids prefix01, prefix02, ... (zero-padded to sort in order).
func seq(prefix string, n int) []string {
	w := len(fmt.Sprint(n))
	if w < 2 {
		w = 2
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%0*d", prefix, w, i+1)
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) < n {
		return s
	}
	return s[:n]
}
