package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/admin"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/history"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/host"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/mailbox"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/route"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/serve"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/subagents"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the commands' help")

const cliDoc = "../../docs/cli.md"

// TestCLIReference checks that docs/cli.md is exactly the help of the
// history commands and the control plane's (host, admin, route,
// subagents), so the reference never drifts from the binary. With
// -update-docs it rewrites the file instead.
func TestCLIReference(t *testing.T) {
	got := cliReference()
	if *updateDocs {
		if err := os.WriteFile(cliDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/cli.md is out of date: run go test ./cmd/sessiondb -run TestCLIReference -update-docs")
	}
}

// exitNotes explains the exit status table.
const exitNotes = `
With --json an error is printed on stderr as {"error":{"code","message"}}, the HTTP API's shape,
flag mistakes included; without it, as one line of text after "sessiondb: ".

Answering anything but y or yes to a question (prune, clear, delete and admin's removals ask on a
terminal) exits 6. It is not invalid input (2), and not a failure (1): git and apt answer a "no" with
their general failure status 1, which here means an internal failure. A status of its own keeps
` + "`sessiondb delete ID && next`" + ` from running next, and lets a script tell "the user said no" from "it failed".
`

// cliReference renders the help of every history, mailbox, host and
// control-plane command as Markdown, in the order the commands are built.
func cliReference() []byte {
	f := cli.New(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	root := cli.NewRootCommand(f, groups()...)
	var b bytes.Buffer
	b.WriteString("# sessiondb commands: history, mailboxes and control plane\n\n")
	b.WriteString("Generated from the commands' own help by `go test ./cmd/sessiondb -run TestCLIReference -update-docs`;\n")
	b.WriteString("`sessiondb <command> --help` prints the same.\n\n")
	b.WriteString("Global flags, accepted by every command:\n\n```\n")
	b.WriteString(root.PersistentFlags().FlagUsages())
	b.WriteString("```\n\n")
	b.WriteString("Exit statuses:\n\n| status | `--json` code | meaning |\n|---|---|---|\n")
	for _, e := range cli.ExitStatuses() {
		code := "-"
		if e.Code != "" {
			code = "`" + e.Code + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", e.Status, code, e.Meaning)
	}
	b.WriteString(exitNotes)
	for _, g := range []cli.Group{history.Commands, mailbox.Commands, host.Commands, route.Commands, admin.Commands, subagents.Commands, serve.Commands} {
		for _, c := range g(f) {
			cmd, _, err := root.Find([]string{c.Name()})
			if err != nil {
				continue
			}
			writeCommandTree(&b, root, cmd)
		}
	}
	// The root's own command, beside every group's.
	if cmd, _, err := root.Find([]string{"version"}); err == nil {
		writeCommandTree(&b, root, cmd)
	}
	return b.Bytes()
}

// writeCommandTree documents c and its subcommands, depth first, in the
// order they are built.
func writeCommandTree(b *bytes.Buffer, root, c *cobra.Command) {
	writeCommandDoc(b, c)
	if inh := groupFlags(root, c); inh != "" {
		fmt.Fprintf(b, "\nFlags of the group, accepted by its commands:\n\n```\n%s```\n", inh)
	}
	for _, sub := range c.Commands() {
		if !sub.Hidden && sub.Name() != "help" {
			writeCommandTree(b, root, sub)
		}
	}
}

// groupFlags are the persistent flags c itself declares for its
// subcommands (admin's --central, ...), not the root's globals.
func groupFlags(root, c *cobra.Command) string {
	if c == root || !c.HasSubCommands() {
		return ""
	}
	return c.PersistentFlags().FlagUsages()
}

func writeCommandDoc(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n%s.\n\n", strings.TrimPrefix(c.CommandPath(), "sessiondb "), c.Short)
	if c.Long != "" {
		b.WriteString(c.Long + "\n\n")
	}
	fmt.Fprintf(b, "```\n%s\n```\n", c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```\n%s\n```\n", c.Example)
	}
	if f := c.LocalNonPersistentFlags().FlagUsages(); f != "" {
		fmt.Fprintf(b, "\nFlags:\n\n```\n%s```\n", f)
	}
}
