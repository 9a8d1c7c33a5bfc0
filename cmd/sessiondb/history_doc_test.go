package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/history"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the commands' help")

const cliDoc = "../../docs/cli.md"

// TestCLIReference checks that docs/cli.md is exactly the help of the
// history commands, so the reference never drifts from the binary. With
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

// cliReference renders every history command's help as Markdown, in the
// order the commands are built.
func cliReference() []byte {
	f := cli.New(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	root := cli.NewRootCommand(f, groups()...)
	var b bytes.Buffer
	b.WriteString("# sessiondb history commands\n\n")
	b.WriteString("Generated from the commands' own help by `go test ./cmd/sessiondb -run TestCLIReference -update-docs`;\n")
	b.WriteString("`sessiondb <command> --help` prints the same.\n\n")
	b.WriteString("Global flags, accepted by every command:\n\n```\n")
	b.WriteString(root.PersistentFlags().FlagUsages())
	b.WriteString("```\n\n")
	b.WriteString("Exit statuses: 0 ok, 1 internal, 2 invalid input, 3 not found, 4 conflict, 5 busy, 130 interrupted.\n")
	mine := history.Commands(f)
	for _, c := range mine {
		cmd, _, err := root.Find([]string{c.Name()})
		if err != nil {
			continue
		}
		writeCommandDoc(&b, cmd)
	}
	return b.Bytes()
}

func writeCommandDoc(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n%s.\n\n", c.Name(), c.Short)
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
