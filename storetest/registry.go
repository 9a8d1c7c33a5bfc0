package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// RegistryHarness is how the control-plane suite reaches one backend's
// central registry (spec/control-plane.md part A).
type RegistryHarness struct {
	// Open returns a new, empty registry whose clock is now. Each call
	// must give an independent registry; calls may come from parallel
	// tests. The suite closes it when the test ends.
	Open func(t *testing.T, now sessiondb.Clock) sessiondb.Registry
	// Reopen returns a second handle on the registry r (as another process
	// would hold one), with its own connections and the clock now. The
	// suite closes it.
	Reopen func(t *testing.T, r sessiondb.Registry, now sessiondb.Clock) sessiondb.Registry
}

// RunRegistry runs the central registry's conformance suite against h.
// Groups follow the spec's sections; they run in parallel with each other.
func RunRegistry(t *testing.T, h RegistryHarness) {
	if h.Open == nil || h.Reopen == nil {
		t.Fatal("storetest: RegistryHarness.Open and Reopen are required")
	}
	t.Run("AgentGroups", func(t *testing.T) { t.Parallel(); testAgentGroups(t, h) })
	t.Run("MessagingGroups", func(t *testing.T) { t.Parallel(); testMessagingGroups(t, h) })
	t.Run("Wirings", func(t *testing.T) { t.Parallel(); testWirings(t, h) })
	t.Run("Users", func(t *testing.T) { t.Parallel(); testUsers(t, h) })
	t.Run("Roles", func(t *testing.T) { t.Parallel(); testRoles(t, h) })
	t.Run("Members", func(t *testing.T) { t.Parallel(); testMembers(t, h) })
	t.Run("Access", func(t *testing.T) { t.Parallel(); testAccess(t, h) })
	t.Run("UserDMs", func(t *testing.T) { t.Parallel(); testUserDMs(t, h) })
	t.Run("ResolveSession", func(t *testing.T) { t.Parallel(); testResolveSession(t, h) })
	t.Run("SessionRegistry", func(t *testing.T) { t.Parallel(); testSessionRegistry(t, h) })
	t.Run("ResolveConcurrently", func(t *testing.T) { t.Parallel(); testResolveConcurrently(t, h) })
	t.Run("Destinations", func(t *testing.T) { t.Parallel(); testDestinations(t, h) })
	t.Run("Questions", func(t *testing.T) { t.Parallel(); testQuestions(t, h) })
	t.Run("ActionApprovals", func(t *testing.T) { t.Parallel(); testActionApprovals(t, h) })
	t.Run("ExpireConcurrently", func(t *testing.T) { t.Parallel(); testExpireConcurrently(t, h) })
	t.Run("SenderApprovals", func(t *testing.T) { t.Parallel(); testSenderApprovals(t, h) })
	t.Run("ChannelApprovals", func(t *testing.T) { t.Parallel(); testChannelApprovals(t, h) })
	t.Run("FindCard", func(t *testing.T) { t.Parallel(); testFindCard(t, h) })
	t.Run("Dropped", func(t *testing.T) { t.Parallel(); testDropped(t, h) })
	t.Run("DeleteGroups", func(t *testing.T) { t.Parallel(); testDeleteGroups(t, h) })
}

// renv is one fresh registry with its clock.
type renv struct {
	t     *testing.T
	ctx   context.Context
	clock *testkit.Clock
	r     sessiondb.Registry
	h     RegistryHarness
}

func newRenv(t *testing.T, h RegistryHarness) *renv {
	t.Helper()
	r, c := openOnClock(t, "RegistryHarness.Open", h.Open)
	return &renv{t: t, ctx: context.Background(), clock: c, r: r, h: h}
}

// openOnClock opens a fresh store with open (what names it) on a clock at
// Epoch, closed, its error reported, when t ends: where the registry's and
// the subagent store's environments start.
func openOnClock[S interface{ Close() error }](t *testing.T, what string, open func(*testing.T, sessiondb.Clock) S) (S, *testkit.Clock) {
	t.Helper()
	c := testkit.NewClock(Epoch)
	s := open(t, c.Now)
	if any(s) == nil {
		t.Fatal(what + " returned nil")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, c
}

// reopen returns a second handle on e's registry on the same clock.
func (e *renv) reopen() sessiondb.Registry {
	e.t.Helper()
	r := e.h.Reopen(e.t, e.r, e.clock.Now)
	if r == nil {
		e.t.Fatal("RegistryHarness.Reopen returned nil")
	}
	e.t.Cleanup(func() { r.Close() })
	return r
}

func (e *renv) tick() { e.clock.Advance(time.Second) }

// at is the clock's time as the registry stores it (milliseconds).
func (e *renv) at() time.Time { return e.clock.Now().Truncate(time.Millisecond) }

func (e *renv) group(id, name string) sessiondb.AgentGroup {
	e.t.Helper()
	g, err := e.r.CreateAgentGroup(e.ctx, sessiondb.NewAgentGroup{ID: id, Name: name, Folder: id})
	noErr(e.t, "CreateAgentGroup "+id, err)
	e.tick()
	return g
}

func (e *renv) chat(id, channel, platform, name string, isGroup bool) sessiondb.MessagingGroup {
	e.t.Helper()
	m, err := e.r.CreateMessagingGroup(e.ctx, sessiondb.NewMessagingGroup{ID: id, ChannelType: channel, PlatformID: platform, Name: name, IsGroup: isGroup})
	noErr(e.t, "CreateMessagingGroup "+id, err)
	e.tick()
	return m
}

func (e *renv) wire(n sessiondb.NewWiring) sessiondb.Wired {
	e.t.Helper()
	w, err := e.r.CreateWiring(e.ctx, n)
	noErr(e.t, "CreateWiring", err)
	e.tick()
	return w
}

func (e *renv) user(id, name string) sessiondb.User {
	e.t.Helper()
	u, _, err := e.r.EnsureUser(e.ctx, sessiondb.NewUser{ID: id, DisplayName: name})
	noErr(e.t, "EnsureUser "+id, err)
	e.tick()
	return u
}

func (e *renv) grant(user string, role sessiondb.Role, ag string) {
	e.t.Helper()
	_, err := e.r.GrantRole(e.ctx, sessiondb.NewRoleGrant{UserID: user, Role: role, AgentGroupID: ag})
	noErr(e.t, "GrantRole", err)
	e.tick()
}

func (e *renv) resolve(ag, mg, thread string, mode sessiondb.SessionMode) (sessiondb.AgentSession, bool) {
	e.t.Helper()
	s, created, err := e.r.ResolveSession(e.ctx, sessiondb.SessionLookup{AgentGroupID: ag, MessagingGroupID: mg, ThreadID: thread, Mode: mode})
	noErr(e.t, "ResolveSession", err)
	e.tick()
	return s, created
}

// sameTime fails unless got is want to the millisecond.
func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want.Truncate(time.Millisecond)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
