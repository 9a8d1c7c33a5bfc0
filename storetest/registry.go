package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

// Handles is how a suite that needs a second handle on one store reaches
// a backend.
type Handles[S interface{ Close() error }] struct {
	// Open returns a new, empty store whose clock is now. Each call must
	// give an independent store; calls may come from parallel tests. The
	// suite closes it when the test ends.
	Open func(t *testing.T, now sessiondb.Clock) S
	// Reopen returns a second handle on the store s (as another process
	// would hold one), with its own connections and the clock now. The
	// suite closes it.
	Reopen func(t *testing.T, s S, now sessiondb.Clock) S
}

// RegistryHarness is how the control-plane suite reaches one backend's
// central registry (spec/control-plane.md part A).
type RegistryHarness = Handles[sessiondb.Registry]

// required fails t unless h has both functions; name is the harness's
// type, for the message.
func (h Handles[S]) required(t *testing.T, name string) {
	if h.Open == nil || h.Reopen == nil {
		t.Fatalf("storetest: %s.Open and Reopen are required", name)
	}
}

// reopen returns a second handle on s on the clock now (Reopen), closed
// when t ends.
func (h Handles[S]) reopen(t *testing.T, s S, now sessiondb.Clock) S {
	t.Helper()
	r := h.Reopen(t, s, now)
	if any(r) == nil {
		t.Fatal("Reopen returned nil")
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// RunRegistry runs the central registry's conformance suite against h.
// Groups follow the spec's sections; they run in parallel with each other.
func RunRegistry(t *testing.T, h RegistryHarness) {
	h.required(t, "RegistryHarness")
	runGroups(t, h, []group[RegistryHarness]{
		{"AgentGroups", testAgentGroups},
		{"MessagingGroups", testMessagingGroups},
		{"Wirings", testWirings},
		{"Users", testUsers},
		{"Roles", testRoles},
		{"Members", testMembers},
		{"Access", testAccess},
		{"UserDMs", testUserDMs},
		{"ResolveSession", testResolveSession},
		{"SessionRegistry", testSessionRegistry},
		{"ResolveConcurrently", testResolveConcurrently},
		{"Destinations", testDestinations},
		{"Questions", testQuestions},
		{"ActionApprovals", testActionApprovals},
		{"ExpireConcurrently", testExpireConcurrently},
		{"SenderApprovals", testSenderApprovals},
		{"ChannelApprovals", testChannelApprovals},
		{"FindCard", testFindCard},
		{"Dropped", testDropped},
		{"DeleteGroups", testDeleteGroups},
	})
}

// renv is one fresh registry with its clock.
type renv struct {
	clocked
	r sessiondb.Registry
	h RegistryHarness
}

func newRenv(t *testing.T, h RegistryHarness) *renv {
	t.Helper()
	o := openOnClock(t, "RegistryHarness.Open", h.Open)
	return &renv{o.clocked, o.s, h}
}

// clocked is what every environment of the suites starts from: its test,
// a context and the suite clock the store was opened on.
type clocked struct {
	t     *testing.T
	ctx   context.Context
	clock *testkit.Clock
}

// tick advances the clock one second, so rows made one after the other
// have distinct, ordered times.
func (e clocked) tick() { e.clock.Advance(time.Second) }

// opened is a fresh store of a suite on its clock: where the suites'
// environments start.
type opened[S any] struct {
	clocked
	s S
}

// openOnClock opens a fresh store with open (what names it) on a clock at
// Epoch, closed, its error reported, when t ends.
func openOnClock[S interface{ Close() error }](t *testing.T, what string, open func(*testing.T, sessiondb.Clock) S) opened[S] {
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
	return opened[S]{clocked{t, context.Background(), c}, s}
}

// reopen returns a second handle on e's registry on the same clock.
func (e *renv) reopen() sessiondb.Registry {
	e.t.Helper()
	return e.h.reopen(e.t, e.r, e.clock.Now)
}

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
