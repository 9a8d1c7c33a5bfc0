package hostd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// discordAsking is a Discord group chat wired to ag-1 that asks about
// unknown senders, whose only approver is the owner discord:U1.
func discordAsking(t *testing.T, dms sessiondb.DMOpener) *central {
	t.Helper()
	c := newCentral(t)
	if dms != nil {
		var err error
		c.router, err = NewRouter(RouterConfig{Registry: c.reg, Host: c.host, Deliverer: c.deliver, Waker: c.waker, DMs: dms})
		must(t, err)
	}
	c.group("ag-1", "Helper")
	mg := c.chat("mg-d", "discord", "C1", "General", true, sessiondb.PolicyRequestApproval)
	c.wire(sessiondb.NewWiring{MessagingGroupID: mg.ID, AgentGroupID: "ag-1", EngageMode: sessiondb.EngagePattern})
	c.user("discord:U1", sessiondb.RoleOwner)
	return c
}

func stranger(id string) Event {
	return Event{ChannelType: "discord", PlatformID: "C1", MessageID: id, Sender: Sender{ID: "U9", Name: "Eve"}, Text: "hi", IsGroup: true}
}

// Without a DM opener, an approver on Discord (whose DM chat the platform
// must open) cannot be sent a card: the route result says why, no card
// goes out, and no DM is cached: neither a user_dms row nor a chat named
// by the raw handle, which NanoClaw would then reuse.
func TestApprovalWithoutDMOpenerCachesNoGuess(t *testing.T) {
	c := discordAsking(t, nil)
	res := c.route(stranger("m1"))
	if res.Outcome != RouteDropped || res.ApprovalID != "" || len(res.Warnings) != 1 ||
		!strings.Contains(res.Warnings[0], "card cannot be delivered") || !strings.Contains(res.Warnings[0], "discord:U1") ||
		!strings.Contains(res.Warnings[0], "a discord DM must be opened by the platform and no DM opener is configured") {
		t.Fatalf("route %+v", res)
	}
	if sent := c.deliver.sent(); len(sent) != 0 {
		t.Fatalf("a card went to %+v", sent[0].Row.Routing)
	}
	if got := c.centralQuery("SELECT COUNT(*) FROM user_dms"); got[0][0] != int64(0) {
		t.Errorf("%v user_dms rows cached", got[0][0])
	}
	if got := c.centralQuery("SELECT COUNT(*) FROM messaging_groups WHERE platform_id = 'U1'"); got[0][0] != int64(0) {
		t.Errorf("a chat was made of the raw handle")
	}
	// A guess an earlier version cached is not trusted either.
	_, err := c.reg.SaveUserDM(ctxb, sessiondb.NewUserDM{UserID: "discord:U1", ChannelType: "discord", PlatformID: "U1"})
	must(t, err)
	if res := c.route(stranger("m2")); res.ApprovalID != "" || len(c.deliver.sent()) != 0 {
		t.Fatalf("a card went to the guessed DM: %+v", res)
	}

	// On Telegram the handle is the DM chat: no opener is needed.
	c.chat("mg-t", "telegram", "-100", "Team", true, sessiondb.PolicyRequestApproval)
	c.wire(sessiondb.NewWiring{MessagingGroupID: "mg-t", AgentGroupID: "ag-1", EngageMode: sessiondb.EngagePattern})
	c.user("telegram:1", sessiondb.RoleOwner)
	res = c.route(Event{ChannelType: "telegram", PlatformID: "-100", MessageID: "m3", Sender: Sender{ID: "9"}, Text: "hi", IsGroup: true})
	if sent := c.deliver.sent(); res.ApprovalID == "" || len(sent) != 1 || sent[0].Row.Routing.PlatformID != "1" {
		t.Fatalf("telegram: %+v, sent %+v", res, sent)
	}
}

// execOpener writes a DM opener script that logs each request it is given
// and answers "D-<handle>"; it fails for handle "blocked".
func execOpener(t *testing.T) (*ExecDMOpener, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "asked")
	script := filepath.Join(dir, "open-dm.sh")
	must(t, os.WriteFile(script, []byte(`#!/bin/sh
cat >> "`+log+`"
if [ "$SESSIONDB_DM_HANDLE" = blocked ]; then echo "the user blocked the bot" >&2; exit 3; fi
echo "opening a $SESSIONDB_DM_CHANNEL DM"
echo "{\"platform_id\":\"D-$SESSIONDB_DM_HANDLE\"}"
`), 0o700))
	return &ExecDMOpener{Command: script}, log
}

// With an exec DM opener, the chat it opens is where the card goes, and it
// is cached: the next card needs no opener run. A guess an earlier version
// cached is replaced by the opened chat. An opener that fails says why,
// and nothing is cached.
func TestExecDMOpenerOpensAndCaches(t *testing.T) {
	opener, asked := execOpener(t)
	c := discordAsking(t, opener)
	_, err := c.reg.SaveUserDM(ctxb, sessiondb.NewUserDM{UserID: "discord:U1", ChannelType: "discord", PlatformID: "U1"})
	must(t, err)

	res := c.route(stranger("m1"))
	sent := c.deliver.sent()
	if res.ApprovalID == "" || len(res.Warnings) != 0 || len(sent) != 1 ||
		sent[0].Row.Routing.ChannelType != "discord" || sent[0].Row.Routing.PlatformID != "D-U1" {
		t.Fatalf("route %+v, sent %+v", res, sent)
	}
	dm, err := c.reg.GetUserDM(ctxb, "discord:U1", "discord")
	must(t, err)
	mg, err := c.reg.GetMessagingGroup(ctxb, dm.MessagingGroupID)
	must(t, err)
	if mg.PlatformID != "D-U1" || mg.IsGroup {
		t.Fatalf("cached DM chat %+v", mg)
	}
	// Another stranger: the cached DM, no second run.
	ev := stranger("m2")
	ev.Sender = Sender{ID: "U8"}
	c.route(ev)
	if sent := c.deliver.sent(); len(sent) != 2 || sent[1].Row.Routing.PlatformID != "D-U1" {
		t.Fatalf("second card %+v", sent)
	}
	b, err := os.ReadFile(asked)
	must(t, err)
	if string(b) != `{"channel_type":"discord","handle":"U1"}`+"\n" {
		t.Fatalf("the opener was given %q", b)
	}

	// An approver the opener cannot reach.
	c.user("discord:blocked", sessiondb.RoleOwner)
	_, err = c.reg.RevokeRole(ctxb, "discord:U1", sessiondb.RoleOwner, "")
	must(t, err)
	ev = stranger("m3")
	ev.Sender = Sender{ID: "U7"}
	res = c.route(ev)
	if res.ApprovalID != "" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "the user blocked the bot") {
		t.Fatalf("unreachable approver: %+v", res)
	}
	if _, err := c.reg.GetUserDM(ctxb, "discord:blocked", "discord"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("a DM was cached for the unreachable approver: %v", err)
	}
}

// The webhook opener posts the request and reads the chat from a 2xx (as
// JSON or plain text); an error status or {"error"} is unreachable, and
// neither follows a redirect. Bad specs are refused naming what is wrong.
func TestWebhookDMOpener(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/json":
			w.Write([]byte(`{"platform_id":"D123"}`))
		case "/plain":
			w.Write([]byte("D456\n"))
		case "/refuse":
			w.Write([]byte(`{"error":"user not found"}`))
		case "/moved":
			http.Redirect(w, r, "/json", http.StatusTemporaryRedirect)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ path, want, fails string }{
		{"/json", "D123", ""}, {"/plain", "D456", ""}, {"/refuse", "", "user not found"},
		{"/moved", "", "307"}, {"/down", "", "500"},
	} {
		o, err := NewDMOpener("webhook:"+srv.URL+tc.path, 0)
		must(t, err)
		got, err := o.OpenDM(ctxb, "slack", "U1")
		if got != tc.want || (tc.fails == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.fails)) {
			t.Errorf("%s: %q, %v", tc.path, got, err)
		}
	}
	for spec, want := range map[string]string{"smtp:x": "exec:CMD or webhook:URL", "exec: ": "empty", "webhook:/relative": "absolute"} {
		if _, err := NewDMOpener(spec, 0); sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", spec, err)
		}
	}
}
