package hostd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
)

var ctxb = context.Background()

func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// fixture is one initialized session under a fresh data root, with a Host
// on a test clock.
type fixture struct {
	t     *testing.T
	clk   *testkit.Clock
	host  *mailbox.Host
	ref   mailbox.SessionRef
	dir   string
	agent *mailbox.Agent
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := newClock()
	h, ref, dir := newHost(t, clk.Now)
	return &fixture{t: t, clk: clk, host: h, ref: ref, dir: dir}
}

// newHost is a Host over a fresh data root, on now (nil: the wall clock,
// for tests that run the daemon on its own timers), with the session
// ag-1/sess-1 initialized; it returns the session and its folder.
func newHost(t *testing.T, now func() time.Time) (*mailbox.Host, mailbox.SessionRef, string) {
	t.Helper()
	h, err := mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(t.TempDir(), "v2-sessions")}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ref := mailbox.SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	if err := h.InitSession(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	dir, _ := h.Layout().SessionDir(ref)
	return h, ref, dir
}

func (f *fixture) openAgent() *mailbox.Agent {
	f.t.Helper()
	if f.agent != nil {
		return f.agent
	}
	a, err := mailbox.OpenAgent(ctxb, f.dir, mailbox.AgentOptions{Now: f.clk.Now, PollInterval: 20 * time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { a.Close() })
	f.agent = a
	return a
}

func (f *fixture) enqueue(m mailbox.InboundMessage) int64 {
	f.t.Helper()
	seq, _, err := f.host.Enqueue(ctxb, f.ref, m)
	if err != nil {
		f.t.Fatalf("enqueue %s: %v", m.ID, err)
	}
	return seq
}

// query runs a read on one of the session's files through a fresh
// read-only connection.
func (f *fixture) query(file string, q string, args ...any) [][]any {
	f.t.Helper()
	return sqlitetest.QueryFile(f.t, filepath.Join(f.dir, file), q, args...)
}

// one reads the one value a query of one of the session's files answers.
func (f *fixture) one(file, q string, args ...any) any {
	f.t.Helper()
	return sqlitetest.QueryValue(f.t, filepath.Join(f.dir, file), q, args...)
}

func jsonc(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := mailbox.MarshalContent(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func chat(id, text string) mailbox.InboundMessage {
	c, _ := mailbox.MarshalContent(map[string]string{"sender": "u", "senderId": "u1", "text": text})
	return mailbox.InboundMessage{ID: id, Kind: mailbox.KindChat, Content: c,
		Routing: mailbox.Routing{ChannelType: "slack", PlatformID: "C1"}}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := sessiondb.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
