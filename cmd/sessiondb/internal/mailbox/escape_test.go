package mailbox

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// TestHumanOutputEscapesMailboxText sends and answers messages holding
// terminal escapes and a bidi override, and checks every mailbox command
// that prints them: ls, watch, agent poll, agent state get and list show
// them escaped; --json keeps them.
func TestHumanOutputEscapesMailboxText(t *testing.T) {
	_, s := mbSession(t)
	mustMB(t, with(s, "mailbox", "send", "--id", "m1", "--text", "in "+clitest.Hostile, "--sender", "x"+clitest.Hostile, "--channel-type", "cli", "--platform-id", "me")...)
	mustMB(t, with(s, "mailbox", "agent", "send", "--id", "o1", "--reply-to", "m1", "--text", "out "+clitest.Hostile)...)
	mustMB(t, with(s, "mailbox", "agent", "state", "set", "k"+clitest.Hostile, "v "+clitest.Hostile)...)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ls", []string{"mailbox", "ls"}, "in " + clitest.Plain},
		{"ls outbound", []string{"mailbox", "ls"}, "out " + clitest.Plain},
		{"agent poll", []string{"mailbox", "agent", "poll"}, "in " + clitest.Plain},
		{"agent state get", []string{"mailbox", "agent", "state", "get", "k" + clitest.Hostile}, "v " + clitest.Plain},
		{"agent state list", []string{"mailbox", "agent", "state", "list"}, "k" + clitest.Plain + "\tv " + clitest.Plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustMB(t, with(s, tc.args...)...)
			clitest.AssertInert(t, tc.name, out)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s lacks %q:\n%s", tc.name, tc.want, out)
			}
		})
	}
	t.Run("watch", func(t *testing.T) {
		out, errOut, stop := mbStart(with(s, "mailbox", "watch", "--poll", "10ms")...)
		testkit.WaitFor(t, "watch to show both rows", func() bool {
			return strings.Contains(out.String(), "in "+clitest.Plain) && strings.Contains(out.String(), "out "+clitest.Plain)
		})
		if code := stop(); code != 0 {
			t.Fatalf("watch exit %d: %s", code, errOut.String())
		}
		clitest.AssertInert(t, "watch", out.String()+errOut.String())
	})
	t.Run("--json is exact", func(t *testing.T) {
		if out := mustMB(t, with(s, "--json", "mailbox", "agent", "state", "get", "k"+clitest.Hostile)...); !strings.Contains(out, `"v \u001b]0;PWNED\u0007\u001b[2J`+"\u202e"+`evil"`) {
			t.Errorf("state get --json: %s", out)
		}
	})
}
