package http_test

import (
	"fmt"
	"html"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/pgtest"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestMain stops the PostgreSQL cluster pgtest may start for the registry
// tests.
func TestMain(m *testing.M) { pgtest.Main(m) }

// registryBackends runs fn with an empty registry of each backend, a
// SQLite file and a PostgreSQL schema of the test's own, and raw, which
// runs a statement on it as another program would.
func registryBackends(t *testing.T, fn func(t *testing.T, f *fixture, reg sessiondb.Registry, raw func(stmt string))) {
	t.Run("sqlite", func(t *testing.T) {
		f := newFixture(t, sdbhttp.Config{})
		path := filepath.Join(t.TempDir(), "v2.db")
		reg, err := sqlite.OpenCentral(ctxb, path, sqlite.CentralOptions{Now: f.clock.Now})
		fn(t, f, testkit.Opened(t, reg, err), func(stmt string) { sqlitetest.ExecFile(t, path, stmt) })
	})
	t.Run("postgres", func(t *testing.T) {
		f := newFixture(t, sdbhttp.Config{})
		url := pgtest.URL(t)
		schema := pgtest.Schema(t, url)
		reg, err := postgres.OpenCentral(ctxb, url, postgres.Options{Schema: schema, Now: f.clock.Now})
		fn(t, f, testkit.Opened(t, reg, err), func(stmt string) { pgtest.Exec(t, pgtest.WithSearchPath(url, schema), stmt) })
	})
}

// hostileName is a user's display name crafted to break out of the
// registry page.
const hostileName = `<img src=x onerror=alert(1)>Ann</td></tr><script>alert(2)</script>`

// fillAccess gives reg two agent groups, a chat, an owner and a member
// (whose name is hostileName) who administers ag1, and two destinations of
// ag1: the chat and the other group.
func fillAccess(t *testing.T, reg sessiondb.Registry) sessiondb.Registry {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag1", Name: "Helper", Folder: "helper"})
	must(err)
	_, err = reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag2", Name: "Reviewer", Folder: "reviewer"})
	must(err)
	_, err = reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg1", ChannelType: "telegram", PlatformID: "chat-1", Name: "Family"})
	must(err)
	_, _, err = reg.EnsureUser(ctxb, sessiondb.NewUser{ID: "telegram:1", DisplayName: "Olga"})
	must(err)
	_, _, err = reg.EnsureUser(ctxb, sessiondb.NewUser{ID: "telegram:42", DisplayName: hostileName})
	must(err)
	_, err = reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: "telegram:1", Role: sessiondb.RoleOwner})
	must(err)
	_, err = reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: "telegram:42", Role: sessiondb.RoleAdmin, AgentGroupID: "ag1", GrantedBy: "telegram:1"})
	must(err)
	_, err = reg.AddMember(ctxb, "telegram:42", "ag1", "telegram:1")
	must(err)
	_, err = reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag1", LocalName: "family", TargetType: sessiondb.TargetChannel, TargetID: "mg1"})
	must(err)
	_, err = reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag1", LocalName: "reviewer", TargetType: sessiondb.TargetAgent, TargetID: "ag2"})
	must(err)
	return reg
}

// The API lists users, role grants, and a group's members and destinations
// as `sessiondb admin` manages them, and names a bad filter or an unknown
// group.
func TestRegistryAccessAPI(t *testing.T) { registryBackends(t, testRegistryAccessAPI) }

func testRegistryAccessAPI(t *testing.T, f *fixture, reg sessiondb.Registry, raw func(string)) {
	f.serve(sdbhttp.Config{Registry: fillAccess(t, reg)})
	type row = map[string]string
	for _, c := range []struct {
		path, key string
		want      []row // fields of each row, in order
	}{
		{"/api/v1/registry/users", "users", []row{{"id": "telegram:1", "display_name": "Olga", "kind": "telegram"}, {"id": "telegram:42", "display_name": hostileName, "kind": "telegram"}}},
		{"/api/v1/registry/roles", "roles", []row{{"user_id": "telegram:1", "role": "owner"}, {"user_id": "telegram:42", "role": "admin", "agent_group_id": "ag1", "granted_by": "telegram:1"}}},
		{"/api/v1/registry/roles?role=admin", "roles", []row{{"user_id": "telegram:42"}}},
		{"/api/v1/registry/roles?global=true", "roles", []row{{"user_id": "telegram:1"}}},
		{"/api/v1/registry/roles?agent_group=ag1", "roles", []row{{"user_id": "telegram:42"}}},
		{"/api/v1/registry/roles?user=telegram:9", "roles", nil},
		{"/api/v1/registry/agent-groups/ag1/members", "members", []row{{"user_id": "telegram:42", "agent_group_id": "ag1", "added_by": "telegram:1"}}},
		{"/api/v1/registry/agent-groups/ag2/members", "members", nil},
		{"/api/v1/registry/agent-groups/ag1/destinations", "destinations", []row{{"local_name": "family", "target_type": "channel", "target_id": "mg1"}, {"local_name": "reviewer", "target_type": "agent", "target_id": "ag2"}}},
		{"/api/v1/registry/agent-groups/ag2/destinations", "destinations", nil},
	} {
		rows, _ := f.listing(c.path, c.key)
		if len(rows) != len(c.want) {
			t.Errorf("%s: %d rows %v, want %d", c.path, len(rows), rows, len(c.want))
			continue
		}
		for i, want := range c.want {
			for k, v := range want {
				if got := fmt.Sprint(rows[i][k]); got != v {
					t.Errorf("%s: row %d %s = %q, want %q", c.path, i, k, got, v)
				}
			}
		}
	}
	// A destination carries its target's row, so a reader names it.
	dests, _ := f.listing("/api/v1/registry/agent-groups/ag1/destinations", "destinations")
	if chat, _ := dests[0]["chat"].(map[string]any); chat["name"] != "Family" {
		t.Errorf("family's chat is %v", dests[0]["chat"])
	}
	if agent, _ := dests[1]["agent"].(map[string]any); agent["name"] != "Reviewer" {
		t.Errorf("reviewer's agent is %v", dests[1]["agent"])
	}

	// A destination whose target another program deleted has neither.
	if _, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag3", Name: "Retired", Folder: "retired"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag1", LocalName: "retired", TargetType: sessiondb.TargetAgent, TargetID: "ag3"}); err != nil {
		t.Fatal(err)
	}
	raw("DELETE FROM agent_groups WHERE id = 'ag3'")
	dests, _ = f.listing("/api/v1/registry/agent-groups/ag1/destinations", "destinations")
	if len(dests) != 3 || dests[1]["local_name"] != "retired" || dests[1]["chat"] != nil || dests[1]["agent"] != nil {
		t.Errorf("with ag3 gone, destinations are %v", dests)
	}

	for path, field := range map[string]string{
		"/api/v1/registry/roles?role=boss":                   "parameter role",
		"/api/v1/registry/roles?global=maybe":                "parameter global",
		"/api/v1/registry/roles?global=true&agent_group=ag1": "parameter global",
	} {
		if msg := f.get(path).apiError(t, 400, "invalid"); !strings.Contains(msg, field) {
			t.Errorf("%s: error %q does not name %s", path, msg, field)
		}
	}
	for _, path := range []string{"/api/v1/registry/agent-groups/nope/members", "/api/v1/registry/agent-groups/nope/destinations"} {
		if msg := f.get(path).apiError(t, 404, "not_found"); !strings.Contains(msg, `"nope"`) {
			t.Errorf("%s: error %q does not name the group", path, msg)
		}
	}

	// A server without a registry has no such routes.
	f.serve(sdbhttp.Config{})
	f.get("/api/v1/registry/users").apiError(t, 404, "not_found")
	f.get("/api/v1/registry/agent-groups/ag1/members").apiError(t, 404, "not_found")
}

// The registry page shows the users, roles, members and destinations, with
// stored text escaped; a destination whose target another program deleted
// is shown as gone.
func TestRegistryPageShowsAccess(t *testing.T) { registryBackends(t, testRegistryPageShowsAccess) }

func testRegistryPageShowsAccess(t *testing.T, f *fixture, reg sessiondb.Registry, raw func(string)) {
	fillAccess(t, reg)
	if _, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag3", Name: "Retired", Folder: "retired"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.AddDestination(ctxb, sessiondb.NewDestination{AgentGroupID: "ag1", LocalName: "retired", TargetType: sessiondb.TargetAgent, TargetID: "ag3"}); err != nil {
		t.Fatal(err)
	}
	raw("DELETE FROM agent_groups WHERE id = 'ag3'")
	f.serve(sdbhttp.Config{Registry: reg})
	body := f.page("/registry", http.StatusOK)
	for _, bad := range []string{"<script>alert", "<img"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	section := func(id string) string { return pageSection(t, body, id) }
	esc := html.EscapeString(hostileName)
	for id, wants := range map[string][]string{
		"users":   {"Olga", "<code>telegram:1</code>", esc, "<code>telegram:42</code>"},
		"roles":   {"Olga", "owner", "global", esc, "admin", "agent group Helper <code>ag1</code>"},
		"members": {esc, "<code>telegram:42</code>", "Helper <code>ag1</code>", "<code>telegram:1</code>"},
		"destinations": {"Helper <code>ag1</code> → <code>family</code>", "channel", "Family (telegram)", "<code>reviewer</code>", "agent", "Reviewer",
			`<code>retired</code></td><td data-label="target kind">agent</td><td data-label="target" class="state-bad">gone<span class="sub"><code>ag3</code>`},
	} {
		s := section(id)
		for _, want := range wants {
			if !strings.Contains(s, want) {
				t.Errorf("section %s lacks %q:\n%s", id, want, s)
			}
		}
	}
	if strings.Contains(section("members"), "Olga") {
		t.Errorf("Olga, who is no member, is listed as one")
	}
}

// Empty sections say so; a long list shows registryPage rows and counts the
// rest.
func TestRegistryPageAccessEmptyAndBounded(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	reg := f.registry()
	f.serve(sdbhttp.Config{Registry: reg})
	body := f.page("/registry", http.StatusOK)
	for _, want := range []string{"No users.", "No roles granted.", "No agent group has members.", "No agent group has destinations."} {
		if !strings.Contains(body, want) {
			t.Errorf("the empty page lacks %q", want)
		}
	}

	if _, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag1", Name: "Helper", Folder: "helper"}); err != nil {
		t.Fatal(err)
	}
	for i := range 103 {
		id := fmt.Sprintf("telegram:%03d", i)
		if _, _, err := reg.EnsureUser(ctxb, sessiondb.NewUser{ID: id, DisplayName: fmt.Sprintf("user%03d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.AddMember(ctxb, id, "ag1", ""); err != nil {
			t.Fatal(err)
		}
	}
	body = f.page("/registry", http.StatusOK)
	for _, tab := range []string{`href="#users">users (103)`, `href="#members">members (103)`} {
		if !strings.Contains(body, tab) {
			t.Errorf("no tab %s", tab)
		}
	}
	for _, name := range []string{"users", "members"} {
		s := pageSection(t, body, name)
		if n := strings.Count(s, "<tr><td"); n != 100 {
			t.Errorf("%s: %d rows, want 100", name, n)
		}
		if !strings.Contains(s, "3 more not shown") {
			t.Errorf("%s does not count the 3 left out", name)
		}
		if !strings.Contains(s, "user099") || strings.Contains(s, "user100") {
			t.Errorf("%s does not show the first 100", name)
		}
	}
}

// pageSection is the part of a page's body from the heading with id to the
// next heading.
func pageSection(t *testing.T, body, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `id="`+id+`"`)
	if !ok {
		t.Fatalf("no section %s", id)
	}
	rest, _, _ = strings.Cut(rest, "<h2")
	return rest
}
