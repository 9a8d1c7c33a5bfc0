package clitest

import "testing"

// Hostile retitles the terminal, clears it, and then reverses what follows
// (a right-to-left override): text another program could have stored, to
// plant where a command prints it. Plain is how human output must show it.
const (
	Hostile = "\x1b]0;PWNED\x07\x1b[2J\u202eevil"
	Plain   = `\x1b]0;PWNED\x07\x1b[2J\u202eevil`
)

// AssertInert fails t when out (what names it) holds anything a terminal
// would act on instead of show: C0 controls other than newline and tab,
// DEL, C1 controls, bidi and other format characters.
func AssertInert(t testing.TB, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u2066' || r == '\u200b' {
			lo, hi := max(0, i-40), min(len(out), i+40)
			t.Errorf("%s prints %U raw: …%q…", what, r, out[lo:hi])
			return
		}
	}
}
