package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func testUsers(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	at := e.at()
	u, created, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: "tg:123"})
	if err != nil || !created || u.Kind != "tg" || u.DisplayName != "" {
		t.Fatalf("EnsureUser = %+v, %v, %v; want created with kind tg", u, created, err)
	}
	sameTime(t, "created_at", u.CreatedAt, at)
	e.tick()
	u2, created, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: "tg:123", Kind: "telegram", DisplayName: "Ann"})
	if err != nil || created || u2.Kind != "tg" || u2.DisplayName != "Ann" || !u2.CreatedAt.Equal(u.CreatedAt) {
		t.Errorf("second EnsureUser = %+v, %v, %v; want the row kept and the missing name filled", u2, created, err)
	}
	u3, _, _ := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: "tg:123", DisplayName: "Someone Else"})
	if u3.DisplayName != "Ann" {
		t.Errorf("a known display name was replaced by %q", u3.DisplayName)
	}
	teams, _, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: "29:1xyz", Kind: "teams"})
	if err != nil || teams.Kind != "teams" {
		t.Errorf("teams user = %+v, %v", teams, err)
	}
	for _, bad := range []string{"", "123", "tg:", ":123", "tg:1\x00"} {
		_, _, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: bad})
		wantCode(t, "user id "+bad, err, sessiondb.EINVALID)
	}
	_, err = e.r.GetUser(e.ctx, "tg:404")
	wantCode(t, "get missing", err, sessiondb.ENOTFOUND)
	list, err := e.r.ListUsers(e.ctx)
	noErr(t, "list", err)
	if got := pluck(list, func(u sessiondb.User) string { return u.ID }); strings.Join(got, ",") != "29:1xyz,tg:123" {
		t.Errorf("ListUsers = %q", got)
	}
}

func testRoles(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.user("tg:owner", "O")
	e.user("tg:admin", "A")
	e.user("tg:scoped", "S")

	granted, err := e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:owner", Role: sessiondb.RoleOwner})
	if err != nil || !granted {
		t.Fatalf("grant owner = %v, %v", granted, err)
	}
	e.tick()
	for i := 0; i < 3; i++ {
		granted, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:owner", Role: sessiondb.RoleOwner, GrantedBy: "tg:admin"})
		if err != nil || granted {
			t.Errorf("repeated global grant = %v, %v; want idempotent", granted, err)
		}
	}
	e.grant("tg:admin", sessiondb.RoleAdmin, "")
	e.grant("tg:scoped", sessiondb.RoleAdmin, "ag")
	if granted, err := e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:scoped", Role: sessiondb.RoleAdmin, AgentGroupID: "ag"}); err != nil || granted {
		t.Errorf("repeated scoped grant = %v, %v; want idempotent", granted, err)
	}
	owners, err := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{Role: sessiondb.RoleOwner})
	if err != nil || len(owners) != 1 || owners[0].GrantedBy != "" {
		t.Errorf("owners = %+v, %v; want exactly one grant, the first", owners, err)
	}

	_, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:owner", Role: sessiondb.RoleOwner, AgentGroupID: "ag"})
	wantCode(t, "owner scoped to a group", err, sessiondb.EINVALID)
	_, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:nobody", Role: sessiondb.RoleAdmin})
	wantCode(t, "unknown user", err, sessiondb.ENOTFOUND)
	_, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:admin", Role: sessiondb.RoleAdmin, AgentGroupID: "ag-missing"})
	wantCode(t, "unknown group", err, sessiondb.ENOTFOUND)
	_, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:admin", Role: sessiondb.RoleAdmin, AgentGroupID: "ag", GrantedBy: "tg:ghost"})
	wantCode(t, "unknown granter", err, sessiondb.ENOTFOUND)
	_, err = e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: "tg:admin", Role: "superuser"})
	wantCode(t, "unknown role", err, sessiondb.EINVALID)

	all, err := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{})
	noErr(t, "list all", err)
	if got := pluck(all, func(g sessiondb.RoleGrant) string { return g.UserID }); strings.Join(got, ",") != "tg:owner,tg:admin,tg:scoped" {
		t.Errorf("roles by granted_at = %q", got)
	}
	global, _ := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{GlobalOnly: true})
	scoped, _ := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{AgentGroupID: "ag"})
	if len(global) != 2 || len(scoped) != 1 || scoped[0].UserID != "tg:scoped" || !global[0].Global() {
		t.Errorf("global = %+v, scoped = %+v", global, scoped)
	}
	if got := sessiondb.Approvers(all, "ag"); strings.Join(got, ",") != "tg:scoped,tg:admin,tg:owner" {
		t.Errorf("Approvers over the registry's grants = %q", got)
	}

	revoked, err := e.r.RevokeRole(e.ctx, "tg:scoped", sessiondb.RoleAdmin, "ag")
	if err != nil || !revoked {
		t.Errorf("revoke scoped = %v, %v", revoked, err)
	}
	revoked, err = e.r.RevokeRole(e.ctx, "tg:admin", sessiondb.RoleAdmin, "ag")
	if err != nil || revoked {
		t.Errorf("revoking a scoped grant the user lacks = %v, %v (the global one must stay)", revoked, err)
	}
	revoked, err = e.r.RevokeRole(e.ctx, "tg:admin", sessiondb.RoleAdmin, "")
	if err != nil || !revoked {
		t.Errorf("revoke global = %v, %v", revoked, err)
	}
	left, _ := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{})
	if len(left) != 1 || left[0].UserID != "tg:owner" {
		t.Errorf("roles left = %+v", left)
	}
}

func testMembers(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.user("tg:1", "One")
	e.user("tg:2", "Two")
	added, err := e.r.AddMember(e.ctx, "tg:2", "ag", "tg:1")
	if err != nil || !added {
		t.Fatalf("AddMember = %v, %v", added, err)
	}
	e.tick()
	added, err = e.r.AddMember(e.ctx, "tg:2", "ag", "")
	if err != nil || added {
		t.Errorf("second AddMember = %v, %v; want idempotent", added, err)
	}
	added, _ = e.r.AddMember(e.ctx, "tg:1", "ag", "")
	if !added {
		t.Errorf("AddMember tg:1 added nothing")
	}
	ms, err := e.r.ListMembers(e.ctx, "ag")
	noErr(t, "list", err)
	if len(ms) != 2 || ms[0].UserID != "tg:2" || ms[0].AddedBy != "tg:1" || ms[1].AddedBy != "" {
		t.Errorf("members = %+v; want tg:2 (added by tg:1) then tg:1", ms)
	}
	_, err = e.r.AddMember(e.ctx, "tg:404", "ag", "")
	wantCode(t, "unknown user", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddMember(e.ctx, "tg:1", "ag-missing", "")
	wantCode(t, "unknown group", err, sessiondb.ENOTFOUND)
	_, err = e.r.AddMember(e.ctx, "1", "ag", "")
	wantCode(t, "raw user id", err, sessiondb.EINVALID)
	removed, err := e.r.RemoveMember(e.ctx, "tg:2", "ag")
	if err != nil || !removed {
		t.Errorf("RemoveMember = %v, %v", removed, err)
	}
	removed, _ = e.r.RemoveMember(e.ctx, "tg:2", "ag")
	if removed {
		t.Errorf("second RemoveMember removed something")
	}
}

// testAccess runs CanAccessAgentGroup and the gates over what the registry
// returns, for each reason of spec A5.
func testAccess(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag", "Agent")
	e.group("other", "Other")
	for _, u := range []string{"tg:owner", "tg:gadmin", "tg:sadmin", "tg:member", "tg:stranger", "tg:elsewhere"} {
		e.user(u, "")
	}
	e.grant("tg:owner", sessiondb.RoleOwner, "")
	e.grant("tg:gadmin", sessiondb.RoleAdmin, "")
	e.grant("tg:sadmin", sessiondb.RoleAdmin, "ag")
	e.r.AddMember(e.ctx, "tg:member", "ag", "")
	e.r.AddMember(e.ctx, "tg:elsewhere", "other", "")
	cases := []struct {
		user  string
		allow bool
		why   sessiondb.AccessReason
		admin bool
	}{
		{"tg:owner", true, sessiondb.AccessOwner, true},
		{"tg:gadmin", true, sessiondb.AccessGlobalAdmin, true},
		{"tg:sadmin", true, sessiondb.AccessAdminOfGroup, true},
		{"tg:member", true, sessiondb.AccessMember, false},
		{"tg:stranger", false, sessiondb.AccessNotMember, false},
		{"tg:elsewhere", false, sessiondb.AccessNotMember, false},
		{"tg:unknown", false, sessiondb.AccessUnknownUser, false},
	}
	for _, c := range cases {
		u, err := e.r.UserAccess(e.ctx, c.user)
		noErr(t, "UserAccess "+c.user, err)
		if u.UserID != c.user {
			t.Errorf("UserAccess(%s).UserID = %q", c.user, u.UserID)
		}
		d := sessiondb.CanAccessAgentGroup(u, "ag")
		if d.Allowed != c.allow || d.Reason != c.why {
			t.Errorf("%s: %+v, want allowed=%v reason=%s", c.user, d, c.allow, c.why)
		}
		if got := sessiondb.HasAdminPrivilege(u, "ag"); got != c.admin {
			t.Errorf("%s: HasAdminPrivilege = %v", c.user, got)
		}
		g := sessiondb.AccessGate(sessiondb.PolicyStrict, u, "ag")
		if g.Allowed != c.allow || (!c.allow && g.Drop != sessiondb.DropUnknownSenderStrict) {
			t.Errorf("%s: strict gate %+v", c.user, g)
		}
	}
}

// fakeDMs is a chat adapter set for EnsureUserDM: which channels run, which
// need OpenDM, and how often it was asked.
type fakeDMs struct {
	mu       sync.Mutex
	channels map[string]bool // channel → needs OpenDM
	calls    []string
	fail     bool
}

func (f *fakeDMs) HasChannel(ch string) bool { _, ok := f.channels[ch]; return ok }

func (f *fakeDMs) OpenDM(ctx context.Context, ch, handle string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, ch+"/"+handle)
	if f.fail {
		return "", errors.New("platform down")
	}
	if f.channels[ch] {
		return "dm-" + handle, nil
	}
	return handle, nil
}

// testUserDMs holds spec A6 over the registry's storage part.
func testUserDMs(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.user("tg:42", "Ann")
	e.user("discord:7", "Bob")
	_, _, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: "29:abc", Kind: "teams", DisplayName: "Cy"})
	noErr(t, "teams user", err)
	dms := &fakeDMs{channels: map[string]bool{"tg": false, "discord": true, "teams": true}}

	mg, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "tg:42")
	if err != nil || mg == nil || mg.ChannelType != "tg" || mg.PlatformID != "42" || mg.IsGroup || mg.Name != "Ann" || mg.UnknownSenderPolicy != sessiondb.PolicyStrict {
		t.Fatalf("Telegram DM = %+v, %v; want the handle as platform id, not a group, strict, named Ann", mg, err)
	}
	cached, err := e.r.GetUserDM(e.ctx, "tg:42", "tg")
	if err != nil || cached.MessagingGroupID != mg.ID {
		t.Errorf("cache = %+v, %v", cached, err)
	}
	sameTime(t, "resolved_at", cached.ResolvedAt, e.at())

	d, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "discord:7")
	if err != nil || d == nil || d.PlatformID != "dm-7" {
		t.Errorf("Discord DM = %+v, %v; want OpenDM's answer", d, err)
	}
	calls := len(dms.calls)
	again, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "discord:7")
	if err != nil || again == nil || again.ID != d.ID || len(dms.calls) != calls {
		t.Errorf("cached DM = %+v, %v; OpenDM calls %d → %d (a hit must not ask the platform)", again, err, calls, len(dms.calls))
	}
	teams, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "29:abc")
	if err != nil || teams == nil || teams.ChannelType != "teams" || teams.PlatformID != "dm-29:abc" {
		t.Errorf("Teams DM = %+v, %v; want the kind as channel and the whole id as handle", teams, err)
	}

	// A cached chat that was deleted is resolved again.
	noErr(t, "delete the DM chat", e.r.DeleteMessagingGroup(e.ctx, d.ID))
	re, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "discord:7")
	if err != nil || re == nil || re.ID == d.ID || re.PlatformID != "dm-7" {
		t.Errorf("after the chat was deleted = %+v, %v", re, err)
	}

	for _, c := range []struct{ name, id string }{{"unknown user", "tg:404"}, {"no adapter", "slack:9"}} {
		if c.id == "slack:9" {
			e.user("slack:9", "")
		}
		got, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, c.id)
		if err != nil || got != nil {
			t.Errorf("%s: %+v, %v; want nil without an error", c.name, got, err)
		}
	}
	e.user("discord:8", "")
	dms.fail = true
	got, err := sessiondb.EnsureUserDM(e.ctx, e.r, dms, "discord:8")
	if err != nil || got != nil {
		t.Errorf("OpenDM failing: %+v, %v; want unreachable", got, err)
	}
	_, err = e.r.SaveUserDM(e.ctx, sessiondb.NewUserDM{UserID: "tg:404", ChannelType: "tg", PlatformID: "404"})
	wantCode(t, "SaveUserDM of an unknown user", err, sessiondb.ENOTFOUND)
	_, err = e.r.GetUserDM(e.ctx, "tg:42", "discord")
	wantCode(t, "GetUserDM missing", err, sessiondb.ENOTFOUND)
}
