package http_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	sdbhttp "github.com/sessiondb/sessiondb/http"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestRegistryAndSubagents(t *testing.T) {
	f := newFixture(t, sdbhttp.Config{})
	dir := t.TempDir()
	reg, err := sqlite.OpenCentral(ctxb, filepath.Join(dir, "v2.db"), sqlite.CentralOptions{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
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
	sub, err := sqlite.OpenSubagents(ctxb, filepath.Join(dir, "state.sqlite"), sqlite.SubagentOptions{Now: f.clock.Now})
	must(err)
	defer sub.Close()

	f.serve(sdbhttp.Config{Registry: reg, Subagents: sub})
	var groups struct {
		AgentGroups []sessiondb.AgentGroup `json:"agent_groups"`
	}
	f.get("/api/v1/registry/agent-groups").ok(t, &groups)
	if len(groups.AgentGroups) != 1 || groups.AgentGroups[0].Name != "Helper <b>" {
		t.Fatalf("agent groups %+v", groups)
	}
	var mgs struct {
		MessagingGroups []sessiondb.MessagingGroup `json:"messaging_groups"`
	}
	f.get("/api/v1/registry/messaging-groups?channel_type=telegram").ok(t, &mgs)
	if len(mgs.MessagingGroups) != 1 {
		t.Fatalf("messaging groups %+v", mgs)
	}
	var ws struct{ Wirings []sessiondb.Wiring }
	f.get("/api/v1/registry/wirings?agent_group=ag1").ok(t, &ws)
	if len(ws.Wirings) != 1 || ws.Wirings[0].ID != "w1" {
		t.Fatalf("wirings %+v", ws)
	}
	var sp sessiondb.AgentSessionPage
	f.get("/api/v1/registry/sessions?agent_group=ag1").ok(t, &sp)
	if len(sp.Sessions) != 1 || sp.Sessions[0].ID != sess.ID {
		t.Fatalf("sessions %+v", sp)
	}
	var qs struct{ Questions []sessiondb.PendingQuestion }
	f.get("/api/v1/registry/questions").ok(t, &qs)
	if len(qs.Questions) != 1 || qs.Questions[0].Title != "Deploy?" {
		t.Fatalf("questions %+v", qs)
	}
	var as struct {
		Approvals        []sessiondb.PendingApproval
		SenderApprovals  []sessiondb.PendingSenderApproval  `json:"sender_approvals"`
		ChannelApprovals []sessiondb.PendingChannelApproval `json:"channel_approvals"`
	}
	f.get("/api/v1/registry/approvals?status=pending").ok(t, &as)
	if len(as.Approvals) != 1 || as.Approvals[0].Action != "install_packages" || as.SenderApprovals == nil || as.ChannelApprovals == nil {
		t.Fatalf("approvals %+v", as)
	}
	var ds struct{ Dropped []sessiondb.DroppedSender }
	f.get("/api/v1/registry/dropped").ok(t, &ds)
	if len(ds.Dropped) != 1 || ds.Dropped[0].SenderName != "Stranger" {
		t.Fatalf("dropped %+v", ds)
	}
	var subs sessiondb.SubagentPage
	f.get("/api/v1/subagents").ok(t, &subs)
	if subs.Subagents == nil || len(subs.Subagents) != 0 {
		t.Fatalf("subagents %+v", subs)
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
