package uitest

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// hostileSender is a dropped sender's name crafted to break out of the
// registry page.
const hostileSender = `<img src=x onerror=pwned=30>Mallory</td></tr><script>pwned=31</script>`

// hostileMember is a user's display name crafted to break out of the
// registry page's users, roles and members.
const hostileMember = `<svg onload=pwned=32>Eve</code></td></tr><script>pwned=33</script>`

// newRegistry builds a central registry with two groups, two chats, their
// wirings (which add the chats as destinations), a session, a pending
// approval and question, a dropped sender, an owner, a member (whose name
// is hostileMember) who administers the main group, and a destination to
// the other group.
func newRegistry(t testing.TB) *sqlite.Central {
	t.Helper()
	reg, err := sqlite.OpenCentral(ctxb, filepath.Join(t.TempDir(), "v2.db"), sqlite.CentralOptions{})
	reg = testkit.Opened(t, reg, err)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag-main", Name: "Main assistant", Folder: "main"})
	must(err)
	ops, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg-ops", ChannelType: "slack", PlatformID: "C042", Name: "#ops", IsGroup: true})
	must(err)
	dm, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg-dana", ChannelType: "telegram", PlatformID: "1001", Name: "Dana"})
	must(err)
	_, err = reg.CreateWiring(ctxb, sessiondb.NewWiring{MessagingGroupID: ops.ID, AgentGroupID: "ag-main", EngageMode: sessiondb.EngageMention, SessionMode: sessiondb.ModePerThread})
	must(err)
	_, err = reg.CreateWiring(ctxb, sessiondb.NewWiring{MessagingGroupID: dm.ID, AgentGroupID: "ag-main", EngageMode: sessiondb.EngagePattern, EngagePattern: "^(deploy|status)\\b"})
	must(err)
	sess, _, err := reg.ResolveSession(ctxb, sessiondb.SessionLookup{AgentGroupID: "ag-main", MessagingGroupID: ops.ID, ThreadID: "1712.0042", Mode: sessiondb.ModePerThread})
	must(err)
	_, err = reg.AddApproval(ctxb, sessiondb.NewApproval{ApprovalID: "appr-1", SessionID: sess.ID, RequestID: "req-1", Action: "install_packages",
		Payload: json.RawMessage(`{"packages":["jq"]}`), AgentGroupID: "ag-main", Title: "Install jq in the container?",
		ExpiresAt: time.Now().Add(time.Hour), Options: []sessiondb.QuestionOption{{Label: "Approve", Value: "approve"}, {Label: "Reject", Value: "reject"}}})
	must(err)
	_, err = reg.AddQuestion(ctxb, sessiondb.NewQuestion{QuestionID: "q-1", SessionID: sess.ID, MessageOutID: "out-q1", ChannelType: "slack", PlatformID: "C042",
		Title: "Roll back the 14:02 deploy?", Options: []sessiondb.QuestionOption{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}})
	must(err)
	must(reg.RecordDroppedMessage(ctxb, sessiondb.DroppedMessage{ChannelType: "telegram", PlatformID: "666", UserID: "tg:666",
		SenderName: hostileSender, Reason: sessiondb.DropUnknownSenderStrict}))
	_, err = reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag-review", Name: "Code reviewer", Folder: "review"})
	must(err)
	_, _, err = reg.EnsureUser(ctxb, sessiondb.NewUser{ID: "telegram:1001", DisplayName: "Dana"})
	must(err)
	_, _, err = reg.EnsureUser(ctxb, sessiondb.NewUser{ID: "slack:U042", DisplayName: hostileMember})
	must(err)
	_, err = reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: "telegram:1001", Role: sessiondb.RoleOwner})
	must(err)
	_, err = reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: "slack:U042", Role: sessiondb.RoleAdmin, AgentGroupID: "ag-main", GrantedBy: "telegram:1001"})
	must(err)
	_, err = reg.AddMember(ctxb, "slack:U042", "ag-main", "telegram:1001")
	must(err)
	_, err = reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag-main", LocalName: "reviewer", TargetType: sessiondb.TargetAgent, TargetID: "ag-review"})
	must(err)
	return reg
}

// newSubagents builds janebot's subagent store with an idle subagent and
// one whose last run failed with a hostile error.
func newSubagents(t testing.TB) *sqlite.Subagents {
	t.Helper()
	st, err := sqlite.OpenSubagents(ctxb, filepath.Join(t.TempDir(), "state.sqlite"), sqlite.SubagentOptions{})
	st = testkit.Opened(t, st, err)
	now := time.Now().UnixMilli()
	for _, x := range []sessiondb.Subagent{
		{ID: "sa-1", Key: "C042:1712.0042", ChannelID: "C042", ThreadTS: "1712.0042", SandboxName: "sbx-1", PISessionFile: "/sessions/sa-1.jsonl", Status: sessiondb.SubagentIdle, Turns: 7, CreatedAt: now - 3600e3, UpdatedAt: now - 60e3},
		{ID: "sa-2", Key: "C042:1712.0099", ChannelID: "C042", ThreadTS: "1712.0099", SandboxName: "sbx-2", PISessionFile: "/sessions/sa-2.jsonl", Status: sessiondb.SubagentError, Turns: 2,
			LastError: `<script>pwned=40</script>exit status 137`, CreatedAt: now - 7200e3, UpdatedAt: now - 30e3},
	} {
		if err := st.UpsertSubagent(ctxb, x); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestBrowserSubagents opens the subagents page and its status tabs.
func TestBrowserSubagents(t *testing.T) {
	_, p := visit(t, siteOptions{subagents: true}, "/subagents")
	p.shot("subagents")
	rows := eval[[]string](p, `Array.from(document.querySelectorAll("#subagents tbody tr"), r => r.dataset.subagent + " " + r.className)`)
	if !slices.Equal(rows, []string{"sa-2 bad", "sa-1 "}) {
		t.Errorf("subagents %q", rows)
	}
	if e := p.text(`#subagents tr[data-subagent="sa-2"] .error`); e != `<script>pwned=40</script>exit status 137` {
		t.Errorf("error shows %q", e)
	}
	p.do(chromedp.Click(chromedp.Search(`//nav[@class="tabs"]/a[text()="idle"]`)))
	p.waitFor(`location.search === "?status=idle"`)
	if rows := eval[[]string](p, `Array.from(document.querySelectorAll("#subagents tbody tr"), r => r.dataset.subagent)`); !slices.Equal(rows, []string{"sa-1"}) {
		t.Errorf("idle tab %q", rows)
	}
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a payload ran (window.pwned is %s)", ran)
	}
}

// TestBrowserRegistry opens the registry page and reads each section.
func TestBrowserRegistry(t *testing.T) {
	_, p := visit(t, siteOptions{registry: true}, "/registry")
	p.shot("registry")
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a payload ran (window.pwned is %s)", ran)
	}
	wirings := p.texts("#wirings-table tbody td.title")
	if !slices.Equal(wirings, []string{"#ops → ag-main", "Dana → ag-main"}) && !slices.Equal(wirings, []string{"Dana → ag-main", "#ops → ag-main"}) {
		t.Errorf("wirings %q", wirings)
	}
	sessions := p.texts("#registry-sessions tbody td.title")
	if len(sessions) != 1 || !strings.HasPrefix(sessions[0], "ag-main / ") || !strings.Contains(sessions[0], "thread 1712.0042") {
		t.Errorf("sessions %q", sessions)
	}
	body := p.text("main")
	for _, want := range []string{"Install jq in the container?", "Roll back the 14:02 deploy?", `^(deploy|status)\b`} {
		if !strings.Contains(body, want) {
			t.Errorf("registry page lacks %q", want)
		}
	}
	dropped := eval[string](p, `document.querySelector("#dropped-table tbody td.title").firstChild.textContent`)
	if dropped != hostileSender {
		t.Errorf("dropped sender shows %q", dropped)
	}
}

// TestBrowserRegistryAccess reads the registry page's users, roles,
// members and destinations, added with the store, and finds the hostile
// member's name shown as text.
func TestBrowserRegistryAccess(t *testing.T) {
	_, p := visit(t, siteOptions{registry: true}, "/registry#users")
	rows := func(table string) [][]string {
		return eval[[][]string](p, `Array.from(document.querySelectorAll("#`+table+` tbody tr"), r => Array.from(r.cells, c => c.innerText.replace(/\s+/g, " ").trim()))`)
	}
	for _, c := range []struct {
		table string
		want  [][]string // each row's cells but the last (a time), sorted by the first
	}{
		{"users-table", [][]string{{hostileMember + " slack:U042", "slack"}, {"Dana telegram:1001", "telegram"}}},
		{"roles-table", [][]string{{hostileMember + " slack:U042", "admin", "agent group Main assistant ag-main", "telegram:1001"}, {"Dana telegram:1001", "owner", "global", "-"}}},
		{"members-table", [][]string{{hostileMember + " slack:U042", "Main assistant ag-main", "telegram:1001"}}},
		{"destinations-table", [][]string{
			{"Main assistant ag-main → dana", "channel", "Dana (telegram) mg-dana"},
			{"Main assistant ag-main → ops", "channel", "#ops (slack) mg-ops"},
			{"Main assistant ag-main → reviewer", "agent", "Code reviewer ag-review"},
		}},
	} {
		got := rows(c.table)
		// Sorted, so that rows stored in the same instant compare in any
		// order.
		slices.SortFunc(got, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		if len(got) != len(c.want) {
			t.Errorf("%s: rows %q, want %d", c.table, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !slices.Equal(got[i][:len(w)], w) {
				t.Errorf("%s row %d: %q, want %q", c.table, i, got[i], w)
			}
		}
	}
	if ran := eval[string](p, `typeof window.pwned`); ran != "undefined" {
		t.Errorf("a payload ran (window.pwned is %s)", ran)
	}
	if n := eval[int](p, `document.querySelectorAll("main svg, main td script").length`); n != 0 {
		t.Errorf("the hostile name made %d elements", n)
	}
}
