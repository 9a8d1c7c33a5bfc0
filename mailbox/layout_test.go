package mailbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestHostileRefsTouchNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	h, err := NewHost(HostOptions{Layout: Layout{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		ref   SessionRef
		field string
	}{
		{"parent session", SessionRef{AgentGroupID: "ag", SessionID: "../x"}, "session_id"},
		{"slash group", SessionRef{AgentGroupID: "a/b", SessionID: "s"}, "agent_group_id"},
		{"nul session", SessionRef{AgentGroupID: "ag", SessionID: "s\x00"}, "session_id"},
		{"long group", SessionRef{AgentGroupID: strings.Repeat("g", 300), SessionID: "s"}, "agent_group_id"},
		{"dotdot group", SessionRef{AgentGroupID: "..", SessionID: "s"}, "agent_group_id"},
		{"empty session", SessionRef{AgentGroupID: "ag", SessionID: ""}, "session_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := h.InitSession(ctxb, c.ref)
			wantCode(t, err, sessiondb.EINVALID)
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %q does not name %s", err, c.field)
			}
			_, _, err = h.Enqueue(ctxb, c.ref, chat("m1", "x"))
			wantCode(t, err, sessiondb.EINVALID)
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Fatalf("root was created for a refused ref (stat err %v)", err)
			}
		})
	}
}

func TestInitSessionFilesModesAndSchema(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name string
		mode os.FileMode
	}{
		{"", 0o700},
		{InboundFile, 0o600},
		{OutboundFile, 0o600},
		{OutboxDirName, 0o700},
		{InboxDirName, 0o700},
	} {
		fi, err := os.Stat(filepath.Join(f.dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%q mode %v, want %v", c.name, fi.Mode().Perm(), c.mode)
		}
	}
	if m := f.one(InboundFile, "PRAGMA journal_mode"); m != "delete" {
		t.Errorf("inbound journal_mode %v", m)
	}
	if m := f.one(OutboundFile, "PRAGMA journal_mode"); m != "delete" {
		t.Errorf("outbound journal_mode %v", m)
	}
	wantCols := map[string]map[string]string{
		InboundFile + ":messages_in":       {"id": "TEXT", "seq": "INTEGER", "kind": "TEXT", "timestamp": "TEXT", "status": "TEXT", "process_after": "TEXT", "recurrence": "TEXT", "series_id": "TEXT", "tries": "INTEGER", "trigger": "INTEGER", "platform_id": "TEXT", "channel_type": "TEXT", "thread_id": "TEXT", "content": "TEXT", "source_session_id": "TEXT", "on_wake": "INTEGER"},
		InboundFile + ":delivered":         {"message_out_id": "TEXT", "platform_message_id": "TEXT", "status": "TEXT", "delivered_at": "TEXT"},
		InboundFile + ":destinations":      {"name": "TEXT", "display_name": "TEXT", "type": "TEXT", "channel_type": "TEXT", "platform_id": "TEXT", "agent_group_id": "TEXT"},
		InboundFile + ":session_routing":   {"id": "INTEGER", "channel_type": "TEXT", "platform_id": "TEXT", "thread_id": "TEXT"},
		InboundFile + ":delivery_attempts": {"message_out_id": "TEXT", "attempts": "INTEGER", "last_error": "TEXT", "last_attempt_at": "TEXT", "next_attempt_at": "TEXT"},
		OutboundFile + ":messages_out":     {"id": "TEXT", "seq": "INTEGER", "in_reply_to": "TEXT", "timestamp": "TEXT", "deliver_after": "TEXT", "recurrence": "TEXT", "kind": "TEXT", "platform_id": "TEXT", "channel_type": "TEXT", "thread_id": "TEXT", "content": "TEXT"},
		OutboundFile + ":processing_ack":   {"message_id": "TEXT", "status": "TEXT", "status_changed": "TEXT"},
		OutboundFile + ":session_state":    {"key": "TEXT", "value": "TEXT", "updated_at": "TEXT"},
		OutboundFile + ":container_state":  {"id": "INTEGER", "current_tool": "TEXT", "tool_declared_timeout_ms": "INTEGER", "tool_started_at": "TEXT", "updated_at": "TEXT"},
	}
	for key, want := range wantCols {
		file, table, _ := strings.Cut(key, ":")
		rows := f.query(file, "SELECT name, type FROM pragma_table_info(?)", table)
		got := map[string]string{}
		for _, r := range rows {
			got[r[0].(string)] = r[1].(string)
		}
		if len(got) != len(want) {
			t.Errorf("%s: columns %v, want %v", key, got, want)
		}
		for c, ty := range want {
			if got[c] != ty {
				t.Errorf("%s.%s: type %q, want %q", key, c, got[c], ty)
			}
		}
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM sqlite_master WHERE name = 'idx_messages_in_series'"); n != int64(1) {
		t.Errorf("series index missing")
	}
	// Idempotent: a second init keeps rows.
	f.enqueue(chat("m1", "x"))
	if err := f.host.InitSession(ctxb, f.ref); err != nil {
		t.Fatal(err)
	}
	if n := f.one(InboundFile, "SELECT count(*) FROM messages_in"); n != int64(1) {
		t.Errorf("re-init lost rows: %v", n)
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 3, 1, 12, 34, 56, 0, time.UTC)
	cases := []struct {
		name string
		in   string
		want time.Time
		ok   bool
	}{
		{"ours", "2026-03-01T12:34:56.000Z", want, true},
		{"ours with ms", "2026-03-01T12:34:56.789Z", want.Add(789 * time.Millisecond), true},
		{"sqlite zone-less is UTC", "2026-03-01 12:34:56", want, true},
		{"offset", "2026-03-01T13:34:56+01:00", want, true},
		{"garbage", "yesterday", time.Time{}, false},
		{"empty", "", time.Time{}, false},
		{"bad month", "2026-13-01 00:00:00", time.Time{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTime(c.in)
			if !c.ok {
				wantCode(t, err, sessiondb.EINVALID)
				return
			}
			if err != nil || !got.Equal(c.want) {
				t.Fatalf("ParseTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
		})
	}
	if s := FormatTime(want.In(time.FixedZone("x", 3600)).Add(5 * time.Millisecond)); s != "2026-03-01T12:34:56.005Z" {
		t.Errorf("FormatTime = %q", s)
	}
}
