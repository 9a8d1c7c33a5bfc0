package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
)

// leafCommands returns the command path (without "sessiondb") of every
// runnable command of the binary, hidden ones included.
func leafCommands(t *testing.T) []*cobra.Command {
	t.Helper()
	root := cli.NewRootCommand(cli.New(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}), groups()...)
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c != root {
			out = append(out, c)
		}
		for _, s := range c.Commands() {
			if s.Name() != "help" && s.Name() != "completion" {
				walk(s)
			}
		}
	}
	walk(root)
	if len(out) < 50 {
		t.Fatalf("found only %d commands", len(out))
	}
	return out
}

// path is c's command line without the program's name.
func path(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }

// jsonError decodes an error printed under --json, failing t when stderr
// is not exactly {"error":{"code","message"}}.
func jsonError(t *testing.T, what string, r clitest.Result) (code, message string) {
	t.Helper()
	var e map[string]map[string]string
	dec := json.NewDecoder(strings.NewReader(r.Stderr))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || len(e) != 1 || len(e["error"]) != 2 || e["error"]["message"] == "" {
		t.Errorf("%s: stderr is not {\"error\":{\"code\",\"message\"}} (%v):\n%s", what, err, r.Stderr)
		return "", ""
	}
	return e["error"]["code"], e["error"]["message"]
}

// TestErrorsUnderJSON: with --json every command prints its error as the
// HTTP API does, {"error":{"code","message"}} on stderr, the flag
// mistakes cobra finds before --json is read included; the code matches
// the exit status.
func TestErrorsUnderJSON(t *testing.T) {
	home := t.TempDir()
	t.Setenv("SESSIONDB_HOME", home)
	for _, c := range leafCommands(t) {
		args := append(path(c), "--no-such-flag")
		for _, order := range [][]string{append([]string{"--json"}, args...), append(args, "--json")} {
			r := clitest.Run(context.Background(), clitest.Options{}, order, groups()...)
			code, msg := jsonError(t, strings.Join(order, " "), r)
			if r.Code != cli.ExitInvalid || code != "invalid" || !strings.Contains(msg, "--no-such-flag") || r.Stdout != "" {
				t.Errorf("%s: exit %d, code %q, message %q, stdout %q", strings.Join(order, " "), r.Code, code, msg, r.Stdout)
			}
		}
	}
	db := filepath.Join(home, "state.db")
	clitest.Must(t, []string{"--db", db, "quickstart"}, groups()...)
	for _, tc := range []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"show", "ghost"}, cli.ExitNotFound, "not_found"},
		{[]string{"show"}, cli.ExitInvalid, "invalid"},
		{[]string{"sessions", "--limit", "abc"}, cli.ExitInvalid, "invalid"},
		{[]string{"title", "20260315_092437_c9a6ff", "proj #2"}, cli.ExitConflict, "conflict"},
		{[]string{"no-such-command"}, cli.ExitInvalid, "invalid"},
	} {
		r := clitest.Run(context.Background(), clitest.Options{}, append([]string{"--db", db, "--json"}, tc.args...), groups()...)
		if code, _ := jsonError(t, strings.Join(tc.args, " "), r); r.Code != tc.exit || code != tc.code {
			t.Errorf("%v: exit %d, code %q; want %d, %q", tc.args, r.Code, code, tc.exit, tc.code)
		}
	}
	// Without --json the error stays one line of text.
	r := clitest.Run(context.Background(), clitest.Options{}, []string{"--db", db, "show", "ghost"}, groups()...)
	if !strings.HasPrefix(r.Stderr, "sessiondb: no session") || strings.Contains(r.Stderr, "{") {
		t.Errorf("text error: %q", r.Stderr)
	}
}

// TestFlagErrorsInWords: a flag value of the wrong kind is refused naming
// the flag and what it wants, never with the parser's internals
// (strconv.ParseInt, time.ParseDuration), on every flag of every command.
func TestFlagErrorsInWords(t *testing.T) {
	t.Setenv("SESSIONDB_HOME", t.TempDir())
	checked := 0
	for _, c := range leafCommands(t) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			typ := fl.Value.Type()
			if typ == "string" || typ == "stringArray" || typ == "stringSlice" || fl.Name == "help" {
				return
			}
			args := append(path(c), "--"+fl.Name+"=abc")
			r := clitest.Run(context.Background(), clitest.Options{}, args, groups()...)
			checked++
			for _, internal := range []string{"strconv", "ParseInt", "ParseFloat", "ParseBool", "invalid syntax", "time: "} {
				if strings.Contains(r.Stderr, internal) {
					t.Errorf("%s: the error shows %q: %s", strings.Join(args, " "), internal, r.Stderr)
				}
			}
			if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, `--`+fl.Name+` "abc": `) {
				t.Errorf("%s: exit %d, %q; want exit 2 naming the flag and its value", strings.Join(args, " "), r.Code, r.Stderr)
			}
		})
	}
	if checked < 30 {
		t.Fatalf("only %d flags of a number, bool or duration checked", checked)
	}
	r := clitest.Run(context.Background(), clitest.Options{}, []string{"sessions", "--limit", "abc"}, groups()...)
	if want := "sessiondb: --limit \"abc\": want a whole number (see `sessiondb sessions --help`)\n"; r.Stderr != want {
		t.Errorf("sessions --limit abc:\n got %q\nwant %q", r.Stderr, want)
	}
}

// TestDashArgumentHint: an argument starting with '-' reads as an unknown
// flag; the error says how to pass it (after `--`), in search's own words
// there, and the search then runs.
func TestDashArgumentHint(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	clitest.Must(t, []string{"--db", db, "quickstart"}, groups()...)
	r := clitest.Run(context.Background(), clitest.Options{}, []string{"--db", db, "search", "-race"}, groups()...)
	if r.Code != cli.ExitInvalid || !strings.Contains(r.Stderr, "to search for a term starting with '-', put `--` before it, as in `sessiondb search -- -race`") {
		t.Errorf("search -race: exit %d, %q", r.Code, r.Stderr)
	}
	r = clitest.Run(context.Background(), clitest.Options{}, []string{"--db", db, "title", "--nope", "x"}, groups()...)
	if !strings.Contains(r.Stderr, "to give an argument starting with '-', put `--` before it, as in `sessiondb title -- --nope`") {
		t.Errorf("title --nope: %q", r.Stderr)
	}
	if r := clitest.Must(t, []string{"--db", db, "search", "--", "-race"}, groups()...); !strings.Contains(r.Stdout, "race") {
		t.Errorf("search -- -race found nothing: %q %q", r.Stdout, r.Stderr)
	}
	// A command without arguments has nothing to put after `--`.
	r = clitest.Run(context.Background(), clitest.Options{}, []string{"--db", db, "sessions", "-x"}, groups()...)
	if strings.Contains(r.Stderr, "`--`") {
		t.Errorf("sessions -x suggests --: %q", r.Stderr)
	}
}

// TestNoDoubledPrefix: an argument error names the command once, after
// the program's name ("sessiondb: show: ..."), never "sessiondb:
// sessiondb show: ...".
func TestNoDoubledPrefix(t *testing.T) {
	t.Setenv("SESSIONDB_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show"}, "sessiondb: show: want one session id"},
		{[]string{"lineage", "a", "b"}, "sessiondb: lineage: want one session id"},
		{[]string{"admin", "groups", "create"}, "sessiondb: admin groups create: want "},
	} {
		r := clitest.Run(context.Background(), clitest.Options{}, tc.args, groups()...)
		if r.Code != cli.ExitInvalid || !strings.HasPrefix(r.Stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want it to start %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// cliRoot is the binary's root command, on empty streams.
func cliRoot() *cobra.Command {
	return cli.NewRootCommand(cli.New(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}), groups()...)
}
