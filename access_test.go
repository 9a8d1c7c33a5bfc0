package sessiondb

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 18, 10, 0, 0, 0, time.UTC)

func grant(user string, role Role, ag string, at time.Duration) RoleGrant {
	return RoleGrant{UserID: user, Role: role, AgentGroupID: ag, GrantedAt: t0.Add(at)}
}

func known(id string, roles []RoleGrant, memberOf ...string) UserAccess {
	u := UserAccess{UserID: id, User: &User{ID: id, Kind: "tg"}, Roles: roles}
	for _, ag := range memberOf {
		u.Memberships = append(u.Memberships, Membership{UserID: id, AgentGroupID: ag})
	}
	return u
}

// TestCanAccessAgentGroup checks spec A5's order of reasons, and that a
// scoped owner row (raw SQL only) grants nothing.
func TestCanAccessAgentGroup(t *testing.T) {
	cases := []struct {
		name  string
		u     UserAccess
		allow bool
		why   AccessReason
		admin bool
	}{
		{"unknown user", UserAccess{UserID: "tg:1"}, false, AccessUnknownUser, false},
		{"unknown user with a stray grant", UserAccess{UserID: "tg:1", Roles: []RoleGrant{grant("tg:1", RoleOwner, "", 0)}}, false, AccessUnknownUser, false},
		{"owner", known("tg:1", []RoleGrant{grant("tg:1", RoleOwner, "", 0), grant("tg:1", RoleAdmin, "", 0)}), true, AccessOwner, true},
		{"global admin", known("tg:1", []RoleGrant{grant("tg:1", RoleAdmin, "", 0)}, "ag"), true, AccessGlobalAdmin, true},
		{"admin of the group", known("tg:1", []RoleGrant{grant("tg:1", RoleAdmin, "ag", 0)}, "ag"), true, AccessAdminOfGroup, true},
		{"admin of another group", known("tg:1", []RoleGrant{grant("tg:1", RoleAdmin, "other", 0)}), false, AccessNotMember, false},
		{"member", known("tg:1", nil, "ag"), true, AccessMember, false},
		{"member elsewhere", known("tg:1", nil, "other"), false, AccessNotMember, false},
		{"scoped owner row counts for nothing", known("tg:1", []RoleGrant{grant("tg:1", RoleOwner, "ag", 0)}), false, AccessNotMember, false},
		{"nobody", known("tg:1", nil), false, AccessNotMember, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := CanAccessAgentGroup(c.u, "ag")
			if d.Allowed != c.allow || d.Reason != c.why {
				t.Errorf("CanAccessAgentGroup = %+v, want allowed=%v reason=%s", d, c.allow, c.why)
			}
			if got := HasAdminPrivilege(c.u, "ag"); got != c.admin {
				t.Errorf("HasAdminPrivilege = %v, want %v", got, c.admin)
			}
			if got, want := c.u.IsMember("ag"), c.allow; got != want {
				t.Errorf("IsMember = %v, want %v (admins are members without a row)", got, want)
			}
		})
	}
}

// TestAccessGate checks the per-event gate and the sender-scope gate of
// spec A5 under each policy.
func TestAccessGate(t *testing.T) {
	stranger := known("tg:9", nil)
	member := known("tg:2", nil, "ag")
	anon := UserAccess{}
	cases := []struct {
		name    string
		policy  UnknownSenderPolicy
		u       UserAccess
		want    GateDecision
		scope   SenderScope
		scopeOK bool
		scopeWy string
	}{
		{"public lets a stranger in", PolicyPublic, stranger, GateDecision{Allowed: true, Reason: "public"}, ScopeKnown, false, "sender_scope_not_member"},
		{"public lets the unidentified in", PolicyPublic, anon, GateDecision{Allowed: true, Reason: "public"}, ScopeKnown, false, "unknown_user_scope"},
		{"strict admits a member", PolicyStrict, member, GateDecision{Allowed: true, Reason: "member"}, ScopeKnown, true, "member"},
		{"strict drops a stranger", PolicyStrict, stranger, GateDecision{Reason: "not_member", Drop: DropUnknownSenderStrict}, ScopeAll, true, "all"},
		{"strict drops the unidentified", PolicyStrict, anon, GateDecision{Reason: "unknown_user", Drop: DropUnknownSenderStrict}, ScopeAll, true, "all"},
		{"request_approval asks about a stranger", PolicyRequestApproval, stranger, GateDecision{Reason: "not_member", Drop: DropUnknownSenderRequestApprove, RequestApproval: true}, ScopeAll, true, "all"},
		{"request_approval cannot ask about the unidentified", PolicyRequestApproval, anon, GateDecision{Reason: "unknown_user", Drop: DropUnknownSenderRequestApprove}, ScopeAll, true, "all"},
		{"request_approval asks about an id the registry lacks", PolicyRequestApproval, UserAccess{UserID: "tg:5"}, GateDecision{Reason: "unknown_user", Drop: DropUnknownSenderRequestApprove, RequestApproval: true}, ScopeKnown, false, "sender_scope_unknown_user"},
		{"an unknown policy word is strict", UnknownSenderPolicy("lax"), stranger, GateDecision{Reason: "not_member", Drop: DropUnknownSenderStrict}, ScopeAll, true, "all"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AccessGate(c.policy, c.u, "ag"); got != c.want {
				t.Errorf("AccessGate = %+v, want %+v", got, c.want)
			}
			s := SenderScopeGate(c.scope, c.u, "ag")
			if s.Allowed != c.scopeOK || s.Reason != c.scopeWy || s.Drop != "" {
				t.Errorf("SenderScopeGate(%s) = %+v, want allowed=%v reason=%s and no drop", c.scope, s, c.scopeOK, c.scopeWy)
			}
		})
	}
}

// TestApprovers checks spec A7.2's order: admins of the group, global
// admins, owners, each by granted_at (parsed, not text), without repeats.
func TestApprovers(t *testing.T) {
	grants := []RoleGrant{
		grant("tg:owner2", RoleOwner, "", 3*time.Hour),
		grant("tg:owner1", RoleOwner, "", time.Hour),
		grant("tg:gadmin", RoleAdmin, "", 2*time.Hour),
		grant("tg:scoped2", RoleAdmin, "ag", 2*time.Minute),
		grant("tg:scoped1", RoleAdmin, "ag", time.Minute),
		grant("tg:elsewhere", RoleAdmin, "other", 0),
		grant("tg:owner1", RoleAdmin, "", 5*time.Hour), // also a global admin: listed once, as admin
		grant("tg:scopedowner", RoleOwner, "ag", 0),    // a scoped owner row counts for nothing
	}
	if got, want := Approvers(grants, "ag"), []string{"tg:scoped1", "tg:scoped2", "tg:gadmin", "tg:owner1", "tg:owner2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Approvers(ag) = %q, want %q", got, want)
	}
	if got, want := Approvers(grants, ""), []string{"tg:gadmin", "tg:owner1", "tg:owner2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Approvers(none) = %q, want %q", got, want)
	}
	if got := Approvers(nil, "ag"); len(got) != 0 {
		t.Errorf("Approvers of no grants = %q", got)
	}
	order := ApprovalDeliveryOrder([]string{"tg:a", "discord:b", "tg:c", "slack:d"}, "discord")
	if want := []string{"discord:b", "tg:a", "tg:c", "slack:d"}; !reflect.DeepEqual(order, want) {
		t.Errorf("ApprovalDeliveryOrder = %q, want %q", order, want)
	}
	if got := ApprovalDeliveryOrder([]string{"tg:a", "29:teams"}, ""); !reflect.DeepEqual(got, []string{"tg:a", "29:teams"}) {
		t.Errorf("ApprovalDeliveryOrder without an origin = %q", got)
	}
}

// TestCheckNamedUserID: an id whose channel part is a channel type only
// in another case or with white space never matches a sender, and is
// refused naming the id that would; an adapter's own id is kept.
func TestCheckNamedUserID(t *testing.T) {
	for _, c := range []struct{ id, refused string }{
		{"telegram:1", ""},
		{"29:1AbC", ""},
		{"@ann:example.org", ""},
		{"email:Ann@Example.org", ""},
		{"TELEGRAM:1", `never matches a sender: a sender's id is <channel type>:<handle> with the channel type in lower case, as "telegram:1"`},
		{"Discord:42", `as "discord:42"`},
		{" slack:U1", `as "slack:U1"`},
		{"nobody", "not namespaced"},
	} {
		err := CheckNamedUserID("user", c.id)
		if c.refused == "" {
			if err != nil {
				t.Errorf("CheckNamedUserID(%q) = %v, want nil", c.id, err)
			}
			continue
		}
		if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "user ") {
			t.Errorf("CheckNamedUserID(%q) = %v, want invalid saying %q", c.id, err, c.refused)
		}
	}
}

func TestSenderUserID(t *testing.T) {
	for _, c := range []struct{ channel, raw, want string }{
		{"telegram", "123", "telegram:123"},
		{"telegram", "tg:123", "tg:123"},
		{"teams", "29:abc", "29:abc"},
		{"telegram", "", ""},
	} {
		if got := SenderUserID(c.channel, c.raw); got != c.want {
			t.Errorf("SenderUserID(%q, %q) = %q, want %q", c.channel, c.raw, got, c.want)
		}
	}
}
