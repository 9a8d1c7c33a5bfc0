package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb"
)

func TestPrintable(t *testing.T) {
	cases := []struct {
		name, in, text, line string
	}{
		{"plain", "hello, 世界 👨\u200d👩\u200d👧", "hello, 世界 👨\u200d👩\u200d👧", "hello, 世界 👨\u200d👩\u200d👧"},
		{"retitle and clear", "\x1b]0;PWNED\x07\x1b[2J", `\x1b]0;PWNED\x07\x1b[2J`, `\x1b]0;PWNED\x07\x1b[2J`},
		{"lines and tabs", "a\nb\tc", "a\nb\tc", `a\nb\tc`},
		{"CRLF is a line end, a lone CR is not", "a\r\nb\rc", "a\nb\\x0dc", `a\x0d\nb\x0dc`},
		{"NUL, backspace, DEL", "a\x00b\x08c\x7f", `a\x00b\x08c\x7f`, `a\x00b\x08c\x7f`},
		{"C1 controls", "a\u009b31mb\u0085", `a\u009b31mb\u0085`, `a\u009b31mb\u0085`},
		{"bidi override and isolate", "abc\u202edcba\u2066x\u2069", `abc\u202edcba\u2066x\u2069`, `abc\u202edcba\u2066x\u2069`},
		{"zero width space, BOM, tag characters", "a\u200bb\ufeff\U000E0041", `a\u200bb\ufeff\U000e0041`, `a\u200bb\ufeff\U000e0041`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
		{"invalid UTF-8", "a\xffb\xc0\xae", `a\xffb\xc0\xae`, `a\xffb\xc0\xae`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Printable(tc.in); got != tc.text {
				t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := PrintableLine(tc.in); got != tc.line {
				t.Errorf("PrintableLine(%q) = %q, want %q", tc.in, got, tc.line)
			}
		})
	}
}

func TestTableEscapesCells(t *testing.T) {
	var tb Table
	tb.Row("ID", "TITLE")
	tb.Row("a", "x\x1b[2J\ny")
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	if want := "ID  TITLE\na   x\\x1b[2J\\ny\n"; b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestRunEscapesErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	f := New(strings.NewReader(""), &out, &errOut)
	echo := func(*Factory) []*cobra.Command {
		return []*cobra.Command{{Use: "echo", RunE: func(_ *cobra.Command, args []string) error {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "no session %s", args[0])
		}}}
	}
	code := Run(t.Context(), f, []string{"echo", "no\x1b]0;PWNED\x07such"}, echo)
	if code != ExitNotFound || !strings.Contains(errOut.String(), `no\x1b]0;PWNED\x07such`) || strings.ContainsRune(errOut.String(), 0x1b) {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}
