package mailbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
)

func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

var ctxb = context.Background()

type fixture struct {
	t     *testing.T
	clk   *testkit.Clock
	host  *Host
	ref   SessionRef
	dir   string
	agent *Agent
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := newClock()
	h, err := NewHost(HostOptions{Layout: Layout{Root: filepath.Join(t.TempDir(), "v2-sessions")}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ref := SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}
	if err := h.InitSession(ctxb, ref); err != nil {
		t.Fatal(err)
	}
	dir, _ := h.layout.SessionDir(ref)
	f := &fixture{t: t, clk: clk, host: h, ref: ref, dir: dir}
	return f
}

// newAgentFixture is newFixture with the session's agent side open: the
// start of most agent tests.
func newAgentFixture(t *testing.T) (*fixture, *Agent) {
	t.Helper()
	f := newFixture(t)
	return f, f.openAgent()
}

func (f *fixture) openAgent() *Agent {
	f.t.Helper()
	if f.agent != nil {
		return f.agent
	}
	a, err := OpenAgent(ctxb, f.dir, AgentOptions{Now: f.clk.Now, PollInterval: 20 * time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { a.Close() })
	f.agent = a
	return a
}

func jsonc(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := MarshalContent(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func chat(id, text string) InboundMessage {
	return InboundMessage{ID: id, Kind: KindChat, Content: json.RawMessage(`{"sender":"u","senderId":"u1","text":` + string(marshalCompact(text)) + `}`),
		Routing: Routing{ChannelType: "slack", PlatformID: "C1"}}
}

func (f *fixture) enqueue(m InboundMessage) int64 {
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

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := sessiondb.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func ids(rows []InboundRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func removeIfExists(p string) error {
	err := os.Remove(p)
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

type ctxT = context.Context

func writeTemp(t testing.TB, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
