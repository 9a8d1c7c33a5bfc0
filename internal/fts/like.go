package fts

import "strings"

// LikeTerms splits a sanitized query for the substring search that stands
// in when the word index cannot split the text (CJK): surrounding quotes
// then white space trimmed, split on white space, quotes and the operator
// words AND, OR and NOT dropped. Every term must occur in a hit. A term
// ends at a NUL, as SQLite's LIKE reads its pattern (and PostgreSQL cannot
// take a NUL at all).
func LikeTerms(q string) []string {
	r := strings.TrimSpace(strings.Trim(q, `"`))
	var out []string
	for _, t := range strings.Fields(r) {
		if i := strings.IndexByte(t, 0); i >= 0 {
			t = t[:i]
		}
		t = strings.Trim(t, `"`)
		if t == "" || isOperator(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// likeEscaper escapes the LIKE wildcards and the escape character itself.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// EscapeLike escapes \ % _ in s for a LIKE pattern written with
// ESCAPE '\' (SQLite and PostgreSQL read it the same way), so s matches
// only itself.
func EscapeLike(s string) string { return likeEscaper.Replace(s) }
