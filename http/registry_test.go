package http_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
)

func TestRegistryAndSubagents(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	reg := f.registry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ag, err := reg.CreateAgentGroup(ctxb, sessiondb.NewAgentGroup{ID: "ag1", Name: "Helper <b>", Folder: "helper"})
	must(err)
	mg, err := reg.CreateMessagingGroup(ctxb, sessiondb.NewMessagingGroup{ID: "mg1", ChannelType: "telegram", PlatformID: "chat-1", Name: "Family"})
	must(err)
	_, err = reg.CreateWiring(ctxb, sessiondb.NewWiring{ID: "w1", MessagingGroupID: mg.ID, AgentGroupID: ag.ID, EngageMode: sessiondb.EngageMention, SessionMode: sessiondb.ModeShared})
	must(err)
	sess, _, err := reg.ResolveSession(ctxb, sessiondb.SessionLookup{AgentGroupID: ag.ID, MessagingGroupID: mg.ID, Mode: sessiondb.ModeShared})
	must(err)
	_, err = reg.AddQuestion(ctxb, sessiondb.NewQuestion{QuestionID: "q1", SessionID: sess.ID, MessageOutID: "m1", ChannelType: "telegram", PlatformID: "chat-1",
		Title: "Deploy?", Options: []sessiondb.QuestionOption{{Label: "Yes", SelectedLabel: "Yes!", Value: "yes"}}})
	must(err)
	_, err = reg.AddApproval(ctxb, sessiondb.NewApproval{ApprovalID: "a1", SessionID: sess.ID, RequestID: "r1", Action: "install_packages",
		Payload: json.RawMessage(`{}`), AgentGroupID: ag.ID, ExpiresAt: f.clock.Now().Add(time.Hour), Title: "Install?",
		Options: []sessiondb.QuestionOption{{Label: "OK", SelectedLabel: "OK", Value: "ok"}}})
	must(err)
	must(reg.RecordDroppedMessage(ctxb, sessiondb.DroppedMessage{ChannelType: "telegram", PlatformID: "chat-2", UserID: "u9", SenderName: "Stranger", Reason: sessiondb.DropUnknownSenderStrict}))

	f.serve(sdbhttp.Config{Registry: reg, Subagents: f.subagents()})
	// Each listing answers its rows under its key, a list even when empty.
	for _, c := range []struct {
		path, key   string
		rows        int
		field, want string // a field of the first row
	}{
		{"/api/v1/registry/agent-groups", "agent_groups", 1, "name", "Helper <b>"},
		{"/api/v1/registry/messaging-groups?channel_type=telegram", "messaging_groups", 1, "id", "mg1"},
		{"/api/v1/registry/wirings?agent_group=ag1", "wirings", 1, "id", "w1"},
		{"/api/v1/registry/sessions?agent_group=ag1", "sessions", 1, "id", sess.ID},
		{"/api/v1/registry/questions", "questions", 1, "title", "Deploy?"},
		{"/api/v1/registry/approvals?status=pending", "approvals", 1, "action", "install_packages"},
		{"/api/v1/registry/approvals?status=pending", "sender_approvals", 0, "", ""},
		{"/api/v1/registry/approvals?status=pending", "channel_approvals", 0, "", ""},
		{"/api/v1/registry/dropped", "dropped", 1, "sender_name", "Stranger"},
		{"/api/v1/subagents", "subagents", 0, "", ""},
	} {
		rows, _ := f.listing(c.path, c.key)
		if len(rows) != c.rows || c.rows > 0 && rows[0][c.field] != c.want {
			t.Errorf("%s: %s %v, want %d rows, the first with %s %q", c.path, c.key, rows, c.rows, c.field, c.want)
		}
	}
	f.get("/api/v1/registry/approvals?status=maybe").apiError(t, 400, "invalid")
	f.get("/api/v1/registry/sessions?status=dead").apiError(t, 400, "invalid")
	f.get("/api/v1/subagents?status=sleeping").apiError(t, 400, "invalid")
	f.get("/api/v1/subagents/none").apiError(t, 404, "not_found")

	// A server without them has no such routes.
	f.serve(sdbhttp.Config{})
	f.get("/api/v1/registry/agent-groups").apiError(t, 404, "not_found")
	f.get("/api/v1/subagents").apiError(t, 404, "not_found")
}
