package storetest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

var generatedID = func(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + prefix + `-\d{13}-[0-9a-z]{6}$`)
}

func testAgentGroups(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	at := e.at()
	g, err := e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{Name: "Main Agent", Folder: "main", AgentProvider: "claude"})
	noErr(t, "create", err)
	if !generatedID("ag").MatchString(g.ID) || !strings.Contains(g.ID, "-"+itoa(at.UnixMilli())+"-") {
		t.Errorf("generated id %q is not ag-<now ms>-<rand6>", g.ID)
	}
	sameTime(t, "created_at", g.CreatedAt, at)
	got, err := e.r.GetAgentGroup(e.ctx, g.ID)
	noErr(t, "get", err)
	if got != g {
		t.Errorf("GetAgentGroup = %+v, want %+v", got, g)
	}
	byFolder, err := e.r.GetAgentGroupByFolder(e.ctx, "main")
	if err != nil || byFolder.ID != g.ID {
		t.Errorf("GetAgentGroupByFolder = %+v, %v", byFolder, err)
	}
	e.tick()

	t.Run("conflicts", func(t *testing.T) {
		_, err := e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{Name: "Other", Folder: "main"})
		wantCode(t, "taken folder", err, sessiondb.ECONFLICT)
		_, err = e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{ID: g.ID, Name: "Other", Folder: "other"})
		wantCode(t, "taken id", err, sessiondb.ECONFLICT)
	})
	t.Run("hostile folders", func(t *testing.T) {
		for _, folder := range []string{"..", "../../etc", "a/b", `a\b`, "", "x\x00y", "line\nbreak", strings.Repeat("f", 300)} {
			_, err := e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{Name: "x", Folder: folder})
			wantCode(t, "folder "+folder, err, sessiondb.EINVALID)
			if err != nil && !strings.Contains(err.Error(), "folder") {
				t.Errorf("folder %q: %v does not name the field", folder, err)
			}
		}
		_, err := e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{ID: "../x", Name: "x", Folder: "fine"})
		wantCode(t, "hostile id", err, sessiondb.EINVALID)
	})
	t.Run("not found", func(t *testing.T) {
		_, err := e.r.GetAgentGroup(e.ctx, "ag-missing")
		wantCode(t, "get", err, sessiondb.ENOTFOUND)
		_, err = e.r.GetAgentGroupByFolder(e.ctx, "missing")
		wantCode(t, "by folder", err, sessiondb.ENOTFOUND)
		name := "x"
		_, err = e.r.UpdateAgentGroup(e.ctx, "ag-missing", sessiondb.AgentGroupUpdate{Name: &name})
		wantCode(t, "update", err, sessiondb.ENOTFOUND)
		wantCode(t, "delete", e.r.DeleteAgentGroup(e.ctx, "ag-missing"), sessiondb.ENOTFOUND)
	})
	t.Run("list by name", func(t *testing.T) {
		e.group("zeta", "Zeta")
		e.group("alpha", "Alpha")
		list, err := e.r.ListAgentGroups(e.ctx)
		noErr(t, "list", err)
		if got := pluck(list, func(g sessiondb.AgentGroup) string { return g.Name }); strings.Join(got, ",") != "Alpha,Main Agent,Zeta" {
			t.Errorf("ListAgentGroups names = %q, want by name", got)
		}
	})
	t.Run("update", func(t *testing.T) {
		name, none := "Renamed", ""
		u, err := e.r.UpdateAgentGroup(e.ctx, g.ID, sessiondb.AgentGroupUpdate{Name: &name, AgentProvider: &none})
		noErr(t, "update", err)
		if u.Name != "Renamed" || u.AgentProvider != "" || u.Folder != "main" {
			t.Errorf("updated = %+v", u)
		}
		got, _ := e.r.GetAgentGroup(e.ctx, g.ID)
		if got != u {
			t.Errorf("stored %+v, returned %+v", got, u)
		}
		_, err = e.r.UpdateAgentGroup(e.ctx, g.ID, sessiondb.AgentGroupUpdate{Name: &none})
		wantCode(t, "empty name", err, sessiondb.EINVALID)
	})
}

func testMessagingGroups(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	at := e.at()
	m, err := e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "telegram", PlatformID: "-100123", Name: "Family", IsGroup: true})
	noErr(t, "create", err)
	if !generatedID("mg").MatchString(m.ID) || m.UnknownSenderPolicy != sessiondb.PolicyStrict || !m.IsGroup || m.Denied() {
		t.Errorf("created %+v: want an mg- id, policy strict, a group, not denied", m)
	}
	sameTime(t, "created_at", m.CreatedAt, at)
	e.tick()

	_, err = e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "telegram", PlatformID: "-100123"})
	wantCode(t, "same chat twice", err, sessiondb.ECONFLICT)
	other, err := e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "discord", PlatformID: "-100123", UnknownSenderPolicy: sessiondb.PolicyPublic})
	noErr(t, "same platform id on another channel", err)
	if other.UnknownSenderPolicy != sessiondb.PolicyPublic || other.Name != "" {
		t.Errorf("other = %+v", other)
	}
	found, err := e.r.FindMessagingGroup(e.ctx, "telegram", "-100123")
	if err != nil || found != m {
		t.Errorf("FindMessagingGroup = %+v, %v; want %+v", found, err, m)
	}
	_, err = e.r.FindMessagingGroup(e.ctx, "telegram", "nope")
	wantCode(t, "find missing", err, sessiondb.ENOTFOUND)
	_, err = e.r.GetMessagingGroup(e.ctx, "mg-missing")
	wantCode(t, "get missing", err, sessiondb.ENOTFOUND)

	t.Run("ensure", func(t *testing.T) {
		got, created, err := e.r.EnsureMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "telegram", PlatformID: "-100123", Name: "ignored"})
		if err != nil || created || got != m {
			t.Errorf("EnsureMessagingGroup of a known chat = %+v, %v, %v; want it unchanged", got, created, err)
		}
		n, created, err := e.r.EnsureMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: "C9", UnknownSenderPolicy: sessiondb.PolicyRequestApproval})
		if err != nil || !created || n.UnknownSenderPolicy != sessiondb.PolicyRequestApproval {
			t.Errorf("EnsureMessagingGroup of a new chat = %+v, %v, %v", n, created, err)
		}
		again, created, err := e.r.EnsureMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: "C9"})
		if err != nil || created || again.ID != n.ID {
			t.Errorf("second EnsureMessagingGroup = %+v, %v, %v", again, created, err)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "telegram"})
		wantCode(t, "no platform id", err, sessiondb.EINVALID)
		_, err = e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ChannelType: "telegram", PlatformID: "1", UnknownSenderPolicy: "lax"})
		wantCode(t, "bad policy", err, sessiondb.EINVALID)
	})
	t.Run("deny and undeny", func(t *testing.T) {
		e.tick()
		deniedAt := e.at()
		yes, no := true, false
		d, err := e.r.UpdateMessagingGroup(e.ctx, m.ID, sessiondb.MessagingGroupUpdate{Denied: &yes})
		noErr(t, "deny", err)
		sameTime(t, "denied_at", d.DeniedAt, deniedAt)
		e.tick()
		d, err = e.r.UpdateMessagingGroup(e.ctx, m.ID, sessiondb.MessagingGroupUpdate{Denied: &yes})
		noErr(t, "deny again", err)
		sameTime(t, "denied_at after a second denial (the first kept)", d.DeniedAt, deniedAt)
		d, err = e.r.UpdateMessagingGroup(e.ctx, m.ID, sessiondb.MessagingGroupUpdate{Denied: &no})
		if err != nil || d.Denied() {
			t.Errorf("undeny = %+v, %v", d, err)
		}
		name, policy := "", sessiondb.PolicyRequestApproval
		u, err := e.r.UpdateMessagingGroup(e.ctx, m.ID, sessiondb.MessagingGroupUpdate{Name: &name, IsGroup: &no, UnknownSenderPolicy: &policy})
		if err != nil || u.Name != "" || u.IsGroup || u.UnknownSenderPolicy != policy {
			t.Errorf("update = %+v, %v", u, err)
		}
		_, err = e.r.UpdateMessagingGroup(e.ctx, "mg-missing", sessiondb.MessagingGroupUpdate{Denied: &yes})
		wantCode(t, "update missing", err, sessiondb.ENOTFOUND)
	})
	t.Run("list", func(t *testing.T) {
		e.chat("", "telegram", "5", "Alpha", false)
		all, err := e.r.ListMessagingGroups(e.ctx, sessiondb.MessagingGroupFilter{})
		noErr(t, "list", err)
		if len(all) != 4 || all[0].Name != "Alpha" || all[len(all)-1].Name != "" {
			t.Errorf("ListMessagingGroups = %+v: want 4, named ones first by name", all)
		}
		tg, err := e.r.ListMessagingGroups(e.ctx, sessiondb.MessagingGroupFilter{ChannelType: "telegram"})
		noErr(t, "list telegram", err)
		for _, g := range tg {
			if g.ChannelType != "telegram" {
				t.Errorf("filtered listing holds %+v", g)
			}
		}
		if len(tg) != 2 {
			t.Errorf("telegram chats = %d, want 2", len(tg))
		}
	})
}

func testWirings(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("ag1", "One")
	e.group("ag2", "Two")
	fam := e.chat("mg-fam", "telegram", "1", "Family Chat!", true)
	fam2 := e.chat("mg-fam2", "discord", "2", "family chat", true)
	anon := e.chat("mg-1234567890", "whatsapp", "3", "", false)

	t.Run("defaults and destination", func(t *testing.T) {
		at := e.at()
		w := e.wire(sessiondb.NewWiring{MessagingGroupID: fam.ID, AgentGroupID: "ag1"})
		if !generatedID("mga").MatchString(w.Wiring.ID) {
			t.Errorf("wiring id %q", w.Wiring.ID)
		}
		ww := w.Wiring
		if ww.EngageMode != sessiondb.EngageMention || ww.EngagePattern != "" || ww.SenderScope != sessiondb.ScopeAll ||
			ww.IgnoredMessagePolicy != sessiondb.IgnoredDrop || ww.SessionMode != sessiondb.ModeShared || ww.Priority != 0 {
			t.Errorf("defaults = %+v", ww)
		}
		sameTime(t, "created_at", ww.CreatedAt, at)
		if w.Destination == nil || w.Destination.LocalName != "family-chat" || w.Destination.TargetType != sessiondb.TargetChannel || w.Destination.TargetID != fam.ID {
			t.Fatalf("destination = %+v, want channel family-chat → %s", w.Destination, fam.ID)
		}
		got, err := e.r.GetWiring(e.ctx, ww.ID)
		if err != nil || got != ww {
			t.Errorf("GetWiring = %+v, %v; want %+v", got, err, ww)
		}
	})
	t.Run("collision suffix and unnamed chats", func(t *testing.T) {
		w := e.wire(sessiondb.NewWiring{MessagingGroupID: fam2.ID, AgentGroupID: "ag1", EngageMode: sessiondb.EngagePattern, Priority: 5})
		if w.Destination == nil || w.Destination.LocalName != "family-chat-2" {
			t.Errorf("second family chat's destination = %+v, want family-chat-2", w.Destination)
		}
		if w.Wiring.EngagePattern != "." {
			t.Errorf("pattern mode without a pattern stored %q, want '.'", w.Wiring.EngagePattern)
		}
		w = e.wire(sessiondb.NewWiring{MessagingGroupID: anon.ID, AgentGroupID: "ag1", Priority: 5})
		if w.Destination == nil || w.Destination.LocalName != "whatsapp-mg-12345" {
			t.Errorf("unnamed chat's destination = %+v, want whatsapp-mg-12345", w.Destination)
		}
		// Names are per agent group: ag2 gets the plain name.
		w = e.wire(sessiondb.NewWiring{MessagingGroupID: fam2.ID, AgentGroupID: "ag2"})
		if w.Destination == nil || w.Destination.LocalName != "family-chat" {
			t.Errorf("ag2's destination = %+v, want family-chat", w.Destination)
		}
	})
	t.Run("existing destination is kept", func(t *testing.T) {
		_, err := e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "ag2", LocalName: "home", TargetType: sessiondb.TargetChannel, TargetID: fam.ID})
		noErr(t, "add destination", err)
		w := e.wire(sessiondb.NewWiring{MessagingGroupID: fam.ID, AgentGroupID: "ag2"})
		if w.Destination != nil {
			t.Errorf("wiring added %+v although ag2 already had a destination for the chat", w.Destination)
		}
		ds, _ := e.r.ListDestinations(e.ctx, "ag2")
		if names := pluck(ds, func(d sessiondb.Destination) string { return d.LocalName }); strings.Join(names, ",") != "family-chat,home" {
			t.Errorf("ag2 destinations = %q", names)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		_, err := e.r.CreateWiring(e.ctx, sessiondb.NewWiring{MessagingGroupID: fam.ID, AgentGroupID: "ag1"})
		wantCode(t, "same pair twice", err, sessiondb.ECONFLICT)
		_, err = e.r.CreateWiring(e.ctx, sessiondb.NewWiring{MessagingGroupID: "mg-missing", AgentGroupID: "ag1"})
		wantCode(t, "unknown chat", err, sessiondb.ENOTFOUND)
		_, err = e.r.CreateWiring(e.ctx, sessiondb.NewWiring{MessagingGroupID: fam.ID, AgentGroupID: "ag-missing"})
		wantCode(t, "unknown group", err, sessiondb.ENOTFOUND)
		_, err = e.r.CreateWiring(e.ctx, sessiondb.NewWiring{MessagingGroupID: anon.ID, AgentGroupID: "ag2", EngageMode: sessiondb.EngagePattern, EngagePattern: `(?=x)`})
		wantCode(t, "JavaScript-only pattern", err, sessiondb.EINVALID)
		if err != nil && !strings.Contains(err.Error(), "engage_pattern") {
			t.Errorf("%v does not name engage_pattern", err)
		}
		if ws, _ := e.r.ListWirings(e.ctx, sessiondb.WiringFilter{MessagingGroupID: anon.ID, AgentGroupID: "ag2"}); len(ws) != 0 {
			t.Errorf("a refused wiring was stored: %+v", ws)
		}
	})
	t.Run("list in evaluation order", func(t *testing.T) {
		ws, err := e.r.ListWirings(e.ctx, sessiondb.WiringFilter{AgentGroupID: "ag1"})
		noErr(t, "list", err)
		got := pluck(ws, func(w sessiondb.Wiring) string { return w.MessagingGroupID })
		if strings.Join(got, ",") != "mg-fam2,mg-1234567890,mg-fam" {
			t.Errorf("ag1 wirings = %q, want priority 5 (oldest first), then 0", got)
		}
		ws, err = e.r.ListWirings(e.ctx, sessiondb.WiringFilter{MessagingGroupID: fam2.ID})
		if err != nil || len(ws) != 2 || ws[0].AgentGroupID != "ag1" {
			t.Errorf("fam2 wirings = %+v, %v", ws, err)
		}
	})
	t.Run("update and delete", func(t *testing.T) {
		ws, _ := e.r.ListWirings(e.ctx, sessiondb.WiringFilter{MessagingGroupID: fam.ID, AgentGroupID: "ag1"})
		id := ws[0].ID
		mode, pat, scope, pol, smode, prio := sessiondb.EngagePattern, `^!ask\b`, sessiondb.ScopeKnown, sessiondb.IgnoredAccumulate, sessiondb.ModePerThread, 9
		u, err := e.r.UpdateWiring(e.ctx, id, sessiondb.WiringUpdate{EngageMode: &mode, EngagePattern: &pat, SenderScope: &scope,
			IgnoredMessagePolicy: &pol, SessionMode: &smode, Priority: &prio})
		noErr(t, "update", err)
		got, _ := e.r.GetWiring(e.ctx, id)
		if got != u || u.EngagePattern != pat || u.SenderScope != scope || u.IgnoredMessagePolicy != pol || u.SessionMode != smode || u.Priority != 9 {
			t.Errorf("updated = %+v, stored %+v", u, got)
		}
		bad := "(a)\\1"
		_, err = e.r.UpdateWiring(e.ctx, id, sessiondb.WiringUpdate{EngagePattern: &bad})
		wantCode(t, "update to a backreference", err, sessiondb.EINVALID)
		_, err = e.r.UpdateWiring(e.ctx, "mga-missing", sessiondb.WiringUpdate{Priority: &prio})
		wantCode(t, "update missing", err, sessiondb.ENOTFOUND)
		noErr(t, "delete", e.r.DeleteWiring(e.ctx, id))
		wantCode(t, "delete again", e.r.DeleteWiring(e.ctx, id), sessiondb.ENOTFOUND)
		_, err = e.r.GetWiring(e.ctx, id)
		wantCode(t, "get deleted", err, sessiondb.ENOTFOUND)
		ds, _ := e.r.ListDestinations(e.ctx, "ag1")
		if !contains(pluck(ds, func(d sessiondb.Destination) string { return d.LocalName }), "family-chat") {
			t.Errorf("unwiring removed the destination: %+v", ds)
		}
	})
}

// testDeleteGroups: deleting a group or chat takes what only configures
// it, and refuses while sessions hold conversations.
func testDeleteGroups(t *testing.T, h RegistryHarness) {
	e := newRenv(t, h)
	e.group("keep", "Keep")
	e.group("gone", "Gone")
	chat := e.chat("mg-a", "telegram", "1", "A", true)
	e.chat("mg-b", "telegram", "2", "B", true)
	e.user("tg:1", "Ann")
	e.wire(sessiondb.NewWiring{MessagingGroupID: chat.ID, AgentGroupID: "gone"})
	e.wire(sessiondb.NewWiring{MessagingGroupID: chat.ID, AgentGroupID: "keep"})
	_, err := e.r.AddDestination(e.ctx, sessiondb.NewDestination{AgentGroupID: "keep", LocalName: "buddy", TargetType: sessiondb.TargetAgent, TargetID: "gone"})
	noErr(t, "add agent destination", err)
	e.grant("tg:1", sessiondb.RoleAdmin, "gone")
	_, err = e.r.AddMember(e.ctx, "tg:1", "gone", "")
	noErr(t, "add member", err)

	noErr(t, "delete group", e.r.DeleteAgentGroup(e.ctx, "gone"))
	_, err = e.r.GetAgentGroup(e.ctx, "gone")
	wantCode(t, "get deleted group", err, sessiondb.ENOTFOUND)
	if ws, _ := e.r.ListWirings(e.ctx, sessiondb.WiringFilter{AgentGroupID: "gone"}); len(ws) != 0 {
		t.Errorf("wirings of a deleted group remain: %+v", ws)
	}
	if ds, _ := e.r.ListDestinations(e.ctx, "keep"); len(ds) != 1 || ds[0].LocalName != "a" {
		t.Errorf("keep's destinations = %+v, want only its chat (the one naming the deleted group is gone)", ds)
	}
	if roles, _ := e.r.ListRoles(e.ctx, sessiondb.RoleFilter{AgentGroupID: "gone"}); len(roles) != 0 {
		t.Errorf("scoped roles of a deleted group remain: %+v", roles)
	}

	e.resolve("keep", chat.ID, "", sessiondb.ModeShared)
	wantCode(t, "delete a group with sessions", e.r.DeleteAgentGroup(e.ctx, "keep"), sessiondb.ECONFLICT)
	wantCode(t, "delete a chat with sessions", e.r.DeleteMessagingGroup(e.ctx, chat.ID), sessiondb.ECONFLICT)
	if _, err := e.r.GetAgentGroup(e.ctx, "keep"); err != nil {
		t.Errorf("a refused delete removed the group: %v", err)
	}
	noErr(t, "delete a chat without sessions", e.r.DeleteMessagingGroup(e.ctx, "mg-b"))
	wantCode(t, "delete it again", e.r.DeleteMessagingGroup(e.ctx, "mg-b"), sessiondb.ENOTFOUND)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
