package sessiondb

import (
	"strings"
	"testing"
)

func TestCheckSafeName(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
		why  string // part of the refusal
	}{
		{"plain", "sess-1", true, ""},
		{"nanoclaw id with colons", "slack:C123:1700000000.000100:ag-1", true, ""},
		{"unicode", "séance", true, ""},
		{"255 bytes", strings.Repeat("a", 255), true, ""},
		{"empty", "", false, "is empty"},
		{"dot", ".", false, "relative folder"},
		{"dotdot", "..", false, "relative folder"},
		{"parent escape", "../x", false, "path separator"},
		{"slash", "a/b", false, "path separator"},
		{"backslash", `a\b`, false, "path separator"},
		{"nul", "a\x00b", false, "NUL"},
		{"newline", "a\nb", false, "control character"},
		{"del", "a\x7fb", false, "control character"},
		{"c1 control", "a\u0085b", false, "control character"},
		{"300 bytes", strings.Repeat("a", 300), false, "300 bytes"},
		{"invalid utf8", "a\xffb", false, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSafeName("session_id", c.in)
			if c.ok {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if ErrorCode(err) != EINVALID {
				t.Fatalf("err = %v (code %q), want invalid", err, ErrorCode(err))
			}
			if !strings.Contains(err.Error(), "session_id") || !strings.Contains(err.Error(), c.why) {
				t.Errorf("error %q does not name the field and say %q", err, c.why)
			}
		})
	}
	t.Run("long names are quoted cut", func(t *testing.T) {
		err := CheckSafeName("f", strings.Repeat("z", 300))
		if n := strings.Count(err.Error(), "z"); n != 64 {
			t.Errorf("error %q quotes %d bytes of the name, want 64", err, n)
		}
	})
}

func TestSessionRef(t *testing.T) {
	cases := []struct {
		name  string
		ref   SessionRef
		field string // the refusal names it; "" = valid
	}{
		{"valid", SessionRef{AgentGroupID: "ag-1", SessionID: "sess-1"}, ""},
		{"bad group", SessionRef{AgentGroupID: "a/b", SessionID: "s"}, "agent_group_id"},
		{"empty group", SessionRef{SessionID: "s"}, "agent_group_id"},
		{"bad session", SessionRef{AgentGroupID: "ag", SessionID: ".."}, "session_id"},
		{"empty session", SessionRef{AgentGroupID: "ag"}, "session_id"},
		{"group named as the host's socket", SessionRef{AgentGroupID: "host.sock", SessionID: "s"}, "agent_group_id"},
		{"session may be named so", SessionRef{AgentGroupID: "ag", SessionID: "host.sock"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.ref.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate(%v) = %v", c.ref, err)
				}
				return
			}
			if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), c.field) {
				t.Errorf("Validate(%v) = %v, want invalid naming %s", c.ref, err, c.field)
			}
		})
	}
	if s := (SessionRef{AgentGroupID: "ag", SessionID: "s1"}).String(); s != "ag/s1" {
		t.Errorf("String() = %q, want ag/s1", s)
	}
}

// The names a host writes in its data root are no agent group id, in any
// letter case; names that only resemble them are.
func TestCheckAgentGroupID(t *testing.T) {
	for _, id := range []string{"host.sock", ".sessiondb-host.json", ".sessiondb-host.lock", ".sessiondb-host.token",
		"HOST.SOCK", ".SessionDB-Host.JSON"} {
		err := CheckAgentGroupID("agent_group_id", id)
		if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "agent_group_id") || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("CheckAgentGroupID(%q) = %v, want invalid naming the field and saying reserved", id, err)
		}
		if err := (NewAgentGroup{ID: id, Name: "n", Folder: "f"}).Validate(); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("NewAgentGroup{ID: %q}.Validate() = %v, want reserved", id, err)
		}
	}
	for _, id := range []string{"ag-1", "host.socket", "sessiondb-host.json", "host.sock.bak", ".host.sock.tmp-1", ".sessiondb-hosts.json"} {
		if err := CheckAgentGroupID("agent_group_id", id); err != nil {
			t.Errorf("CheckAgentGroupID(%q) = %v, want nil", id, err)
		}
	}
	if err := CheckAgentGroupID("id", "a/b"); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "path separator") {
		t.Errorf("an unsafe id: %v, want CheckSafeName's refusal", err)
	}
	// A group created without an id gets a generated one.
	if err := (NewAgentGroup{Name: "n", Folder: "f"}).Validate(); err != nil {
		t.Errorf("no id: %v", err)
	}
}
