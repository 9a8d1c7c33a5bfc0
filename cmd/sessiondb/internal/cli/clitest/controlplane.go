package clitest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/hostd"
)

// ControlPlane is a central registry (v2.db) and a data root of session
// mailboxes (v2-sessions) in a test's temporary folder, and the command
// groups (admin, route, host, ...) to run over them.
type ControlPlane struct {
	t             testing.TB
	Central, Data string
	groups        []cli.Group
}

// NewControlPlane returns a control plane in a new temporary folder; its
// files are made by the first command that writes.
func NewControlPlane(t testing.TB, groups ...cli.Group) *ControlPlane {
	dir := t.TempDir()
	return &ControlPlane{t: t, Central: filepath.Join(dir, "v2.db"), Data: filepath.Join(dir, "v2-sessions"), groups: groups}
}

// Args is args with the --central and --data flags naming p.
func (p *ControlPlane) Args(args ...string) []string {
	return append(args, "--central", p.Central, "--data", p.Data)
}

// Run runs args over p, fails the test unless it exits 0, and returns
// stdout.
func (p *ControlPlane) Run(args ...string) string {
	p.t.Helper()
	return Must(p.t, p.Args(args...), p.groups...).Stdout
}

// JSON runs args over p with --json and decodes stdout into v.
func (p *ControlPlane) JSON(v any, args ...string) {
	p.t.Helper()
	Must(p.t, p.Args(append(args, "--json")...), p.groups...).Decode(p.t, v)
}

// Route routes one event line with `route --json` and the flags in extra
// (--direct, --host ADDR, --deliver ...), fails the test unless it exits
// 0, and returns the line's result.
func (p *ControlPlane) Route(line string, extra ...string) hostd.LineResult {
	p.t.Helper()
	args := p.Args(append([]string{"route", "--json"}, extra...)...)
	r := Run(context.Background(), Options{Stdin: strings.NewReader(line + "\n")}, args, p.groups...)
	if r.Code != 0 {
		p.t.Fatalf("route %s: exit %d\n%s%s", line, r.Code, r.Stdout, r.Stderr)
	}
	var res hostd.LineResult
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		p.t.Fatalf("route result %q: %v", r.Stdout, err)
	}
	return res
}

// WireHelper registers the agent group ag-helper ("Helper") and the
// telegram chat chat-1 as mg-team, with chatFlags (--group-chat, --policy
// P, ...), and wires them with wireFlags (--engage ...).
func (p *ControlPlane) WireHelper(chatFlags []string, wireFlags ...string) {
	p.t.Helper()
	p.Run("admin", "groups", "create", "Helper", "--id", "ag-helper")
	p.Run(append([]string{"admin", "channels", "create", "telegram", "chat-1", "--id", "mg-team"}, chatFlags...)...)
	p.Run(append([]string{"admin", "wire", "mg-team", "ag-helper"}, wireFlags...)...)
}
