package sessiondb

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestSubagentIdentity checks spec B2's derivations against SHA-256 digests
// computed outside Go (sha256sum of "C123:1234.567").
func TestSubagentIdentity(t *testing.T) {
	const digest = "627163f749e28451aee0f5ad4f7865e54d285d78aee2b1943ebdf7387fca8763"
	key := SubagentThreadKey("C123", "1234.567")
	if key != "C123:1234.567" {
		t.Fatalf("thread key = %q", key)
	}
	if got := SubagentID(key); got != "sa_"+digest[:16] {
		t.Errorf("SubagentID = %q, want sa_%s", got, digest[:16])
	}
	if got := SubagentSandboxName(key); got != "jane-"+digest[:12] {
		t.Errorf("SubagentSandboxName = %q, want jane-%s", got, digest[:12])
	}
	now := time.UnixMilli(1771632000123)
	s := NewSubagent("C123", "1234.567", "/home/sprite/sessions", now)
	if s.PISessionFile != "/home/sprite/sessions/sa_"+digest[:16]+".jsonl" || s.Status != SubagentIdle || s.Turns != 0 ||
		s.CreatedAt != 1771632000123 || s.UpdatedAt != s.CreatedAt {
		t.Errorf("NewSubagent = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("a fresh record does not validate: %v", err)
	}
	if !regexp.MustCompile(`^job_[0-9a-f]{8}$`).MatchString(NewSubagentJobID()) {
		t.Errorf("job id %q is not job_ and 8 hex digits", NewSubagentJobID())
	}
	if a, b := NewSubagentJobID(), NewSubagentJobID(); a == b {
		t.Errorf("two job ids are both %q", a)
	}
	// janebot's JSON: camelCase, NULL columns absent.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "key", "channelId", "threadTs", "sandboxName", "piSessionFile", "status", "turns", "createdAt", "updatedAt"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
	for _, k := range []string{"runningJobId", "lastJobId", "lastError"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has %s although it is NULL: %s", k, b)
		}
	}
	if s.JobID() != "" {
		t.Errorf("JobID of a fresh record = %q", s.JobID())
	}
	s.LastJobID = "job_old"
	if s.JobID() != "job_old" {
		t.Errorf("JobID reports %q, want the last job", s.JobID())
	}
	s.RunningJobID = "job_new"
	if s.JobID() != "job_new" {
		t.Errorf("JobID reports %q, want the running job", s.JobID())
	}
}

func TestSubagentValidate(t *testing.T) {
	ok := NewSubagent("C1", "1.2", "/s", time.UnixMilli(1))
	cases := []struct {
		name  string
		edit  func(*Subagent)
		field string
	}{
		{"valid", func(*Subagent) {}, ""},
		{"wrong key", func(s *Subagent) { s.Key = "C1:9" }, "key"},
		{"no id", func(s *Subagent) { s.ID = "" }, "id"},
		{"stored API word", func(s *Subagent) { s.Status = "completed" }, "status"},
		{"running without a job", func(s *Subagent) { s.Status = SubagentRunning }, "runningJobId"},
		{"negative turns", func(s *Subagent) { s.Turns = -1 }, "turns"},
		{"no sandbox", func(s *Subagent) { s.SandboxName = "" }, "sandboxName"},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		checkField(t, c.name, s.Validate(), c.field)
	}
}

func TestDefaultSubagentPath(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"override", map[string]string{"SESSION_DB_PATH": "/x/y.sqlite", "WORKSPACE_DIR": "/w"}, "/x/y.sqlite"},
		{"empty override counts as unset", map[string]string{"SESSION_DB_PATH": "", "WORKSPACE_DIR": "/w"}, "/w/.janebot/state.sqlite"},
		{"workspace", map[string]string{"WORKSPACE_DIR": "/w/"}, "/w/.janebot/state.sqlite"},
		{"cwd", map[string]string{}, "/cwd/.janebot/state.sqlite"},
		{"empty workspace is relative, as in janebot", map[string]string{"WORKSPACE_DIR": ""}, ".janebot/state.sqlite"},
	} {
		if got := DefaultSubagentPath(env(c.env), "/cwd"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
