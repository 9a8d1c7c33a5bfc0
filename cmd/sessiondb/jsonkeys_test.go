package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/store"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// snakeKey is how every key of the command line's JSON is spelt:
// lower-case words joined by '_' (a leading '_' is Hermes' own
// _lineage_root_id).
var snakeKey = regexp.MustCompile(`^_?[a-z0-9]+(_[a-z0-9]+)*$`)

// storedPayloads are keys whose value is a document stored in its
// original system's own form and printed as it is kept: a NanoClaw
// message's content ({"text","sender","senderId"}), a card's options
// ({"label","selectedLabel","value"}), which the agent and NanoClaw read,
// and the inbound event an unknown sender's approval holds to replay
// ({"channelType","platformId","threadId","message":{...}}). Their inner
// keys are not ours to name.
var storedPayloads = []string{"content", "options", "original_message"}

// badKeys walks a decoded JSON value and returns the paths of the keys
// that are not snake_case.
func badKeys(v any, at string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) {
				bad = append(bad, at+"."+k)
			}
			if slices.Contains(storedPayloads, k) {
				continue
			}
			bad = append(bad, badKeys(e, at+"."+k)...)
		}
	case []any:
		for i, e := range x {
			bad = append(bad, badKeys(e, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return bad
}

// jsonExempt are the commands that print no JSON of their own to check,
// with the reason.
var jsonExempt = map[string]string{
	"host":          "a daemon: it logs, and its status file is read by mailbox status (checked)",
	"serve":         "a server: its API's JSON is the http package's",
	"mcp":           "the MCP protocol over stdio",
	"mailbox watch": "follows a mailbox until stopped",
	"bench":         "a benchmark of minutes; its result keys are checked by bench's tests and .ci/smoke",
	"bench-worker":  "bench's own worker process",
	"bench-rusage":  "bench's own measuring parent",
}

// TestJSONKeysAreSnakeCase runs every command of the binary with --json
// over a home holding a history store, a central registry, session
// mailboxes and a subagent store, and checks that every key of what it
// prints is snake_case (as the HTTP API's are): no Go field name (UserID)
// reaches a script. A command added without a run here fails the test.
func TestJSONKeysAreSnakeCase(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("SESSIONDB_HOME", home)
	data := filepath.Join(home, "v2-sessions")
	sub := filepath.Join(home, "janebot", "state.sqlite")
	subs, err := store.OpenSubagents(ctx, sub, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range []string{"1.1", "2.2"} {
		a, _, err := subs.EnsureSubagent(ctx, "C1", th, "/sessions")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := subs.DispatchJob(ctx, a.ID, "job_"+th, nil); err != nil {
			t.Fatal(err)
		}
	}
	subs.Close()
	mb := []string{"--data", data, "--group", "ag-helper", "--session", "s-manual"}
	agent := append([]string{"mailbox", "agent"}, mb...)
	event := `{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","sender":{"id":"42","name":"Ann"},"text":"hey there","is_group":true}`

	type step struct {
		args  []string // "{session}" is the session the first event reached
		stdin string
		lines bool // JSON Lines, not one document
	}
	session := ""
	h21 := filepath.Join(t.TempDir(), "hermes21.db")
	if b, err := os.ReadFile(filepath.Join("..", "..", "sqlite", "testdata", "hermes21", "state.db")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(h21, b, 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []step{
		{args: []string{"quickstart"}},
		{args: []string{"version"}},
		{args: []string{"sessions"}},
		{args: []string{"show", "proj"}},
		{args: []string{"search", "docker"}},
		{args: []string{"title", "20260315_092437_c9a6ff"}},
		{args: []string{"title", "--next", "proj"}},
		{args: []string{"lineage", "proj"}},
		{args: []string{"stats"}},
		{args: []string{"export", "proj"}, lines: true},
		{args: []string{"import", "-"}, stdin: `{"id":"imported1","source":"cli","started_at":1700000000,"messages":[]}` + "\n"},
		{args: []string{"fork", "proj", "--id", "forked1"}},
		{args: []string{"end", "forked1"}},
		{args: []string{"reopen", "forked1"}},
		// A sessiondb store is at Hermes' schema 6, which has no archived
		// column: archiving needs a newer Hermes' file.
		{args: []string{"archive", "--db", h21, "h21-main"}},
		{args: []string{"unarchive", "--db", h21, "h21-main"}},
		{args: []string{"title", "forked1", "A fork"}},
		{args: []string{"clear", "forked1", "--yes"}},
		{args: []string{"delete", "forked1", "--yes"}},
		{args: []string{"prune", "--older-than", "36500d", "--dry-run"}},
		{args: []string{"prune", "--older-than", "36500d", "--yes"}},
		{args: []string{"doctor"}},
		{args: []string{"copy", "--from", filepath.Join(home, "state.db"), "--to", filepath.Join(home, "copy.db")}},

		{args: []string{"admin", "groups", "create", "Helper", "--id", "ag-helper"}},
		{args: []string{"admin", "groups", "create", "Reviewer", "--id", "ag-review"}},
		{args: []string{"admin", "groups", "update", "ag-review", "--name", "Reviewers"}},
		{args: []string{"admin", "groups", "list"}},
		{args: []string{"admin", "channels", "create", "telegram", "chat-1", "--id", "mg-team", "--name", "Team", "--group-chat", "--policy", "request_approval"}},
		{args: []string{"admin", "channels", "create", "telegram", "chat-2", "--id", "mg-two"}},
		{args: []string{"admin", "channels", "update", "mg-two", "--name", "Two"}},
		{args: []string{"admin", "channels", "list"}},
		{args: []string{"admin", "channels", "show", "mg-team"}},
		{args: []string{"admin", "wire", "mg-team", "ag-helper", "--engage", "pattern", "--pattern", "^hey"}},
		{args: []string{"admin", "wire", "mg-two", "ag-helper"}},
		{args: []string{"admin", "wirings"}},
		{args: []string{"admin", "users", "create", "telegram:1", "--name", "Boss"}},
		{args: []string{"admin", "users", "list"}},
		{args: []string{"admin", "users", "show", "telegram:1"}},
		{args: []string{"admin", "roles", "grant", "telegram:1", "owner"}},
		{args: []string{"admin", "roles", "grant", "telegram:7", "admin", "--group", "ag-helper", "--by", "telegram:1"}},
		{args: []string{"admin", "roles", "list"}},
		{args: []string{"admin", "roles", "revoke", "telegram:7", "admin", "--group", "ag-helper", "--yes"}},
		{args: []string{"admin", "members", "add", "ag-helper", "telegram:42", "--by", "telegram:1"}},
		{args: []string{"admin", "members", "list", "ag-helper"}},
		{args: []string{"admin", "destinations", "add", "ag-helper", "reviewer", "--agent", "ag-review"}},
		{args: []string{"admin", "destinations", "list", "ag-helper"}},
		{args: []string{"admin", "destinations", "remove", "ag-helper", "reviewer", "--yes"}},
		{args: []string{"route", "--direct", "--deliver", "exec:cat >/dev/null"}, stdin: event + "\n"},
		{args: []string{"route", "--direct", "--deliver", "exec:cat >/dev/null"}, stdin: strings.Replace(strings.Replace(event, `"42"`, `"5"`, 1), `"m1"`, `"m2"`, 1) + "\n"},
		{args: []string{"admin", "members", "remove", "ag-helper", "telegram:42", "--yes"}},
		{args: []string{"admin", "groups", "show", "ag-helper"}},
		{args: []string{"admin", "sessions", "show", "{session}"}},
		{args: []string{"admin", "sessions", "close", "{session}", "--yes"}},
		{args: []string{"admin", "unwire", "mg-two", "ag-helper", "--yes"}},
		{args: []string{"admin", "channels", "delete", "mg-two", "--yes"}},
		{args: []string{"admin", "groups", "delete", "ag-review", "--yes"}},
		{args: []string{"admin", "sessions", "list"}},
		{args: []string{"admin", "approvals", "list"}},
		{args: []string{"admin", "approvals", "expire", "--yes"}},
		{args: []string{"admin", "questions", "list"}},
		{args: []string{"admin", "questions", "expire", "--yes"}},
		{args: []string{"admin", "dropped", "list"}},
		{args: []string{"admin", "dropped", "prune", "--older-than", "1h", "--yes"}},

		{args: append([]string{"mailbox", "init"}, mb...)},
		{args: append(append([]string{"mailbox", "send"}, mb...), "--text", "hello", "--channel-type", "cli", "--platform-id", "me", "--id", "msg-one")},
		{args: append(append([]string{"mailbox", "project"}, mb...), "--channel-type", "cli", "--platform-id", "me", "--channel", "team=telegram:chat-1")},
		{args: append(append([]string{}, agent...), "poll", "--claim")},
		{args: append(append([]string{}, agent...), "pending")},
		{args: append(append([]string{}, agent...), "send", "--text", "on it", "--reply-to", "msg-one")},
		{args: append(append([]string{}, agent...), "sent")},
		{args: append(append([]string{}, agent...), "lookup", "2")},
		{args: append(append([]string{}, agent...), "ack", "msg-one")},
		{args: append(append([]string{}, agent...), "fail", "msg-one")},
		{args: append(append([]string{}, agent...), "acks")},
		{args: append(append([]string{}, agent...), "destinations")},
		{args: append(append([]string{}, agent...), "routing")},
		{args: append(append([]string{}, agent...), "state", "set", "last_topic", "greeting")},
		{args: append(append([]string{}, agent...), "state", "list")},
		{args: append(append([]string{}, agent...), "tool", "start", "Bash", "--timeout-ms", "1000")},
		{args: append(append([]string{}, agent...), "tool", "show")},
		{args: append(append([]string{}, agent...), "tool", "end")},
		{args: append(append([]string{}, agent...), "heartbeat")},
		{args: append([]string{"mailbox", "ls"}, mb...)},
		{args: []string{"mailbox", "status", "--data", data}},
		{args: append(append([]string{"mailbox", "requeue"}, mb...), "--force")},
		{args: append(append([]string{"mailbox", "recover"}, mb...), "--force")},

		{args: []string{"subagents", "list", "--subagents", sub}},
		{args: []string{"subagents", "show", "--subagents", sub, "--thread", "C1:1.1"}},
		{args: []string{"subagents", "reconcile", "--subagents", sub, "--all-dead", "--yes"}},
		{args: []string{"subagents", "prune", "--subagents", sub, "--older-than", "1h", "--yes"}},
	}
	ran := map[string]bool{}
	clock := testkit.NewClock(time.Now())
	for _, st := range steps {
		clock.Advance(time.Second)
		args := []string{"--json"}
		for _, a := range st.args {
			args = append(args, strings.ReplaceAll(a, "{session}", session))
		}
		r := clitest.Run(ctx, clitest.Options{Stdin: strings.NewReader(st.stdin), Now: clock.Now}, args, groups()...)
		name := strings.Join(st.args, " ")
		if r.Code != 0 {
			t.Errorf("%s: exit %d\n%s", name, r.Code, r.Stderr)
			continue
		}
		ran[commandOf(st.args)] = true
		if st.args[0] == "route" && session == "" {
			var res struct {
				Message struct {
					Deliveries []struct {
						SessionID string `json:"session_id"`
					}
				}
			}
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || len(res.Message.Deliveries) == 0 || res.Message.Deliveries[0].SessionID == "" {
				t.Fatalf("route: no session reached (%v): %s", err, r.Stdout)
			}
			session = res.Message.Deliveries[0].SessionID
		}
		var docs []any
		dec := json.NewDecoder(strings.NewReader(r.Stdout))
		for {
			var v any
			if err := dec.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("%s: stdout is not JSON (%v):\n%s", name, err, r.Stdout)
				break
			}
			docs = append(docs, v)
		}
		if len(docs) == 0 || len(docs) > 1 && !st.lines {
			t.Errorf("%s: %d JSON documents on stdout:\n%s", name, len(docs), r.Stdout)
		}
		for _, d := range docs {
			if bad := badKeys(d, "$"); len(bad) > 0 {
				sort.Strings(bad)
				t.Errorf("%s --json: keys not in snake_case: %s", name, strings.Join(bad, ", "))
			}
		}
	}
	for _, c := range leafCommands(t) {
		p := strings.Join(path(c), " ")
		if _, ok := jsonExempt[p]; !ok && !ran[p] {
			t.Errorf("%s: not run with --json here; add a step (or a reason to jsonExempt)", p)
		}
	}
}

// commandOf is the command path at the start of args: the words before
// the first flag or argument that names no subcommand.
func commandOf(args []string) string {
	root := cliRoot()
	c, _, err := root.Find(args)
	if err != nil {
		return ""
	}
	return strings.Join(path(c), " ")
}
