package uitest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/examples"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/mailbox"
	"github.com/sessiondb/sessiondb/sqlite"
)

const testToken = "ui-test-token"

var ctxb = context.Background()

// site is a server over a real store, as `sessiondb serve` runs it: the
// example conversations, a session crafted to break out of the page, a
// long session, and (with mailboxes) a data root of session mailboxes.
type site struct {
	t    testing.TB
	path string
	st   *sqlite.Store
	url  string
	host *mailbox.Host
	root string
}

// The hostile session: every text a page shows from it is crafted to
// break out of its place (an attribute, an element, a script, a link, the
// terminal), and each payload would set window.pwned if it ran.
const (
	hostileID     = `evil"><svg onload=pwned=1>`
	hostileSource = `web"><script>pwned=2</script>`
	hostileTitle  = `"><img src=x onerror="pwned=3"></script><script>pwned=4</script>`
	hostileUser   = `see [this](javascript:pwned=5) or <a href="javascript:pwned=6">that</a>`
	hostileTool   = "\x1b]0;PWNED\x07\x1b[2J</pre></details><script>pwned=7</script><img src=x onerror=pwned=8> javascript:pwned=9 \u202eevil"
	hostileArgs   = `{"cmd":"</script><script>pwned=10</script>"}`
	hostileReason = `<iframe src="javascript:pwned=11"></iframe>`
	hostileName   = `<b onmouseover=pwned=12>bash</b>`
	// hostileImage is multimodal content (a newer Hermes' "\x00json:"
	// form): text and an image whose URL is a script.
	hostileImage = "\x00json:" + `[{"type":"text","text":"look: <img src=x onerror=pwned=13>"},{"type":"image_url","image_url":{"url":"javascript:pwned=14"}},{"type":"image_url","image_url":{"url":"https://images.example.com/cat.png?sig=secret"}}]`
)

// longID is a session with more messages than a transcript page and a
// tool output longer than the page shows.
const longID = "long_session_0001"

// longOutputLines is the long tool output's line count.
const longOutputLines = 400

// siteOptions say which parts a site serves beside the history store.
type siteOptions struct {
	mailboxes, registry, subagents bool
	// examplesOnly leaves out the hostile and long sessions: the store as
	// `sessiondb quickstart` leaves it.
	examplesOnly bool
	// token is the server's token; "" means testToken.
	token string
	// readOnly serves as `serve --read-only` does.
	readOnly bool
	// hermes21 serves a copy of the schema-21 fixture Hermes wrote
	// (sqlite/testdata/hermes21) instead of the examples; plant runs on
	// the copy's path before it is opened.
	hermes21 bool
	plant    func(path string)
}

// newSite builds the stores o asks for and serves them.
func newSite(t testing.TB, o siteOptions) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{t: t, path: filepath.Join(dir, "state.db")}
	if o.hermes21 {
		b, err := os.ReadFile(filepath.Join("..", "..", "sqlite", "testdata", "hermes21", "state.db"))
		if err == nil {
			err = os.WriteFile(s.path, b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if o.plant != nil {
			o.plant(s.path)
		}
	}
	st, err := sqlite.Open(ctxb, s.path, sqlite.Options{})
	s.st = testkit.Opened(t, st, err)
	if !o.hermes21 {
		s.importExamples()
	}
	if !o.examplesOnly && !o.hermes21 {
		s.addHostile()
		s.addLong()
	}
	if o.token == "" {
		o.token = testToken
	}
	cfg := sdbhttp.Config{History: s.st, Token: o.token, ReadOnly: o.readOnly}
	if o.registry {
		cfg.Registry = newRegistry(t)
	}
	if o.subagents {
		cfg.Subagents = newSubagents(t)
	}
	if o.mailboxes {
		s.root = filepath.Join(dir, "v2-sessions")
		s.addMailboxes()
		cfg.Mailboxes, cfg.DataRoot = s.host, s.root
	}
	srv, err := sdbhttp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { srv.Close() })
	s.url = ts.URL
	return s
}

// visit builds a site and opens its page at path in a new tab.
func visit(t testing.TB, o siteOptions, path string) (*site, *page) {
	t.Helper()
	s := newSite(t, o)
	p := newPage(t)
	p.open(s.url + path)
	return s, p
}

func (s *site) importExamples() {
	s.t.Helper()
	sc := bufio.NewScanner(examples.Conversations())
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	var recs []map[string]any
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			s.t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if _, err := s.st.ImportSessions(ctxb, recs, sessiondb.ImportOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// msg appends a message to the store from this process.
func (s *site) msg(m sessiondb.NewMessage) int64 {
	s.t.Helper()
	id, err := s.st.AppendMessage(ctxb, m)
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

// sessionMsg is a plain message of a session.
func sessionMsg(session, role, content string) sessiondb.NewMessage {
	return sessiondb.NewMessage{SessionID: session, Role: role, Content: &content}
}

// session creates a session.
func (s *site) session(id, source, model, title string) {
	s.t.Helper()
	if _, err := s.st.CreateSession(ctxb, sessiondb.NewSession{ID: id, Source: source, Model: model}); err != nil {
		s.t.Fatal(err)
	}
	if title != "" {
		if _, err := s.st.SetSessionTitle(ctxb, id, title); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *site) addHostile() {
	s.t.Helper()
	s.session(hostileID, hostileSource, "evil/model", hostileTitle)
	s.msg(sessiondb.NewMessage{SessionID: hostileID, Role: "user", Content: ptr(hostileUser)})
	s.msg(sessiondb.NewMessage{SessionID: hostileID, Role: "assistant", Reasoning: ptr(hostileReason),
		ToolCalls: []map[string]any{{"id": "call_evil", "type": "function", "function": map[string]any{"name": hostileName, "arguments": hostileArgs}}}})
	s.msg(sessiondb.NewMessage{SessionID: hostileID, Role: "tool", ToolCallID: ptr("call_evil"), ToolName: ptr(hostileName), Content: ptr(hostileTool)})
	s.msg(sessiondb.NewMessage{SessionID: hostileID, Role: "user", Content: ptr(hostileImage)})
}

// longOutput is the long session's tool output: numbered lines, the last
// one marked so a test can tell the whole text from its start.
func longOutput() string {
	var b strings.Builder
	for i := 1; i <= longOutputLines; i++ {
		fmt.Fprintf(&b, "line %03d of the build log: ok\n", i)
	}
	b.WriteString("END OF THE LONG OUTPUT")
	return b.String()
}

func (s *site) addLong() {
	s.t.Helper()
	s.session(longID, "cli", "anthropic/claude-sonnet-4.6", "A long debugging session")
	s.msg(sessiondb.NewMessage{SessionID: longID, Role: "user", Content: ptr("Run the build and show me the whole log.")})
	s.msg(sessiondb.NewMessage{SessionID: longID, Role: "assistant", Content: ptr("Running it."),
		ToolCalls: []map[string]any{{"id": "call_build", "type": "function", "function": map[string]any{"name": "terminal", "arguments": `{"command":"make build"}`}}}})
	s.msg(sessiondb.NewMessage{SessionID: longID, Role: "tool", ToolCallID: ptr("call_build"), ToolName: ptr("terminal"), Content: ptr(longOutput())})
	for i := 1; i <= 70; i++ {
		s.msg(sessiondb.NewMessage{SessionID: longID, Role: "user", Content: ptr(fmt.Sprintf("Question %d: what does step %d do?", i, i))})
		s.msg(sessiondb.NewMessage{SessionID: longID, Role: "assistant", Content: ptr(fmt.Sprintf("Answer %d: step %d compiles one package.", i, i))})
	}
}
