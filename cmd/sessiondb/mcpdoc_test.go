package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMCPClientConfigsInTheDocs: every client configuration docs/http.md
// offers for pasting is JSON that parses, with an mcpServers object; each
// server started as a command runs a real sessiondb subcommand with flags
// it has, and each HTTP one names /mcp.
func TestMCPClientConfigsInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/http.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "### MCP client configuration")
	if i < 0 {
		t.Fatal("docs/http.md has no MCP client configuration section")
	}
	section := doc[i:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 3 {
		t.Fatalf("%d JSON blocks in the section, want the stdio, read-only and HTTP ones", len(blocks))
	}
	root := cliRoot()
	commands, urls := 0, 0
	for _, blk := range blocks {
		var cfg struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		dec := json.NewDecoder(strings.NewReader(blk[1]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil || len(cfg.MCPServers) == 0 {
			t.Errorf("a block is no mcpServers JSON (%v):\n%s", err, blk[1])
			continue
		}
		for name, srv := range cfg.MCPServers {
			switch {
			case srv.Command != "":
				commands++
				if srv.Command != "sessiondb" {
					t.Errorf("%s: command %q", name, srv.Command)
				}
				c, rest, err := root.Find(srv.Args)
				if err != nil || c.Name() != "mcp" {
					t.Errorf("%s: args %v do not run sessiondb mcp (%v)", name, srv.Args, err)
					continue
				}
				if err := c.ParseFlags(srv.Args); err != nil {
					t.Errorf("%s: args %v: %v (rest %v)", name, srv.Args, err, rest)
				}
			case srv.URL != "":
				urls++
				if !strings.HasSuffix(srv.URL, "/mcp") {
					t.Errorf("%s: url %q is not the /mcp endpoint", name, srv.URL)
				}
			default:
				t.Errorf("%s: neither a command nor a url", name)
			}
		}
	}
	if commands < 2 || urls < 1 {
		t.Errorf("%d command and %d HTTP configurations, want both kinds", commands, urls)
	}
}
