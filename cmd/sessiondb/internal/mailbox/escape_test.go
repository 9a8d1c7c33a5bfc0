package mailbox

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testkit"
)

// hostile retitles and clears the terminal, then reverses what follows;
// plain is how human output must show it.
const (
	hostile = "\x1b]0;PWNED\x07\x1b[2J\u202eevil"
	plain   = `\x1b]0;PWNED\x07\x1b[2J\u202eevil`
)

// assertInert fails when out holds a character a terminal would act on.
func assertInert(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
			lo, hi := max(0, i-40), min(len(out), i+40)
			t.Errorf("%s prints %U raw: …%q…", what, r, out[lo:hi])
			return
		}
	}
}

// TestHumanOutputEscapesMailboxText sends and answers messages holding
// terminal escapes and a bidi override, and checks every mailbox command
// that prints them: ls, watch, agent poll, agent state get and list show
// them escaped; --json keeps them.
func TestHumanOutputEscapesMailboxText(t *testing.T) {
	_, s := mbSession(t)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "in "+hostile, "--sender", "x"+hostile, "--channel-type", "cli", "--platform-id", "me")...)
	mustMB(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "out "+hostile)...)
	mustMB(t, with(s, "mailbox", "agent", "state", "set", "k"+hostile, "v "+hostile)...)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ls", []string{"mailbox", "ls"}, "in " + plain},
		{"ls outbound", []string{"mailbox", "ls"}, "out " + plain},
		{"agent poll", []string{"mailbox", "agent", "poll"}, "in " + plain},
		{"agent state get", []string{"mailbox", "agent", "state", "get", "k" + hostile}, "v " + plain},
		{"agent state list", []string{"mailbox", "agent", "state", "list"}, "k" + plain + "\tv " + plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustMB(t, with(s, tc.args...)...)
			assertInert(t, tc.name, out)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s lacks %q:\n%s", tc.name, tc.want, out)
			}
		})
	}
	t.Run("watch", func(t *testing.T) {
		out, errOut, stop := mbStart(with(s, "mailbox", "watch", "--poll", "10ms")...)
		testkit.WaitFor(t, "watch to show both rows", func() bool {
			return strings.Contains(out.String(), "in "+plain) && strings.Contains(out.String(), "out "+plain)
		})
		if code := stop(); code != 0 {
			t.Fatalf("watch exit %d: %s", code, errOut.String())
		}
		assertInert(t, "watch", out.String()+errOut.String())
	})
	t.Run("--json is exact", func(t *testing.T) {
		if out := mustMB(t, with(s, "--json", "mailbox", "agent", "state", "get", "k"+hostile)...); !strings.Contains(out, `"v \u001b]0;PWNED\u0007\u001b[2J`+"\u202e"+`evil"`) {
			t.Errorf("state get --json: %s", out)
		}
	})
}
