package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/admin"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/cli/clitest"
	"github.com/sessiondb/sessiondb/cmd/sessiondb/internal/route"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

var groups = []cli.Group{admin.Commands, route.Commands}

// routeDirect routes one event in process (no host) and returns the
// session it reached ("" for none).
func routeDirect(e *clitest.ControlPlane, line string, extra ...string) string {
	res := e.Route(line, append([]string{"--direct"}, extra...)...)
	if res.Message == nil || len(res.Message.Deliveries) == 0 {
		return ""
	}
	return res.Message.Deliveries[0].SessionID
}

// destinations reads the destinations projected into a session of
// ag-helper.
func destinations(t *testing.T, e *clitest.ControlPlane, session string) []mailbox.Destination {
	t.Helper()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: e.Data}})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := h.Destinations(context.Background(), mailbox.SessionRef{AgentGroupID: "ag-helper", SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// The registry from a shell: groups, chats, wiring, users, roles and
// members, as tables and as JSON; every change that alters what a session
// may send reaches its folder at once.
func TestAdminRegistry(t *testing.T) {
	e := clitest.NewControlPlane(t, groups...)
	e.Run("admin", "groups", "create", "Helper", "--id", "ag-helper")
	e.Run("admin", "groups", "create", "Reviewer", "--id", "ag-review")
	e.Run("admin", "channels", "create", "telegram", "chat-1", "--id", "mg-team", "--name", "Team Room", "--group-chat", "--policy", "public")
	out := e.Run("admin", "wire", "mg-team", "ag-helper", "--engage", "pattern", "--pattern", "^hey")
	if !strings.Contains(out, `destination "team-room" added`) {
		t.Fatalf("wire: %s", out)
	}
	session := routeDirect(e, `{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","sender":{"id":"42","name":"Ann"},"text":"hey there","is_group":true}`)
	if session == "" {
		t.Fatal("not routed")
	}
	if ds := destinations(t, e, session); len(ds) != 1 || ds[0].Name != "team-room" || ds[0].DisplayName != "Team Room" {
		t.Fatalf("projection %+v", ds)
	}

	// Destinations: adding one reaches the running session; renaming the
	// chat changes its display name there; wiring a second chat adds its.
	out = e.Run("admin", "destinations", "add", "ag-helper", "reviewer", "--agent", "ag-review")
	if !strings.Contains(out, "re-projected into 1 session(s)") {
		t.Fatalf("add: %s", out)
	}
	e.Run("admin", "channels", "update", "mg-team", "--name", "War Room")
	e.Run("admin", "channels", "create", "telegram", "chat-2", "--id", "mg-two", "--name", "Second")
	e.Run("admin", "wire", "mg-two", "ag-helper")
	ds := destinations(t, e, session)
	names := map[string]string{}
	for _, d := range ds {
		names[d.Name] = d.DisplayName
	}
	if len(ds) != 3 || names["team-room"] != "War Room" || names["reviewer"] != "Reviewer" || names["second"] != "Second" {
		t.Fatalf("projection after changes %+v", ds)
	}
	e.Run("admin", "destinations", "remove", "ag-helper", "reviewer", "--yes")
	if len(destinations(t, e, session)) != 2 {
		t.Fatalf("remove did not re-project: %+v", destinations(t, e, session))
	}

	// Users, roles and members.
	e.Run("admin", "users", "create", "telegram:1", "--name", "Boss")
	e.Run("admin", "roles", "grant", "telegram:1", "owner")
	if out := e.Run("admin", "roles", "grant", "telegram:1", "owner"); !strings.Contains(out, "already had owner") {
		t.Fatalf("second grant: %s", out)
	}
	e.Run("admin", "roles", "grant", "telegram:7", "admin", "--group", "ag-helper")
	e.Run("admin", "members", "add", "ag-helper", "telegram:42")
	var acc sessiondb.UserAccess
	e.JSON(&acc, "admin", "users", "show", "telegram:42")
	if !acc.Known() || !acc.IsMemberRow("ag-helper") || acc.User.DisplayName != "Ann" {
		t.Fatalf("access %+v", acc)
	}
	var shown struct {
		Approvers []string `json:"approvers"`
		Wirings   []sessiondb.Wiring
	}
	e.JSON(&shown, "admin", "groups", "show", "ag-helper")
	if strings.Join(shown.Approvers, ",") != "telegram:7,telegram:1" || len(shown.Wirings) != 2 {
		t.Fatalf("group show %+v", shown)
	}
	table := e.Run("admin", "wirings", "--group", "ag-helper")
	if !strings.Contains(table, "^hey") || !strings.Contains(table, "mention") || strings.Count(table, "\n") != 3 {
		t.Fatalf("wirings table:\n%s", table)
	}
	var sessions sessiondb.AgentSessionPage
	e.JSON(&sessions, "admin", "sessions", "list", "--group", "ag-helper")
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != session {
		t.Fatalf("sessions %+v", sessions)
	}
	if out := e.Run("admin", "sessions", "show", session); !strings.Contains(out, "folder:") || !strings.Contains(out, "1 pending") {
		t.Fatalf("session show:\n%s", out)
	}
	e.Run("admin", "sessions", "close", session, "--yes")
	next := routeDirect(e, `{"channel_type":"telegram","platform_id":"chat-1","message_id":"m2","text":"hey again","is_group":true}`)
	if next == "" || next == session {
		t.Fatalf("after close the chat got session %q (closed %s)", next, session)
	}
	e.Run("admin", "unwire", "mg-two", "ag-helper", "--yes")
	var ws []sessiondb.Wiring
	e.JSON(&ws, "admin", "wirings", "--chat", "mg-two")
	if len(ws) != 0 {
		t.Fatalf("unwire left %+v", ws)
	}
}

// Bad input is refused with the field named and the exit status of its
// code; unknown ids are not_found.
func TestAdminRefusals(t *testing.T) {
	e := clitest.NewControlPlane(t, groups...)
	clitest.Fails(t, []clitest.Failure{
		{Name: "no registry", Args: e.Args("admin", "groups", "list"), Code: cli.ExitNotFound, Want: "no central registry"},
	}, groups...)
	e.Run("admin", "groups", "create", "Helper", "--id", "ag-helper")
	e.Run("admin", "channels", "create", "telegram", "chat-1", "--id", "mg-team")
	clitest.Fails(t, []clitest.Failure{
		{Name: "hostile folder", Args: e.Args("admin", "groups", "create", "X", "--folder", "../../etc"), Code: cli.ExitInvalid, Want: "folder"},
		{Name: "hostile id", Args: e.Args("admin", "groups", "create", "X", "--id", "a/b"), Code: cli.ExitInvalid, Want: "id"},
		{Name: "id of the host's socket", Args: e.Args("admin", "groups", "create", "X", "--id", "host.sock"), Code: cli.ExitInvalid, Want: `id "host.sock" is reserved`},
		{Name: "id of the host's status", Args: e.Args("admin", "groups", "create", "X", "--id", ".sessiondb-host.json"), Code: cli.ExitInvalid, Want: `id ".sessiondb-host.json" is reserved`},
		{Name: "id of the host's lock", Args: e.Args("admin", "groups", "create", "X", "--id", ".sessiondb-host.lock"), Code: cli.ExitInvalid, Want: "reserved"},
		{Name: "taken id", Args: e.Args("admin", "groups", "create", "X", "--id", "ag-helper"), Code: cli.ExitConflict, Want: "ag-helper"},
		{Name: "owner scoped", Args: e.Args("admin", "roles", "grant", "telegram:1", "owner", "--group", "ag-helper"), Code: cli.ExitInvalid, Want: "always global"},
		{Name: "bad role", Args: e.Args("admin", "roles", "grant", "telegram:1", "king"), Code: cli.ExitInvalid, Want: "role"},
		{Name: "bad user id", Args: e.Args("admin", "users", "create", "nobody"), Code: cli.ExitInvalid, Want: "<channel>:<handle>"},
		{Name: "user in capitals", Args: e.Args("admin", "users", "create", "TELEGRAM:1"), Code: cli.ExitInvalid, Want: `"TELEGRAM:1" never matches a sender`},
		{Name: "grant in capitals", Args: e.Args("admin", "roles", "grant", "TELEGRAM:1", "owner"), Code: cli.ExitInvalid, Want: `as "telegram:1"`},
		{Name: "member in capitals", Args: e.Args("admin", "members", "add", "ag-helper", "Telegram:42"), Code: cli.ExitInvalid, Want: `as "telegram:42"`},
		{Name: "js pattern", Args: e.Args("admin", "wire", "mg-team", "ag-helper", "--engage", "pattern", "--pattern", "(?<=@)bot"), Code: cli.ExitInvalid, Want: "engage_pattern"},
		{Name: "pattern without mode", Args: e.Args("admin", "wire", "mg-team", "ag-helper", "--engage", "mention", "--pattern", "x"), Code: cli.ExitInvalid, Want: "engage_pattern"},
		{Name: "bad engage", Args: e.Args("admin", "wire", "mg-team", "ag-helper", "--engage", "always"), Code: cli.ExitInvalid, Want: "engage_mode"},
		{Name: "bad policy", Args: e.Args("admin", "channels", "create", "telegram", "x", "--policy", "open"), Code: cli.ExitInvalid, Want: "unknown_sender_policy"},
		{Name: "bad channel", Args: e.Args("admin", "channels", "create", "Tele Gram", "x"), Code: cli.ExitInvalid, Want: "channel_type"},
		{Name: "unknown group", Args: e.Args("admin", "groups", "show", "ag-nope"), Code: cli.ExitNotFound, Want: "ag-nope"},
		{Name: "unknown chat", Args: e.Args("admin", "channels", "show", "mg-nope"), Code: cli.ExitNotFound, Want: "mg-nope"},
		{Name: "wire unknown chat", Args: e.Args("admin", "wire", "mg-nope", "ag-helper"), Code: cli.ExitNotFound, Want: "mg-nope"},
		{Name: "unwire unknown", Args: e.Args("admin", "unwire", "mga-nope", "--yes"), Code: cli.ExitNotFound, Want: "mga-nope"},
		{Name: "unknown session", Args: e.Args("admin", "sessions", "show", "sess-nope"), Code: cli.ExitNotFound, Want: "sess-nope"},
		{Name: "close unknown", Args: e.Args("admin", "sessions", "close", "sess-nope", "--yes"), Code: cli.ExitNotFound, Want: "sess-nope"},
		{Name: "unknown user", Args: e.Args("admin", "users", "show", "telegram:9"), Code: cli.ExitNotFound, Want: "telegram:9"},
		{Name: "member of unknown", Args: e.Args("admin", "members", "add", "ag-nope", "telegram:1"), Code: cli.ExitNotFound, Want: "ag-nope"},
		{Name: "revoke unknown", Args: e.Args("admin", "roles", "revoke", "telegram:9", "admin", "--yes"), Code: cli.ExitNotFound, Want: "telegram:9"},
		{Name: "dest to unknown", Args: e.Args("admin", "destinations", "add", "ag-helper", "x", "--chat", "mg-nope"), Code: cli.ExitNotFound, Want: "mg-nope"},
		{Name: "dest two targets", Args: e.Args("admin", "destinations", "add", "ag-helper", "x", "--chat", "mg-team", "--agent", "ag-helper"), Code: cli.ExitInvalid, Want: "exactly one"},
		{Name: "expire unknown approval", Args: e.Args("admin", "approvals", "expire", "appr-nope", "--yes"), Code: cli.ExitNotFound, Want: "appr-nope"},
		{Name: "expire unknown question", Args: e.Args("admin", "questions", "expire", "q-nope", "--yes"), Code: cli.ExitNotFound, Want: "q-nope"},
		{Name: "prune no age", Args: e.Args("admin", "dropped", "prune"), Code: cli.ExitInvalid, Want: "--older-than"},
		{Name: "update nothing", Args: e.Args("admin", "channels", "update", "mg-team"), Code: cli.ExitInvalid, Want: "nothing to change"},
		{Name: "read-only write", Args: append(e.Args("admin", "groups", "create", "Y"), "--read-only"), Code: cli.ExitInvalid, Want: "--read-only"},
	}, groups...)
	var users []sessiondb.User
	e.JSON(&users, "admin", "users", "list")
	if len(users) != 0 {
		t.Errorf("the refused commands created users: %+v", users)
	}
}

// Removing things asks first on a terminal; anything but yes changes
// nothing. Stored text reaches a terminal escaped.
func TestAdminAsksAndEscapes(t *testing.T) {
	e := clitest.NewControlPlane(t, groups...)
	e.WireHelper([]string{"--group-chat", "--policy", "public"}, "--engage", "pattern")
	session := routeDirect(e, `{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","text":"hi","is_group":true}`)

	tty, keyboard := testkit.Terminal(t)
	if _, err := keyboard.WriteString("n\n"); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(context.Background(), clitest.Options{Stdin: tty}, e.Args("admin", "sessions", "close", session), groups...)
	if r.Code != cli.ExitCancelled || !strings.Contains(r.Stderr, "not confirmed") || !strings.Contains(r.Stderr, "Close session "+session+"?") {
		t.Fatalf("declined: exit %d %s", r.Code, r.Stderr)
	}
	var s sessiondb.AgentSession
	var shown struct{ Session sessiondb.AgentSession }
	e.JSON(&shown, "admin", "sessions", "show", session)
	s = shown.Session
	if s.Status != sessiondb.SessionActive {
		t.Fatalf("declined close changed the session: %+v", s)
	}
	if _, err := keyboard.WriteString("yes\n"); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(context.Background(), clitest.Options{Stdin: tty}, e.Args("admin", "sessions", "close", session), groups...)
	if r.Code != 0 {
		t.Fatalf("confirmed: exit %d %s", r.Code, r.Stderr)
	}
	e.JSON(&shown, "admin", "sessions", "show", session)
	if shown.Session.Status != sessiondb.SessionClosed {
		t.Fatalf("not closed: %+v", shown.Session)
	}

	// A chat name written by another program with a terminal escape.
	sqlitetest.ExecFile(t, e.Central, "UPDATE messaging_groups SET name = ? WHERE id = 'mg-team'", "evil\x1b]0;PWNED\x07\x1b[2J")
	out := e.Run("admin", "channels", "list")
	if strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `evil\x1b]0;PWNED\x07\x1b[2J`) {
		t.Fatalf("table not escaped: %q", out)
	}
	var ms []sessiondb.MessagingGroup
	e.JSON(&ms, "admin", "channels", "list")
	if len(ms) != 1 || ms[0].Name != "evil\x1b]0;PWNED\x07\x1b[2J" {
		t.Fatalf("--json must stay exact: %+v", ms)
	}
}

// Unknown senders wait on an approval the admin can list; the dropped
// audit counts one drop per event and can be pruned.
func TestAdminApprovalsAndDropped(t *testing.T) {
	e := clitest.NewControlPlane(t, groups...)
	e.WireHelper([]string{"--group-chat", "--policy", "request_approval"}, "--engage", "pattern")
	e.Run("admin", "roles", "grant", "telegram:1", "owner")
	ev := `{"channel_type":"telegram","platform_id":"chat-1","message_id":"m1","sender":{"id":"5","name":"Eve"},"text":"let me in","is_group":true}`
	routeDirect(e, ev, "--deliver", "exec:cat >/dev/null")
	var pending struct {
		Senders []sessiondb.PendingSenderApproval `json:"senders"`
		Actions []sessiondb.PendingApproval       `json:"actions"`
	}
	e.JSON(&pending, "admin", "approvals", "list")
	if len(pending.Senders) != 1 || pending.Senders[0].SenderIdentity != "telegram:5" || pending.Senders[0].ApproverUserID != "telegram:1" || len(pending.Actions) != 0 {
		t.Fatalf("pending %+v", pending)
	}
	table := e.Run("admin", "approvals", "list")
	if !strings.Contains(table, "sender") || !strings.Contains(table, pending.Senders[0].ID) {
		t.Fatalf("approvals table:\n%s", table)
	}
	var dropped []sessiondb.DroppedSender
	e.JSON(&dropped, "admin", "dropped", "list")
	if len(dropped) != 1 || dropped[0].MessageCount != 1 || dropped[0].Reason != sessiondb.DropUnknownSenderRequestApprove {
		t.Fatalf("dropped %+v", dropped)
	}
	var pruned struct{ Pruned int }
	e.JSON(&pruned, "admin", "dropped", "prune", "--older-than", "1h", "--yes")
	if pruned.Pruned != 0 {
		t.Fatalf("pruned a fresh row: %+v", pruned)
	}
}

// An empty list says so instead of printing a header over no rows; --json
// stays an empty list.
func TestAdminEmptyLists(t *testing.T) {
	e := clitest.NewControlPlane(t, groups...)
	e.Run("admin", "groups", "create", "Helper", "--id", "ag-helper")
	for _, args := range [][]string{{"admin", "users", "list"}, {"admin", "roles", "list"}, {"admin", "members", "list", "ag-helper"},
		{"admin", "approvals", "list"}, {"admin", "sessions", "list"}, {"admin", "dropped", "list"}} {
		r := clitest.Must(t, e.Args(args...), groups...)
		if r.Stdout != "" || r.Stderr != cli.NothingToList+"\n" {
			t.Errorf("%v: stdout %q, stderr %q; want %q on stderr alone", args, r.Stdout, r.Stderr, cli.NothingToList)
		}
	}
	var users []sessiondb.User
	e.JSON(&users, "admin", "users", "list")
	if users == nil || len(users) != 0 {
		t.Errorf("users list --json: %v, want []", users)
	}
}
