package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestWarnsOfAPasswordOnTheCommandLine: a database URL given with a flag
// that holds a password gets one warning on stderr, naming the flags and
// the safer ways, and never the password; a URL without one, a file path
// and the URL in $SESSIONDB_DATABASE_URL (not on the command line) get
// none.
func TestWarnsOfAPasswordOnTheCommandLine(t *testing.T) {
	group := func(f *Factory) []*cobra.Command {
		var central, from string
		c := &cobra.Command{Use: "noop", RunE: func(*cobra.Command, []string) error { return nil }}
		c.Flags().StringVar(&central, "central", "", "")
		c.Flags().StringVar(&from, "from", "", "")
		return []*cobra.Command{c}
	}
	const secret = "s3cret-pw"
	withPW := "postgres://agent:" + secret + "@db.internal/sessions"
	cases := []struct {
		name  string
		env   string // $SESSIONDB_DATABASE_URL
		args  []string
		flags string // the flags the warning names; "" for no warning
		hint  bool   // it names $SESSIONDB_DATABASE_URL
	}{
		{name: "--db", args: []string{"--db", withPW, "noop"}, flags: "--db", hint: true},
		{name: "--db after the command", args: []string{"noop", "--db", withPW}, flags: "--db", hint: true},
		{name: "--central with a password parameter", args: []string{"noop", "--central", "postgres://db/reg?password=" + secret}, flags: "--central"},
		{name: "two flags, one warning", args: []string{"--db", withPW, "noop", "--from", withPW, "--central", "/srv/v2.db"}, flags: "--db and --from", hint: true},
		{name: "a URL without a password", args: []string{"--db", "postgres://agent@db.internal/sessions", "noop"}},
		{name: "a file", args: []string{"--db", "/srv/state:1@x.db", "noop"}},
		{name: "the environment", env: withPW, args: []string{"noop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SESSIONDB_DATABASE_URL", tc.env)
			var out, errOut bytes.Buffer
			f := New(strings.NewReader(""), &out, &errOut)
			if code := Run(context.Background(), f, tc.args, group); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			got := errOut.String()
			if strings.Contains(got, secret) {
				t.Errorf("stderr shows the password: %q", got)
			}
			n := strings.Count(got, "warning:")
			if tc.flags == "" {
				if n != 0 {
					t.Errorf("warned: %q", got)
				}
				return
			}
			if n != 1 || !strings.Contains(got, "with "+tc.flags+" holds a password") ||
				!strings.Contains(got, "$PGPASSWORD") || !strings.Contains(got, "$PGPASSFILE") {
				t.Errorf("stderr %q, want one warning naming %s and PGPASSWORD, PGPASSFILE", got, tc.flags)
			}
			if strings.Contains(got, "$SESSIONDB_DATABASE_URL") != tc.hint {
				t.Errorf("stderr %q: names $SESSIONDB_DATABASE_URL: %v, want %v", got, !tc.hint, tc.hint)
			}
		})
	}
}
