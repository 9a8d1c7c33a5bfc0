package faults

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/mailbox"
)

// hostileIDs are ids that try to leave the folder they name a part of:
// dot-dot in plain and encoded forms and its Unicode look-alikes, absolute
// paths, both separators, an overlong UTF-8 encoding of "..", control
// characters and a name longer than a file system allows.
var hostileIDs = []string{
	"..", ".", "../x", "../../escape", "a/../../b", `..\x`, `x\..\..\y`,
	"/etc/passwd", "/tmp/escape", "~", "~/escape",
	"%2e%2e", "..%2fescape", "\uff0e\uff0e", "\u2024\u2024", "\u2025", "\uff0e\uff0e\u2215escape", "..\u200b",
	"\xc0\xae\xc0\xae", "\xe0\x80\xae\xe0\x80\xae", "bad\xff",
	"tab\there", "new\nline", "esc\x1b[2J", "del\x7f", "c1\u0085",
	strings.Repeat("a", 256), strings.Repeat("é", 200),
}

// outside lists every entry under top that is not under inside: where a
// traversal would have written.
func outside(t *testing.T, top, inside string, allowed ...string) []string {
	t.Helper()
	ok := map[string]bool{top: true}
	for _, a := range allowed {
		ok[a] = true
	}
	var out []string
	filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == inside || strings.HasPrefix(p, inside+string(filepath.Separator)) {
			return nil
		}
		if !ok[p] {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestPathTraversalInIDs gives every id that becomes a path (agent group,
// session, message id, attachment name, outbox file name) each hostile
// value, through the command line and the library. Each is either refused
// as invalid, naming the field, or kept inside its folder under the
// literal name; nothing is ever created outside the data root.
func TestPathTraversalInIDs(t *testing.T) {
	e := newEnv(t)
	attachment := filepath.Join(e.Home, "report.txt")
	if err := os.WriteFile(attachment, []byte("report"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range hostileIDs {
		id := id
		t.Run(strings.ToValidUTF8(id, "?")[:min(len(strings.ToValidUTF8(id, "?")), 24)], func(t *testing.T) {
			top := t.TempDir()
			data := filepath.Join(top, "data")
			ok := []string{}
			check := func(what string, r result, field string, made ...string) {
				t.Helper()
				switch r.Code {
				case 0:
					for _, m := range made {
						if _, err := os.Lstat(filepath.Join(data, m)); err != nil {
							t.Errorf("%s accepted %q but did not make %s: %v", what, id, m, err)
						}
					}
					ok = append(ok, what)
				case 2:
					if !strings.Contains(r.Stderr, field) {
						t.Errorf("%s refused %q without naming %s: %s", what, id, field, r)
					}
				default:
					t.Errorf("%s on %q: want success or a refusal (exit 2): %s", what, id, r)
				}
			}
			// As the agent group and as the session.
			check("group", e.run(t, "", "mailbox", "init", "--data", data, "--group", id, "--session", "s"), "agent_group_id", filepath.Join(id, "s", "inbound.db"))
			check("session", e.run(t, "", "mailbox", "init", "--data", data, "--group", "g", "--session", id), "session_id", filepath.Join("g", id, "inbound.db"))
			s := []string{"--data", data, "--group", "g", "--session", "s"}
			e.must(t, append([]string{"mailbox", "init"}, s...)...)
			// As a message id that names the inbound attachment folder, and
			// as the attachment's own name.
			content, _ := json.Marshal(map[string]any{"text": "x", "attachments": []map[string]string{{"name": "a.png", "data": "aGk="}}})
			check("message id", e.run(t, "", append([]string{"mailbox", "send", "--id", id, "--content", string(content)}, s...)...), "id",
				filepath.Join("g", "s", "inbox", id, "a.png"))
			named, _ := json.Marshal(map[string]any{"text": "x", "attachments": []map[string]string{{"name": id, "data": "aGk="}}})
			check("attachment name", e.run(t, "", append([]string{"mailbox", "send", "--id", "m-att", "--content", string(named)}, s...)...), "name")
			// As an outbound message id that names the outbox folder.
			check("outbound id", e.run(t, "", append([]string{"mailbox", "agent", "send", "--id", id, "--text", "x", "--channel-type", "cli", "--platform-id", "me", "--file", attachment}, s...)...), "id",
				filepath.Join("g", "s", "outbox", id, "report.txt"))
			if got := outside(t, top, data); len(got) > 0 {
				t.Fatalf("written outside the data root: %q (accepted by %v)", got, ok)
			}
			t.Logf("%q accepted by %v", id, ok)
		})
	}
}

// TestPathTraversalInLibraryIDs covers what a command line cannot carry
// (NUL) and the paths no command names directly: the outbox files an agent
// lists in a row it writes itself, which the host hands to its deliverer.
func TestPathTraversalInLibraryIDs(t *testing.T) {
	ctx := context.Background()
	top := t.TempDir()
	data := filepath.Join(top, "data")
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: data}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []mailbox.SessionRef{{AgentGroupID: "g\x00x", SessionID: "s"}, {AgentGroupID: "g", SessionID: "..\x00"}, {AgentGroupID: "", SessionID: "s"}} {
		err := h.InitSession(ctx, bad)
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "_id") {
			t.Errorf("InitSession(%q) = %v; want invalid naming the field", bad, err)
		}
	}
	for _, name := range []string{"../../escape.png", `..\..\escape.png`, "/etc/passwd", "a/b/../../c.png"} {
		base, ok := mailbox.SafeBaseName(name)
		if !ok || strings.ContainsAny(base, `/\`) || base == ".." {
			t.Errorf("SafeBaseName(%q) = %q, %v", name, base, ok)
		}
	}

	// A row whose files point out of its outbox: the host refuses it
	// before any deliverer sees a path.
	ref := mailbox.SessionRef{AgentGroupID: "g", SessionID: "s"}
	if err := h.InitSession(ctx, ref); err != nil {
		t.Fatal(err)
	}
	dir, _ := h.Layout().SessionDir(ref)
	victim := filepath.Join(top, "victim.txt")
	os.WriteFile(victim, []byte("precious"), 0o600)
	for i, files := range []string{`["../../../victim.txt"]`, `["` + victim + `"]`, `[".."]`, `["a\\..\\..\\victim.txt"]`} {
		sqlitetest.ExecFile(t, filepath.Join(dir, mailbox.OutboundFile),
			"INSERT INTO messages_out (id, seq, timestamp, kind, platform_id, channel_type, content) VALUES (?, ?, '2026-01-01T00:00:00.000Z', 'chat', 'me', 'cli', ?)",
			"o"+string(rune('a'+i)), 2*i+1, `{"text":"x","files":`+files+`}`)
	}
	var handed []string
	d := mailbox.DelivererFunc(func(_ context.Context, _ mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
		for _, f := range row.Files {
			handed = append(handed, f.Path)
		}
		return "", nil
	})
	res, err := h.Drain(ctx, ref, d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 4 || res.Delivered != 0 || len(handed) != 0 {
		t.Errorf("drain %+v, files handed to the deliverer %q; want all 4 rows failed and no path handed", res, handed)
	}
	rows := sqlitetest.QueryFile(t, filepath.Join(dir, mailbox.InboundFile), "SELECT last_error FROM delivery_attempts ORDER BY message_out_id")
	for _, r := range rows {
		if msg, _ := r[0].(string); !strings.Contains(msg, "files") {
			t.Errorf("the failure does not name the field: %q", msg)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the victim changed: %q", b)
	}
	if got := outside(t, top, data, victim); len(got) > 0 {
		t.Errorf("written outside the data root: %q", got)
	}
}
