// Package storetest is the behaviour every history-store backend must show:
// one conformance suite, written from spec/history-store.md, that each
// backend (sqlite/ now, postgres/ later) runs against its own stores.
//
// A backend's test calls Run with a Harness that opens a fresh, empty store
// on an injected clock:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{Open: func(t *testing.T, now sessiondb.Clock) sessiondb.Store { ... }})
//	}
//
// Subtests are grouped by section of the spec (sessions, titles, rich
// listing, messages, search, export and cleanup, fork, paging), then by the
// root's shared rules and services (FindSession and EachSession, import,
// usage, retention, and every method refusing what the root's Validate
// refuses), and every case is named so a failure says which rule broke.
package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Harness is how the suite reaches one backend.
type Harness struct {
	// Open returns a new, empty store whose clock is now. Each call must
	// give an independent store; calls may come from parallel tests. The
	// suite closes the store when the test ends.
	Open func(t *testing.T, now sessiondb.Clock) sessiondb.Store

	// SetMessageColumn overwrites one column of one stored message with raw
	// text, bypassing the store's API. The suite uses it to plant what
	// another program may have written (invalid JSON in tool_calls,
	// reasoning_details, codex_reasoning_items) and check how readers cope.
	// Every backend must provide it. column is always one of those three
	// names, from the suite's own code, so a backend may put it into its
	// statement as it is.
	SetMessageColumn func(t *testing.T, s sessiondb.Store, messageID int64, column, value string)
}

// Run runs the whole conformance suite against h. The groups run in
// parallel with each other; the cases inside a group run one by one.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("storetest: Harness.Open is nil")
	}
	runGroups(t, h, []group[Harness]{
		{"Sessions", testSessions},
		{"TokenCounts", testTokenCounts},
		{"Resolve", testResolve},
		{"SearchSessions", testSearchSessions},
		{"CompressionTip", testCompressionTip},
		{"Titles", testTitles},
		{"ListSessionsRich", testRich},
		{"ListSessions", testListSessions},
		{"ListingKinds", testListingKinds},
		{"ListingByChainActivity", testListingByChainActivity},
		{"ListingEscapedMarkers", testListingEscapedMarkers},
		{"Lineage", testLineage},
		{"ListSessionsUnderWrites", testListSessionsUnderWrites},
		{"Messages", testMessages},
		{"Conversation", testConversation},
		{"SearchMessages", testSearch},
		{"Export", testExport},
		{"ExportPages", testExportPages},
		{"Cleanup", testCleanup},
		{"DeleteDelegates", testDeleteDelegates},
		{"Archive", testArchive},
		{"Prune", testPrune},
		{"Fork", testFork},
		{"Paging", testPaging},
		{"Concurrency", testConcurrency},
		{"FindSession", testFindSession},
		{"EachSession", testEachSession},
		{"Import", testImport},
		{"Moves", testMoves},
		{"Usage", testUsage},
		{"Retention", testRetention},
		{"Validation", testValidation},
		{"SessionIDLimit", testSessionIDLimit},
	})
}

// group is one named group of a suite's cases.
type group[H any] struct {
	name string
	run  func(*testing.T, H)
}

// runGroups runs each group against h as a parallel subtest, in order.
func runGroups[H any](t *testing.T, h H, groups []group[H]) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { t.Parallel(); g.run(t, h) })
	}
}

// Epoch is where every suite clock starts: 2026-03-15 09:24:37 UTC, a time
// with a whole number of seconds so stored REAL values compare exactly.
var Epoch = time.Date(2026, 3, 15, 9, 24, 37, 0, time.UTC)

// env is one fresh store with its clock and the helpers the cases share.
type env struct{ opened[sessiondb.Store] }

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	return &env{openOnClock(t, "Harness.Open", h.Open)}
}

// now is the clock's time as state.db stores it.
func (e *env) now() float64 { return sessiondb.EpochSeconds(e.clock.Now()) }

// create makes a session with the given id and source, then ticks.
func (e *env) create(id, source string) {
	e.t.Helper()
	e.createWith(sessiondb.NewSession{ID: id, Source: source})
}

func (e *env) createWith(ns sessiondb.NewSession) {
	e.t.Helper()
	got, err := e.s.CreateSession(e.ctx, ns)
	if err != nil {
		e.t.Fatalf("CreateSession(%q): %v", ns.ID, err)
	}
	if got != ns.ID {
		e.t.Fatalf("CreateSession(%q) returned id %q", ns.ID, got)
	}
	e.tick()
}

// child makes a session whose parent is parent, then ticks.
func (e *env) child(id, parent string) {
	e.t.Helper()
	e.createWith(sessiondb.NewSession{ID: id, Source: "cli", ParentSessionID: parent})
}

func (e *env) end(id, reason string) {
	e.t.Helper()
	if err := e.s.EndSession(e.ctx, id, reason); err != nil {
		e.t.Fatalf("EndSession(%q, %q): %v", id, reason, err)
	}
	e.tick()
}

// msg appends a plain message and returns its id.
func (e *env) msg(sid, role, content string) int64 {
	e.t.Helper()
	return e.append(sessiondb.NewMessage{SessionID: sid, Role: role, Content: &content})
}

func (e *env) append(m sessiondb.NewMessage) int64 {
	e.t.Helper()
	id, err := e.s.AppendMessage(e.ctx, m)
	if err != nil {
		e.t.Fatalf("AppendMessage(%q, %q): %v", m.SessionID, m.Role, err)
	}
	e.tick()
	return id
}

func (e *env) get(id string) *sessiondb.Session {
	e.t.Helper()
	s, err := e.s.GetSession(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetSession(%q): %v", id, err)
	}
	if s == nil {
		e.t.Fatalf("GetSession(%q) returned nil without an error", id)
	}
	return s
}

func (e *env) messages(sid string) []sessiondb.Message {
	e.t.Helper()
	ms, err := e.s.GetMessages(e.ctx, sid)
	if err != nil {
		e.t.Fatalf("GetMessages(%q): %v", sid, err)
	}
	return ms
}

func (e *env) setTitle(id, title string) {
	e.t.Helper()
	if _, err := e.s.SetSessionTitle(e.ctx, id, title); err != nil {
		e.t.Fatalf("SetSessionTitle(%q, %q): %v", id, title, err)
	}
}

func str(s string) *string   { return &s }
func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// deref shows a nullable string in messages; NULL reads "<nil>".
func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// derefF shows a nullable REAL in messages.
func derefF(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want code %q", what, code)
	}
	if got := sessiondb.ErrorCode(err); got != code {
		t.Fatalf("%s: got error %v with code %q, want code %q", what, err, got, code)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// normJSON returns v as generic JSON (maps, slices, float64, strings), so
// values built by different code compare with reflect.DeepEqual.
func normJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

// jsonText decodes JSON text to a generic value; invalid text fails.
func jsonText(t *testing.T, s string) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("invalid JSON %q: %v", s, err)
	}
	return out
}

// pluck returns f of each element of in, in order.
func pluck[T, V any](in []T, f func(T) V) []V {
	out := make([]V, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func ids(ss []sessiondb.Session) []string {
	return pluck(ss, func(s sessiondb.Session) string { return s.ID })
}

func msgIDs(ms []sessiondb.Message) []int64 {
	return pluck(ms, func(m sessiondb.Message) int64 { return m.ID })
}

// sorted returns a sorted copy of in, nil when in is empty, so an empty
// result and an empty want compare equal whichever is nil.
func sorted[T cmp.Ordered](in []T) []T {
	out := append([]T(nil), in...)
	slices.Sort(out)
	return out
}

var errStop = errors.New("storetest: stop")
