package fts

import (
	"strings"
	"testing"
)

// TestLikeSnippet: the substring search's snippet marks every term (the
// longer where two start at one place, ASCII case ignored), shows its
// cuts, and keeps bytes that are not UTF-8 as they are.
func TestLikeSnippet(t *testing.T) {
	like := Snippet{Open: "[", Close: "]", Ellipsis: "…"}.Like
	cases := []struct {
		name  string
		terms []string
		raw   string
		want  string
	}{
		{"whole text", []string{"大别山"}, "0去大别山玩", "去[大别山]玩"},
		{"cut before", []string{"大别山"}, "1去大别山玩", "…去[大别山]玩"},
		{"cut after", []string{"中"}, "0" + strings.Repeat("中", LikeSpan+1), strings.Repeat("[中]", LikeSpan) + "…"},
		{"span exactly", []string{"x"}, "0" + strings.Repeat("a", LikeSpan), strings.Repeat("a", LikeSpan)},
		{"ASCII case", []string{"abc"}, "0ABC 大 aBc", "[ABC] 大 [aBc]"},
		{"longest first", []string{"大", "大别山"}, "0大别山大", "[大别山][大]"},
		{"empty term", []string{"", "山"}, "0大别山", "大别[山]"},
		{"not UTF-8", []string{"山"}, "0\xff山\xfe", "\xff[山]\xfe"},
		{"nothing read", []string{"山"}, "", ""},
	}
	for _, c := range cases {
		if got := like(c.terms)([]byte(c.raw)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
