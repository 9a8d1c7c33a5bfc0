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
