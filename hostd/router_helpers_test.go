package hostd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
	"github.com/sessiondb/sessiondb/sqlite"
)

// recordingDeliverer is a channel deliverer that sends nowhere: it keeps
// every row it was handed, in order, and answers with a platform message
// id "pm-<n>". fail, when set, refuses rows whose routing platform id it
// names.
type recordingDeliverer struct {
	mu   sync.Mutex
	rows []sent
	fail map[string]error
}

type sent struct {
	Ref mailbox.SessionRef
	Row mailbox.OutboundRow
}

func (d *recordingDeliverer) Deliver(_ context.Context, ref mailbox.SessionRef, row mailbox.OutboundRow) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fail[row.Routing.PlatformID]; err != nil {
		return "", err
	}
	d.rows = append(d.rows, sent{ref, row})
	return "pm-" + string(rune('0'+len(d.rows))), nil
}

func (d *recordingDeliverer) sent() []sent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]sent(nil), d.rows...)
}

// cards returns the ask_question cards sent, decoded.
func (d *recordingDeliverer) cards(t testing.TB) []askQuestion {
	t.Helper()
	var out []askQuestion
	for _, s := range d.sent() {
		var q askQuestion
		if err := json.Unmarshal(s.Row.Content, &q); err == nil && q.Type == "ask_question" {
			out = append(out, q)
		}
	}
	return out
}

// recordingWaker counts wakes per session.
type recordingWaker struct {
	mu    sync.Mutex
	woken []mailbox.SessionRef
}

func (w *recordingWaker) Wake(_ context.Context, ref mailbox.SessionRef) error {
	w.mu.Lock()
	w.woken = append(w.woken, ref)
	w.mu.Unlock()
	return nil
}

func (w *recordingWaker) count(ref mailbox.SessionRef) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.woken {
		if r == ref {
			n++
		}
	}
	return n
}

// central is a router over a real central file and a real data root, on
// one test clock, with a recording deliverer and waker.
type central struct {
	t       *testing.T
	clk     *testkit.Clock
	path    string
	reg     *sqlite.Central
	host    *mailbox.Host
	router  *Router
	deliver *recordingDeliverer
	waker   *recordingWaker
}

func newCentral(t *testing.T) *central {
	t.Helper()
	dir := t.TempDir()
	c := &central{t: t, clk: newClock(), path: filepath.Join(dir, "v2.db"), deliver: &recordingDeliverer{}, waker: &recordingWaker{}}
	var err error
	c.reg, err = sqlite.OpenCentral(ctxb, c.path, sqlite.CentralOptions{Now: c.clk.Now})
	must(t, err)
	t.Cleanup(func() { c.reg.Close() })
	c.host, err = mailbox.NewHost(mailbox.HostOptions{Layout: mailbox.Layout{Root: filepath.Join(dir, "v2-sessions")}, Now: c.clk.Now})
	must(t, err)
	c.router, err = NewRouter(RouterConfig{Registry: c.reg, Host: c.host, Deliverer: c.deliver, Waker: c.waker})
	must(t, err)
	return c
}

func (c *central) group(id, name string) sessiondb.AgentGroup {
	c.t.Helper()
	g, err := c.reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: id, Name: name, Folder: id})
	must(c.t, err)
	return g
}

func (c *central) chat(id, channel, platformID, name string, isGroup bool, policy sessiondb.UnknownSenderPolicy) sessiondb.MessagingGroup {
	c.t.Helper()
	mg, err := c.reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: id, ChannelType: channel, PlatformID: platformID,
		Name: name, IsGroup: isGroup, UnknownSenderPolicy: policy})
	must(c.t, err)
	return mg
}

// wiredChat registers a telegram group chat wired to ag-1 in pattern mode
// with the default pattern (every message engages): the plain chat most
// tests route into.
func (c *central) wiredChat(id, platformID, name string, policy sessiondb.UnknownSenderPolicy) sessiondb.MessagingGroup {
	c.t.Helper()
	mg := c.chat(id, "telegram", platformID, name, true, policy)
	c.wire(sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: "ag-1", EngageMode: sessiondb.EngagePattern})
	return mg
}

func (c *central) wire(n sessiondb.NewWiring) sessiondb.Wiring {
	c.t.Helper()
	w, err := c.reg.CreateWiring(ctxb, n)
	must(c.t, err)
	return w.Wiring
}

// user creates a user and, when role is set, grants it globally.
func (c *central) user(id string, role sessiondb.Role) {
	c.t.Helper()
	_, _, err := c.reg.EnsureUser(ctxb, sessiondb.NewUser{ID: id})
	must(c.t, err)
	if role != "" {
		_, err := c.reg.GrantRole(ctxb, sessiondb.NewRoleGrant{UserID: id, Role: role})
		must(c.t, err)
	}
}

func (c *central) member(userID, agentGroupID string) {
	c.t.Helper()
	_, _, err := c.reg.EnsureUser(ctxb, sessiondb.NewUser{ID: userID})
	must(c.t, err)
	_, err = c.reg.AddMember(ctxb, userID, agentGroupID, "")
	must(c.t, err)
}

func (c *central) route(ev Event) RouteResult {
	c.t.Helper()
	res, err := c.router.Route(ctxb, ev)
	if err != nil {
		c.t.Fatalf("route %s: %v", ev.MessageID, err)
	}
	return res
}

func (c *central) click(cl Click) ClickResult {
	c.t.Helper()
	res, err := c.router.Click(ctxb, cl)
	if err != nil {
		c.t.Fatalf("click %s: %v", cl.CardID, err)
	}
	return res
}

// sessions lists the registry's sessions of a group.
func (c *central) sessions(agentGroupID string) []sessiondb.AgentSession {
	c.t.Helper()
	p, err := c.reg.ListAgentSessions(ctxb, sessiondb.AgentSessionFilter{AgentGroupID: agentGroupID})
	must(c.t, err)
	return p.Sessions
}

// inbound reads a session's messages_in rows.
func (c *central) inbound(ref mailbox.SessionRef) []mailbox.InboundRow {
	c.t.Helper()
	rows, err := c.host.InboundRows(ctxb, ref, 0)
	must(c.t, err)
	return rows
}

// centralQuery reads the central file through a fresh connection.
func (c *central) centralQuery(q string, args ...any) [][]any {
	c.t.Helper()
	return sqlitetest.QueryFile(c.t, c.path, q, args...)
}

func msg(id, text string) Event {
	return Event{ChannelType: "telegram", PlatformID: "chat-1", MessageID: id, Sender: Sender{ID: "42", Name: "Ann"}, Text: text, IsGroup: true}
}

func intp(n int) *int { return &n }
