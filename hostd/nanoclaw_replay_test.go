//go:build nanoclaw

package hostd

// These checks run NanoClaw's own code (node, and a NanoClaw checkout with
// its dependencies installed) against ours. CI has neither, so they are
// behind the build tag nanoclaw: go test ./... neither runs nor skips them.
// Run them by hand after changing the router's stored shapes or the
// command gate (see testdata/nanoclaw/run.sh):
//
//	SESSIONDB_NANOCLAW_DIR=~/src/nanoclaw go test -tags nanoclaw -run NanoClaw ./hostd/
//
// Under the tag they fail, never skip, when node or the checkout is missing.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nanoClawDir is $SESSIONDB_NANOCLAW_DIR, a NanoClaw checkout with its
// node_modules; the test fails without it or without node.
func nanoClawDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SESSIONDB_NANOCLAW_DIR")
	if dir == "" {
		t.Fatal("SESSIONDB_NANOCLAW_DIR must name a NanoClaw checkout with its node_modules installed (see testdata/nanoclaw/run.sh)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("SESSIONDB_NANOCLAW_DIR=%s has no node_modules: %v", dir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed to run NanoClaw's code: %v", err)
	}
	return dir
}

// runNanoClaw runs testdata/nanoclaw/run.sh with args over NanoClaw in dir.
func runNanoClaw(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("testdata", "nanoclaw", "run.sh"), args...)
	cmd.Env = append(os.Environ(), "NANOCLAW_DIR="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh %s: %v\n%s", args[0], err, b)
	}
}

// command-gate.json is what NanoClaw's code makes of the gate's cases
// today: run.sh gate, run again, writes the same file, so the fixture
// TestCommandGateAsNanoClaw replays is NanoClaw's and not edited by hand.
// (It needs the checkout's container/agent-runner/src too.)
func TestNanoClawCommandGateFixture(t *testing.T) {
	dir := nanoClawDir(t)
	out := filepath.Join(t.TempDir(), "command-gate.json")
	runNanoClaw(t, dir, "gate", out)
	got, err := os.ReadFile(out)
	must(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "nanoclaw", "command-gate.json"))
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("NanoClaw's code now makes another command-gate.json (%d bytes, the fixture %d): remake it with run.sh gate and read the difference", len(got), len(want))
	}
}

// Our requests, replayed by NanoClaw's own code: run.sh replay opens the
// registry our router wrote, clicks Allow and Connect through NanoClaw's
// response handlers, and reports what NanoClaw did: it adds both senders
// as members and writes each original message into a session, with our
// content, as NanoClaw's row of it.
func TestNanoClawReplaysOurApprovals(t *testing.T) {
	dir := nanoClawDir(t)
	c := nanoClawRegistry(t, "mg-bob")
	eve := Event{ChannelType: "telegram", PlatformID: "-100123", MessageID: "41", Sender: Sender{ID: "5", Name: "Eve"}, Text: "can I join?", IsGroup: true}
	if res := c.route(eve); res.ApprovalID == "" {
		t.Fatalf("no sender approval: %+v", res)
	}
	bob := Event{ChannelType: "telegram", PlatformID: "8", MessageID: "9", Sender: Sender{ID: "8", Name: "Bob"}, Text: "hello bot"}
	res := c.route(bob)
	if res.ApprovalID == "" {
		t.Fatalf("no channel approval: %+v", res)
	}
	ours := map[string]string{}
	for _, ev := range []Event{eve, bob} {
		content, err := ev.content()
		must(t, err)
		ours[ev.MessageID] = string(content)
	}
	must(t, c.reg.Close())

	out := filepath.Join(t.TempDir(), "replayed.json")
	runNanoClaw(t, dir, "replay", c.path, out)
	b, err := os.ReadFile(out)
	must(t, err)
	var got struct {
		Handled []struct {
			QuestionID string `json:"questionId"`
			Claimed    bool   `json:"claimed"`
		} `json:"handled"`
		Members []struct {
			UserID       string `json:"user_id"`
			AgentGroupID string `json:"agent_group_id"`
			AddedBy      string `json:"added_by"`
		} `json:"members"`
		Wirings []struct {
			MessagingGroupID string `json:"messaging_group_id"`
			EngageMode       string `json:"engage_mode"`
		} `json:"wirings"`
		Pending struct {
			Senders, Channels struct{ N int }
		} `json:"pending"`
		Sessions []struct {
			MessagesIn []struct {
				ID          string `json:"id"`
				Kind        string `json:"kind"`
				ChannelType string `json:"channel_type"`
				PlatformID  string `json:"platform_id"`
				Content     string `json:"content"`
				Trigger     int    `json:"trigger"`
			} `json:"messages_in"`
		} `json:"sessions"`
	}
	must(t, json.Unmarshal(b, &got))
	if len(got.Handled) != 2 || !got.Handled[0].Claimed || !got.Handled[1].Claimed || got.Pending.Senders.N != 0 || got.Pending.Channels.N != 0 {
		t.Fatalf("NanoClaw's handlers: %s", b)
	}
	members := map[string]string{}
	for _, m := range got.Members {
		members[m.UserID] = m.AgentGroupID + " by " + m.AddedBy
	}
	if members["telegram:5"] != "ag-1 by telegram:1" || members["telegram:8"] != "ag-1 by telegram:1" {
		t.Errorf("members %v", members)
	}
	for _, w := range got.Wirings {
		if w.MessagingGroupID == res.MessagingGroupID && w.EngageMode != "pattern" {
			t.Errorf("NanoClaw wired our DM as %s (it read threadId as a group's)", w.EngageMode)
		}
	}
	routed := map[string]string{}
	for _, s := range got.Sessions {
		for _, m := range s.MessagesIn {
			routed[m.ID] = m.ChannelType + "/" + m.PlatformID + " " + m.Kind + " " + m.Content
			if m.Trigger != 1 {
				t.Errorf("row %s trigger %d", m.ID, m.Trigger)
			}
		}
	}
	if routed["41:ag-1"] != "telegram/-100123 chat "+ours["41"] || routed["9:ag-1"] != "telegram/8 chat "+ours["9"] {
		t.Errorf("NanoClaw routed %v\nours %v", routed, ours)
	}
}
