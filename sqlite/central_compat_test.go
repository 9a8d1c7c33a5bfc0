package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb/sqlitetest"
	"github.com/sessiondb/sessiondb/internal/testkit"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Compatibility fixtures for the central registry, built here from the
// spec's DDL (spec/control-plane.md A2–A3), independently of the
// package's own migrations: what NanoClaw v2.0.64 leaves on disk.

// nanoClawLedger is NanoClaw's migration list, in order.
var nanoClawLedger = []string{
	"initial-v2-schema", "chat-sdk-state", "pending-approvals", "agent-destinations",
	"pending-approvals-title-options", "dropped-messages", "drop-pending-credentials", "engage-modes",
	"pending-sender-approvals", "channel-registration", "approval-render-metadata", "container-configs", "cli-scope",
}

// specSchema is spec A3's DDL with every ALTER applied: the central file
// after NanoClaw's last migration.
const specSchema = `
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TEXT NOT NULL);
CREATE UNIQUE INDEX idx_schema_version_name ON schema_version(name);
CREATE TABLE agent_groups (id TEXT PRIMARY KEY, name TEXT NOT NULL, folder TEXT NOT NULL UNIQUE,
  agent_provider TEXT, created_at TEXT NOT NULL);
CREATE TABLE messaging_groups (id TEXT PRIMARY KEY, channel_type TEXT NOT NULL, platform_id TEXT NOT NULL,
  name TEXT, is_group INTEGER DEFAULT 0, unknown_sender_policy TEXT NOT NULL DEFAULT 'strict',
  created_at TEXT NOT NULL, UNIQUE(channel_type, platform_id));
ALTER TABLE messaging_groups ADD COLUMN denied_at TEXT;
CREATE TABLE messaging_group_agents (id TEXT PRIMARY KEY,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id),
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
  session_mode TEXT DEFAULT 'shared', priority INTEGER DEFAULT 0, created_at TEXT NOT NULL,
  UNIQUE(messaging_group_id, agent_group_id));
ALTER TABLE messaging_group_agents ADD COLUMN engage_mode TEXT;
ALTER TABLE messaging_group_agents ADD COLUMN engage_pattern TEXT;
ALTER TABLE messaging_group_agents ADD COLUMN sender_scope TEXT;
ALTER TABLE messaging_group_agents ADD COLUMN ignored_message_policy TEXT;
CREATE TABLE users (id TEXT PRIMARY KEY, kind TEXT NOT NULL, display_name TEXT, created_at TEXT NOT NULL);
CREATE TABLE user_roles (user_id TEXT NOT NULL REFERENCES users(id), role TEXT NOT NULL,
  agent_group_id TEXT REFERENCES agent_groups(id), granted_by TEXT REFERENCES users(id),
  granted_at TEXT NOT NULL, PRIMARY KEY (user_id, role, agent_group_id));
CREATE INDEX idx_user_roles_scope ON user_roles(agent_group_id, role);
CREATE TABLE agent_group_members (user_id TEXT NOT NULL REFERENCES users(id),
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id), added_by TEXT REFERENCES users(id),
  added_at TEXT NOT NULL, PRIMARY KEY (user_id, agent_group_id));
CREATE TABLE user_dms (user_id TEXT NOT NULL REFERENCES users(id), channel_type TEXT NOT NULL,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id), resolved_at TEXT NOT NULL,
  PRIMARY KEY (user_id, channel_type));
CREATE TABLE sessions (id TEXT PRIMARY KEY, agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
  messaging_group_id TEXT REFERENCES messaging_groups(id), thread_id TEXT, agent_provider TEXT,
  status TEXT DEFAULT 'active', container_status TEXT DEFAULT 'stopped', last_active TEXT,
  created_at TEXT NOT NULL);
CREATE INDEX idx_sessions_agent_group ON sessions(agent_group_id);
CREATE INDEX idx_sessions_lookup ON sessions(messaging_group_id, thread_id);
CREATE TABLE pending_questions (question_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id), message_out_id TEXT NOT NULL, platform_id TEXT,
  channel_type TEXT, thread_id TEXT, title TEXT NOT NULL, options_json TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE chat_sdk_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER);
CREATE TABLE chat_sdk_subscriptions (thread_id TEXT PRIMARY KEY,
  subscribed_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE chat_sdk_locks (thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE chat_sdk_lists (key TEXT NOT NULL, idx INTEGER NOT NULL, value TEXT NOT NULL,
  expires_at INTEGER, PRIMARY KEY (key, idx));
CREATE TABLE pending_approvals (approval_id TEXT PRIMARY KEY, session_id TEXT REFERENCES sessions(id),
  request_id TEXT NOT NULL, action TEXT NOT NULL, payload TEXT NOT NULL, created_at TEXT NOT NULL,
  agent_group_id TEXT REFERENCES agent_groups(id), channel_type TEXT, platform_id TEXT,
  platform_message_id TEXT, expires_at TEXT, status TEXT NOT NULL DEFAULT 'pending',
  title TEXT NOT NULL DEFAULT '', options_json TEXT NOT NULL DEFAULT '[]');
CREATE INDEX idx_pending_approvals_action_status ON pending_approvals(action, status);
CREATE TABLE agent_destinations (agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
  local_name TEXT NOT NULL, target_type TEXT NOT NULL, target_id TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (agent_group_id, local_name));
CREATE INDEX idx_agent_dest_target ON agent_destinations(target_type, target_id);
CREATE TABLE IF NOT EXISTS unregistered_senders (channel_type TEXT NOT NULL, platform_id TEXT NOT NULL,
  user_id TEXT, sender_name TEXT, reason TEXT NOT NULL, messaging_group_id TEXT, agent_group_id TEXT,
  message_count INTEGER NOT NULL DEFAULT 1, first_seen TEXT NOT NULL, last_seen TEXT NOT NULL,
  PRIMARY KEY (channel_type, platform_id));
CREATE INDEX IF NOT EXISTS idx_unregistered_senders_last_seen ON unregistered_senders(last_seen);
CREATE TABLE IF NOT EXISTS pending_sender_approvals (id TEXT PRIMARY KEY,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id),
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id), sender_identity TEXT NOT NULL, sender_name TEXT,
  original_message TEXT NOT NULL, approver_user_id TEXT NOT NULL, created_at TEXT NOT NULL,
  UNIQUE(messaging_group_id, sender_identity));
CREATE INDEX IF NOT EXISTS idx_pending_sender_approvals_mg ON pending_sender_approvals(messaging_group_id);
CREATE TABLE IF NOT EXISTS pending_channel_approvals (
  messaging_group_id TEXT PRIMARY KEY REFERENCES messaging_groups(id),
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id), original_message TEXT NOT NULL,
  approver_user_id TEXT NOT NULL, created_at TEXT NOT NULL);
ALTER TABLE pending_channel_approvals ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE pending_channel_approvals ADD COLUMN options_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE pending_sender_approvals ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE pending_sender_approvals ADD COLUMN options_json TEXT NOT NULL DEFAULT '[]';
CREATE TABLE container_configs (agent_group_id TEXT PRIMARY KEY REFERENCES agent_groups(id) ON DELETE CASCADE,
  provider TEXT, model TEXT, effort TEXT, image_tag TEXT, assistant_name TEXT,
  max_messages_per_prompt INTEGER, skills TEXT NOT NULL DEFAULT '"all"', mcp_servers TEXT NOT NULL DEFAULT '{}',
  packages_apt TEXT NOT NULL DEFAULT '[]', packages_npm TEXT NOT NULL DEFAULT '[]',
  additional_mounts TEXT NOT NULL DEFAULT '[]', updated_at TEXT NOT NULL);
ALTER TABLE container_configs ADD COLUMN cli_scope TEXT NOT NULL DEFAULT 'group';
`

// specRows puts a row in every table, as NanoClaw would (its timestamps,
// ISO; ncl's SQL-form granted_at on one grant; a duplicated global grant,
// which SQLite's key allowed).
const specRows = `
INSERT INTO agent_groups VALUES ('ag-main', 'Main', 'main', NULL, '2026-05-01T10:00:00.000Z');
INSERT INTO agent_groups VALUES ('ag-helper', 'Helper', 'helper', 'codex', '2026-05-01T10:00:01.000Z');
INSERT INTO messaging_groups (id, channel_type, platform_id, name, is_group, unknown_sender_policy, created_at, denied_at)
  VALUES ('mg-fam', 'telegram', '-100', 'Family', 1, 'strict', '2026-05-01T10:01:00.000Z', NULL),
         ('mg-dm', 'telegram', '42', 'Ann', 0, 'strict', '2026-05-01T10:01:01.000Z', NULL),
         ('mg-spam', 'discord', 'g:c', NULL, 1, 'request_approval', '2026-05-01T10:01:02.000Z', '2026-05-02T09:00:00.000Z');
INSERT INTO messaging_group_agents (id, messaging_group_id, agent_group_id, session_mode, priority, created_at,
  engage_mode, engage_pattern, sender_scope, ignored_message_policy)
  VALUES ('mga-1', 'mg-fam', 'ag-main', 'shared', 0, '2026-05-01T10:02:00.000Z', 'pattern', '.', 'all', 'drop'),
         ('mga-2', 'mg-dm', 'ag-main', 'shared', 0, '2026-05-01T10:02:01.000Z', 'mention-sticky', NULL, 'known', 'accumulate'),
         ('mga-3', 'mg-fam', 'ag-helper', NULL, 2, '2026-05-01T10:02:02.000Z', NULL, NULL, NULL, NULL),
         ('mga-4', 'mg-spam', 'ag-helper', 'per-thread', 0, '2026-05-01T10:02:03.000Z', 'pattern', '^(?!spam)', 'all', 'drop');
INSERT INTO users VALUES ('telegram:42', 'telegram', 'Ann', '2026-05-01T10:03:00.000Z');
INSERT INTO users VALUES ('telegram:7', 'telegram', NULL, '2026-05-01T10:03:01.000Z');
INSERT INTO user_roles VALUES ('telegram:42', 'owner', NULL, NULL, '2026-05-01T10:04:00.000Z');
INSERT INTO user_roles VALUES ('telegram:42', 'owner', NULL, NULL, '2026-05-01T10:04:30.000Z');
INSERT INTO user_roles VALUES ('telegram:7', 'admin', 'ag-helper', 'telegram:42', '2026-05-01 10:04:10');
INSERT INTO agent_group_members VALUES ('telegram:7', 'ag-main', 'telegram:42', '2026-05-01T10:05:00.000Z');
INSERT INTO user_dms VALUES ('telegram:42', 'telegram', 'mg-dm', '2026-05-01T10:06:00.000Z');
INSERT INTO sessions VALUES ('sess-1', 'ag-main', 'mg-fam', NULL, NULL, 'active', 'running', '2026-05-01T11:00:00.000Z', '2026-05-01T10:07:00.000Z');
INSERT INTO sessions VALUES ('sess-2', 'ag-main', 'mg-dm', NULL, NULL, 'active', 'stopped', NULL, '2026-05-01T10:07:01.000Z');
INSERT INTO pending_questions VALUES ('msg-q', 'sess-1', 'msg-q', '-100', 'telegram', NULL, 'Pick',
  '[{"label":"A","selectedLabel":"A!","value":"a"},"B"]', '2026-05-01T10:08:00.000Z');
INSERT INTO chat_sdk_kv VALUES ('k', 'v', 1777777777000);
INSERT INTO chat_sdk_subscriptions (thread_id) VALUES ('telegram:-100');
INSERT INTO chat_sdk_locks VALUES ('telegram:-100', 'tok', 1777777777000);
INSERT INTO chat_sdk_lists VALUES ('l', 0, 'x', NULL);
INSERT INTO pending_approvals (approval_id, session_id, request_id, action, payload, created_at, title, options_json)
  VALUES ('appr-1', 'sess-1', 'appr-1', 'install_packages', '{"apt":["jq"]}', '2026-05-01T10:09:00.000Z', 'Install',
  '[{"label":"Approve","selectedLabel":"✅ Approved","value":"approve"},{"label":"Reject","selectedLabel":"❌ Rejected","value":"reject"}]');
INSERT INTO agent_destinations VALUES ('ag-main', 'family', 'channel', 'mg-fam', '2026-05-01T10:02:00.000Z');
INSERT INTO agent_destinations VALUES ('ag-main', 'helper', 'agent', 'ag-helper', '2026-05-01 10:02:00');
INSERT INTO unregistered_senders VALUES ('discord', 'g:c', NULL, 'Mallory', 'no_agent_wired', 'mg-spam', NULL, 3,
  '2026-05-01T10:10:00.000Z', '2026-05-01T10:11:00.000Z');
INSERT INTO pending_sender_approvals VALUES ('nsa-1', 'mg-fam', 'ag-main', 'telegram:9', 'Eve', '{"text":"hi"}',
  'telegram:42', '2026-05-01T10:12:00.000Z', '👤 New sender', '[]');
INSERT INTO pending_channel_approvals VALUES ('mg-spam', 'ag-helper', '{"text":"@bot"}', 'telegram:42',
  '2026-05-01T10:13:00.000Z', '📣', '[]');
INSERT INTO container_configs (agent_group_id, max_messages_per_prompt, updated_at) VALUES ('ag-main', 20, '2026-05-01T10:14:00.000Z');
`

// buildNanoClawFile writes a central file as NanoClaw leaves it after
// names (in order; the first len(nanoClawLedger) are what its DDL
// assumes), then extra statements, through a raw connection.
func buildNanoClawFile(t *testing.T, path string, ledger []string, extra ...string) {
	t.Helper()
	db := sqlitetest.Open(t, path)
	sqlitetest.ExecAll(t, db, "PRAGMA journal_mode=WAL", specSchema, specRows)
	for i, name := range ledger {
		sqlitetest.ExecAll(t, db, fmt.Sprintf("INSERT INTO schema_version VALUES (%d, '%s', '2026-05-01T09:00:%02d.000Z')", i+1, name, i))
	}
	sqlitetest.ExecAll(t, db, extra...)
	db.Close()
}

// ledgerNames reads the file's ledger, in applied order.
func ledgerNames(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, r := range sqlitetest.QueryFile(t, path, "SELECT version, name FROM schema_version ORDER BY version") {
		out = append(out, r[1].(string))
	}
	return out
}

// TestCentralAdoptsNanoClawFile opens a file taken through NanoClaw's whole
// ledger, with rows in every table: our migrations are appended, the rows
// read back through every service, NanoClaw's repeated global grant is
// gone, the Chat SDK's tables and the container config are untouched, and
// the registry works on it.
func TestCentralAdoptsNanoClawFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	buildNanoClawFile(t, path, nanoClawLedger)
	clock := testkit.NewClock(time.Date(2026, 5, 18, 10, 0, 0, 0, time.UTC))
	c := openCentral(t, path, clock.Now)
	defer c.Close()
	ctx := context.Background()

	if got, want := ledgerNames(t, path), sqlite.CentralMigrationNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ledger = %q, want %q", got, want)
	}
	ms, err := c.Migrations(ctx)
	if err != nil || len(ms) != len(sqlite.CentralMigrationNames()) || ms[13].Version != 14 || ms[13].Applied != "2026-05-18T10:00:00.000Z" {
		t.Errorf("Migrations = %+v, %v; ours follow as versions 14.. stamped with the clock", ms, err)
	}

	g, err := c.GetAgentGroup(ctx, "ag-helper")
	if err != nil || g.Name != "Helper" || g.AgentProvider != "codex" || g.CreatedAt.Format(time.RFC3339) != "2026-05-01T10:00:01Z" {
		t.Errorf("agent group = %+v, %v", g, err)
	}
	spam, err := c.FindMessagingGroup(ctx, "discord", "g:c")
	if err != nil || !spam.Denied() || spam.UnknownSenderPolicy != sessiondb.PolicyRequestApproval || spam.Name != "" {
		t.Errorf("denied chat = %+v, %v", spam, err)
	}
	ws, err := c.ListWirings(ctx, sessiondb.WiringFilter{MessagingGroupID: "mg-fam"})
	if err != nil || len(ws) != 2 || ws[0].ID != "mga-3" {
		t.Fatalf("wirings = %+v, %v; want mga-3 (priority 2) first", ws, err)
	}
	if w := ws[0]; w.EngageMode != sessiondb.EngageMention || w.SenderScope != sessiondb.ScopeAll || w.IgnoredMessagePolicy != sessiondb.IgnoredDrop || w.SessionMode != sessiondb.ModeShared {
		t.Errorf("NULL engage columns read as %+v; want mention, all, drop, shared", w)
	}
	if w, _ := c.GetWiring(ctx, "mga-2"); w.EngageMode != sessiondb.EngageMentionSticky || w.SenderScope != sessiondb.ScopeKnown || w.IgnoredMessagePolicy != sessiondb.IgnoredAccumulate {
		t.Errorf("mga-2 = %+v", w)
	}
	// A JavaScript-only pattern NanoClaw stored reads back as it is, and
	// the engage decision fails open on it, reporting why.
	js, err := c.GetWiring(ctx, "mga-4")
	if err != nil || js.EngagePattern != "^(?!spam)" {
		t.Fatalf("JavaScript pattern wiring = %+v, %v", js, err)
	}
	if d := sessiondb.DecideEngage(sessiondb.EngageInput{Wiring: js, Chat: spam, Text: "spam"}); !d.Engaged || d.PatternErr == nil {
		t.Errorf("DecideEngage on a lookahead = %+v; want engaged with the pattern error reported", d)
	}
	prio := 3
	if _, err := c.UpdateWiring(ctx, "mga-4", sessiondb.WiringUpdate{Priority: &prio}); sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(fmt.Sprint(err), "engage_pattern") {
		t.Errorf("updating a wiring whose pattern RE2 rejects = %v; want invalid naming engage_pattern", err)
	}
	owners, _ := c.ListRoles(ctx, sessiondb.RoleFilter{Role: sessiondb.RoleOwner})
	if len(owners) != 1 || owners[0].GrantedAt.Format(time.RFC3339) != "2026-05-01T10:04:00Z" {
		t.Errorf("owners = %+v; want the repeated global grant dropped, the first kept", owners)
	}
	all, _ := c.ListRoles(ctx, sessiondb.RoleFilter{})
	if len(all) != 2 || all[0].UserID != "telegram:42" || all[1].GrantedAt.Format(time.RFC3339) != "2026-05-01T10:04:10Z" {
		t.Errorf("roles = %+v; want the SQL-form grant read and ordered by time", all)
	}
	access, err := c.UserAccess(ctx, "telegram:7")
	if err != nil || sessiondb.CanAccessAgentGroup(access, "ag-main").Reason != sessiondb.AccessMember ||
		sessiondb.CanAccessAgentGroup(access, "ag-helper").Reason != sessiondb.AccessAdminOfGroup {
		t.Errorf("access of telegram:7 = %+v, %v", access, err)
	}
	if dm, err := c.GetUserDM(ctx, "telegram:42", "telegram"); err != nil || dm.MessagingGroupID != "mg-dm" {
		t.Errorf("DM = %+v, %v", dm, err)
	}
	s, created, err := c.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: "ag-main", MessagingGroupID: "mg-fam", Mode: sessiondb.ModeShared})
	if err != nil || created || s.ID != "sess-1" || s.ContainerStatus != sessiondb.ContainerRunning {
		t.Errorf("resolve on NanoClaw's session = %+v, %v, %v", s, created, err)
	}
	q, err := c.GetQuestion(ctx, "msg-q")
	if err != nil || len(q.Options) != 2 || q.Options[0].Value != "a" || q.Options[1].Value != "B" {
		t.Errorf("question = %+v, %v", q, err)
	}
	if card, err := c.FindCard(ctx, "appr-1"); err != nil || card.Action == nil || card.Action.Status != sessiondb.ApprovalPending || card.Action.ExpiresAt.IsZero() == false {
		t.Errorf("NanoClaw's approval = %+v, %v", card, err)
	}
	// NanoClaw's action approval has no expires_at: it expires ApprovalTTL
	// after created_at.
	if exp, err := c.ExpireApprovals(ctx, clock.Now(), sessiondb.ApprovalTTL); err != nil || len(exp) != 1 || exp[0].ApprovalID != "appr-1" {
		t.Errorf("ExpireApprovals on a 17-day-old NanoClaw row = %+v, %v", exp, err)
	}
	rd, err := c.ResolveDestinations(ctx, "ag-main")
	if err != nil || len(rd) != 2 || rd[0].Chat == nil || rd[1].Agent == nil || rd[1].CreatedAt.IsZero() {
		t.Errorf("destinations = %+v, %v", rd, err)
	}
	if d, _ := c.ListDropped(ctx, 0); len(d) != 1 || d[0].MessageCount != 3 {
		t.Errorf("dropped = %+v", d)
	}
	if card, err := c.FindCard(ctx, "nsa-1"); err != nil || card.Kind != sessiondb.CardSenderApproval || len(card.Sender.Options) != 0 {
		t.Errorf("sender approval = %+v, %v", card, err)
	}
	if card, err := c.FindCard(ctx, "mg-spam"); err != nil || card.Kind != sessiondb.CardChannelApproval {
		t.Errorf("channel approval = %+v, %v", card, err)
	}

	// And the registry works on the adopted file.
	w, err := c.CreateWiring(ctx, sessiondb.NewWiring{MessagingGroupID: "mg-dm", AgentGroupID: "ag-helper"})
	if err != nil || w.Destination == nil || w.Destination.LocalName != "ann" {
		t.Errorf("new wiring = %+v, %v", w, err)
	}
	if granted, err := c.GrantRole(ctx, sessiondb.NewRoleGrant{UserID: "telegram:42", Role: sessiondb.RoleOwner}); err != nil || granted {
		t.Errorf("re-granting NanoClaw's owner = %v, %v", granted, err)
	}

	for _, q := range []struct{ query, want string }{
		{"SELECT value FROM chat_sdk_kv", "v"},
		{"SELECT token FROM chat_sdk_locks", "tok"},
		{"SELECT CAST(max_messages_per_prompt AS TEXT) || cli_scope || skills FROM container_configs", `20group"all"`},
	} {
		rows := sqlitetest.QueryFile(t, path, q.query)
		if len(rows) != 1 || rows[0][0] != q.want {
			t.Errorf("%s = %v, want %q", q.query, rows, q.want)
		}
	}
}

// TestCentralKeepsNanoClawSchema: the file we create has, for every
// NanoClaw table, exactly the columns NanoClaw's migrations leave (names,
// types, NOT NULL, defaults, keys), and all of NanoClaw's indexes, so
// NanoClaw's statements run on it unchanged. Our additions are partial
// indexes only.
func TestCentralKeepsNanoClawSchema(t *testing.T) {
	dir := t.TempDir()
	theirs, ours := filepath.Join(dir, "nanoclaw.db"), filepath.Join(dir, "ours.db")
	buildNanoClawFile(t, theirs, nanoClawLedger)
	openCentral(t, ours, nil).Close()

	tables := sqlitetest.QueryFile(t, theirs, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	for _, tr := range tables {
		table := tr[0].(string)
		q := fmt.Sprintf("SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info('%s') ORDER BY cid", table)
		want, got := sqlitetest.QueryFile(t, theirs, q), sqlitetest.QueryFile(t, ours, q)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("table %s:\n ours   %v\n theirs %v", table, got, want)
		}
		fks := fmt.Sprintf("SELECT \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list('%s') ORDER BY id, seq", table)
		if got, want := sqlitetest.QueryFile(t, ours, fks), sqlitetest.QueryFile(t, theirs, fks); !reflect.DeepEqual(got, want) {
			t.Errorf("foreign keys of %s: ours %v, theirs %v", table, got, want)
		}
	}
	idx := "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
	theirIdx, ourIdx := flat(sqlitetest.QueryFile(t, theirs, idx)), flat(sqlitetest.QueryFile(t, ours, idx))
	extra := map[string]bool{}
	for _, n := range ourIdx {
		extra[n] = true
	}
	for _, n := range theirIdx {
		if !extra[n] {
			t.Errorf("our file lacks NanoClaw's index %s", n)
		}
		delete(extra, n)
	}
	for n := range extra {
		sql := sqlitetest.QueryFile(t, ours, "SELECT sql FROM sqlite_master WHERE name = ?", n)[0][0].(string)
		if !strings.Contains(sql, " WHERE ") {
			t.Errorf("our index %s is not partial: %s", n, sql)
		}
	}
	if got := len(flat(sqlitetest.QueryFile(t, ours, "SELECT name FROM sqlite_master WHERE type = 'table'"))); got != len(tables) {
		t.Errorf("our file has %d tables, NanoClaw's %d", got, len(tables))
	}
	// NanoClaw's own writes, as its code issues them, on our file.
	db := sqlitetest.Open(t, ours)
	sqlitetest.ExecAll(t, db,
		"INSERT INTO agent_groups (id, name, folder, agent_provider, created_at) VALUES ('ag-1', 'A', 'a', NULL, '2026-05-18T10:00:00.000Z')",
		"INSERT INTO messaging_groups (id, channel_type, platform_id, name, is_group, unknown_sender_policy, created_at) VALUES ('mg-1', 'telegram', '1', NULL, 1, 'request_approval', '2026-05-18T10:00:00.000Z')",
		"INSERT INTO messaging_group_agents (id, messaging_group_id, agent_group_id, engage_mode, engage_pattern, sender_scope, ignored_message_policy, session_mode, priority, created_at) VALUES ('mga-1', 'mg-1', 'ag-1', 'mention-sticky', NULL, 'known', 'accumulate', 'shared', 0, '2026-05-18T10:00:00.000Z')",
		"INSERT INTO users (id, kind, display_name, created_at) VALUES ('telegram:1', 'telegram', NULL, '2026-05-18T10:00:00.000Z')",
		"INSERT OR IGNORE INTO user_roles (user_id, role, agent_group_id, granted_by, granted_at) VALUES ('telegram:1', 'owner', NULL, NULL, datetime('now'))",
		"INSERT OR IGNORE INTO user_roles (user_id, role, agent_group_id, granted_by, granted_at) VALUES ('telegram:1', 'owner', NULL, NULL, datetime('now'))",
		"INSERT INTO sessions (id, agent_group_id, messaging_group_id, thread_id, agent_provider, status, container_status, last_active, created_at) VALUES ('sess-1', 'ag-1', 'mg-1', NULL, NULL, 'active', 'stopped', NULL, '2026-05-18T10:00:00.000Z')",
		"UPDATE sessions SET container_status = 'running', last_active = '2026-05-18T10:00:01.000Z' WHERE id = 'sess-1'",
		"INSERT INTO unregistered_senders (channel_type, platform_id, user_id, sender_name, reason, messaging_group_id, agent_group_id, message_count, first_seen, last_seen) VALUES ('telegram', '9', NULL, NULL, 'no_agent_wired', 'mg-1', NULL, 1, 'x', 'x') ON CONFLICT(channel_type, platform_id) DO UPDATE SET message_count = message_count + 1",
	)
	if n := sqlitetest.QueryFile(t, ours, "SELECT COUNT(*) FROM user_roles"); n[0][0] != int64(1) {
		t.Errorf("ncl's INSERT OR IGNORE of a repeated owner grant stored %v rows, want 1", n[0][0])
	}
}

func flat(rows [][]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	sort.Strings(out)
	return out
}

// TestCentralToleratesUnknownLedgerAndColumns: a file whose ledger names
// migrations we do not know (NanoClaw's pre-release ones, a later
// upstream's), whose versions are pre-release file numbers with gaps, and
// whose tables have columns we do not use, opens; our statements name
// their columns, so the extra ones keep their defaults and values.
func TestCentralToleratesUnknownLedgerAndColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	buildNanoClawFile(t, path, nil,
		// A pre-release install: the old runner stored file numbers.
		"INSERT INTO schema_version VALUES (1, 'initial-v2-schema', '2026-04-11T00:00:00.000Z'), (2, 'chat-sdk-state', 'x'), (3, 'pending-approvals', 'x'), (4, 'agent-destinations', 'x'), (5, 'pending-credentials', 'x'), (6, 'pending-swaps', 'x'), (7, 'pending-approvals-title-options', 'x'), (8, 'dropped-messages', 'x'), (9, 'drop-pending-credentials', 'x')",
		"INSERT INTO schema_version VALUES (10, 'engage-modes', 'x'), (11, 'pending-sender-approvals', 'x'), (12, 'channel-registration', 'x'), (13, 'approval-render-metadata', 'x'), (14, 'container-configs', 'x'), (15, 'cli-scope', 'x'), (16, 'messaging-groups-instance', 'x'), (17, 'container-configs-env', 'x')",
		"CREATE TABLE pending_swaps (id TEXT PRIMARY KEY, payload TEXT)",
		"ALTER TABLE messaging_groups ADD COLUMN instance TEXT NOT NULL DEFAULT 'default'",
		"ALTER TABLE container_configs ADD COLUMN env TEXT NOT NULL DEFAULT '{}'",
		"ALTER TABLE sessions ADD COLUMN note TEXT",
		"UPDATE messaging_groups SET instance = 'work' WHERE id = 'mg-fam'",
	)
	c := openCentral(t, path, nil)
	defer c.Close()
	ctx := context.Background()
	names := ledgerNames(t, path)
	want := append([]string{}, names[:17]...)
	want = append(want, "sessiondb-user-roles-global-unique", "sessiondb-sessions-active-indexes")
	if !reflect.DeepEqual(names, want) {
		t.Errorf("ledger = %q, want the file's 17 then ours", names)
	}
	if v := sqlitetest.QueryFile(t, path, "SELECT MAX(version) FROM schema_version"); v[0][0] != int64(19) {
		t.Errorf("our migrations were recorded up to version %v, want 19 (after the file's highest)", v[0][0])
	}
	m, err := c.CreateMessagingGroup(ctx, sessiondb.NewMessagingGroup{ChannelType: "slack", PlatformID: "C1"})
	noErrT(t, "create chat", err)
	if got := sqlitetest.QueryFile(t, path, "SELECT instance FROM messaging_groups WHERE id IN ('mg-fam', ?) ORDER BY id = 'mg-fam'", m.ID); got[0][0] != "default" || got[1][0] != "work" {
		t.Errorf("instance column = %v: an unknown column lost its default or value", got)
	}
	s, _, err := c.ResolveSession(ctx, sessiondb.SessionLookup{AgentGroupID: "ag-main", MessagingGroupID: m.ID, Mode: sessiondb.ModeShared})
	noErrT(t, "resolve", err)
	if s.Status != sessiondb.SessionActive {
		t.Errorf("session on a file with an extra column = %+v", s)
	}
	if got := sqlitetest.QueryFile(t, path, "SELECT COUNT(*) FROM pending_swaps"); got[0][0] != int64(0) {
		t.Errorf("pending_swaps = %v", got)
	}
}

// TestCentralBackfills takes a file from before agent-destinations and
// engage-modes through both: each wiring gets a channel destination named
// by spec A8 (collisions numbered per agent group) and its engage columns
// from trigger_rules and response_scope, which are then dropped.
func TestCentralBackfills(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db := sqlitetest.Open(t, path)
	old := specSchema
	// Before engage-modes: the 001 wiring table with its two old columns.
	old = strings.Replace(old, "  session_mode TEXT DEFAULT 'shared', priority INTEGER DEFAULT 0, created_at TEXT NOT NULL,\n  UNIQUE(messaging_group_id, agent_group_id));",
		"  trigger_rules TEXT, response_scope TEXT DEFAULT 'all',\n  session_mode TEXT DEFAULT 'shared', priority INTEGER DEFAULT 0, created_at TEXT NOT NULL,\n  UNIQUE(messaging_group_id, agent_group_id));", 1)
	var keep []string
	for _, stmt := range strings.Split(old, ";") {
		s := strings.TrimSpace(stmt)
		switch {
		case s == "", strings.Contains(s, "ADD COLUMN engage_"), strings.Contains(s, "ADD COLUMN sender_scope"), strings.Contains(s, "ADD COLUMN ignored_message_policy"),
			strings.Contains(s, "agent_destinations"), strings.Contains(s, "agent_dest_target"):
			continue
		}
		keep = append(keep, s)
	}
	sqlitetest.ExecAll(t, db, strings.Join(keep, ";\n")+";")
	sqlitetest.ExecAll(t, db,
		"INSERT INTO schema_version VALUES (1, 'initial-v2-schema', 'x'), (2, 'chat-sdk-state', 'x'), (3, 'pending-approvals', 'x')",
		"INSERT INTO agent_groups VALUES ('ag-a', 'A', 'a', NULL, 'x'), ('ag-b', 'B', 'b', NULL, 'x')",
		`INSERT INTO messaging_groups (id, channel_type, platform_id, name, created_at) VALUES
		 ('mg-one', 'telegram', '1', 'Dev Team', 'x'), ('mg-two', 'discord', '2', 'dev  team!', 'x'),
		 ('mg-three', 'whatsapp', '3', NULL, 'x'), ('mg-four', 'slack', '4', '***', 'x'), ('mg-five', 'slack', '5', '', 'x')`,
	)
	type legacy struct {
		id, mg, ag  string
		rules       any
		scope       any
		mode, pat   string
		senderScope string
		dest        string
	}
	cases := []legacy{
		{"w1", "mg-one", "ag-a", `{"pattern":"^!dev"}`, "all", "pattern", "^!dev", "all", "dev-team"},
		{"w2", "mg-two", "ag-a", `{"requiresTrigger":false}`, "allowlisted", "pattern", ".", "known", "dev-team-2"},
		{"w3", "mg-three", "ag-a", `{"requiresTrigger":true}`, "allowlisted", "mention", "", "known", "whatsapp-mg-three"},
		{"w4", "mg-four", "ag-a", nil, "all", "pattern", ".", "all", "unnamed"},
		{"w5", "mg-five", "ag-a", `not json`, nil, "mention", "", "all", "slack-mg-five"},
		{"w6", "mg-one", "ag-b", `{"pattern":""}`, "mentions", "mention", "", "all", "dev-team"},
		{"w7", "mg-two", "ag-b", `[1,2]`, "all", "pattern", ".", "all", "dev-team-2"},
	}
	for _, c := range cases {
		if _, err := db.Exec("INSERT INTO messaging_group_agents (id, messaging_group_id, agent_group_id, trigger_rules, response_scope, created_at) VALUES (?, ?, ?, ?, ?, 'x')",
			c.id, c.mg, c.ag, c.rules, c.scope); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	clock := testkit.NewClock(time.Date(2026, 5, 18, 10, 0, 0, 0, time.UTC))
	reg := openCentral(t, path, clock.Now)
	defer reg.Close()
	ctx := context.Background()
	for _, c := range cases {
		w, err := reg.GetWiring(ctx, c.id)
		noErrT(t, c.id, err)
		if string(w.EngageMode) != c.mode || w.EngagePattern != c.pat || string(w.SenderScope) != c.senderScope || w.IgnoredMessagePolicy != sessiondb.IgnoredDrop {
			t.Errorf("%s (%v, %v) = %s %q %s %s; want %s %q %s drop", c.id, c.rules, c.scope, w.EngageMode, w.EngagePattern, w.SenderScope, w.IgnoredMessagePolicy, c.mode, c.pat, c.senderScope)
		}
		ds := sqlitetest.QueryFile(t, path, "SELECT local_name, created_at FROM agent_destinations WHERE agent_group_id = ? AND target_type = 'channel' AND target_id = ?", c.ag, c.mg)
		if len(ds) != 1 || ds[0][0] != c.dest || ds[0][1] != "2026-05-18T10:00:00.000Z" {
			t.Errorf("%s's destination = %v, want %q", c.id, ds, c.dest)
		}
	}
	cols := flat(sqlitetest.QueryFile(t, path, "SELECT name FROM pragma_table_info('messaging_group_agents')"))
	for _, gone := range []string{"trigger_rules", "response_scope"} {
		for _, c := range cols {
			if c == gone {
				t.Errorf("%s survived engage-modes", gone)
			}
		}
	}
	if got, want := ledgerNames(t, path), sqlite.CentralMigrationNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("ledger = %q", got)
	}
}

// TestCentralSecondOpenTakesNoWriteLock: with another connection holding
// the write lock, opening a migrated file still succeeds at once, and the
// file is unchanged.
func TestCentralSecondOpenTakesNoWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	openCentral(t, path, nil).Close()
	before := sqlitetest.QueryFile(t, path, "SELECT version, name, applied FROM schema_version ORDER BY version")
	release := sqlitetest.HoldWriteLock(t, path)
	c, err := sqlite.OpenCentral(context.Background(), path, sqlite.CentralOptions{WriteBudget: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("second open while another connection writes: %v", err)
	}
	defer c.Close()
	if _, err := c.GetAgentGroup(context.Background(), "nope"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("read through the second open: %v", err)
	}
	_, err = c.CreateAgentGroup(context.Background(), sessiondb.NewAgentGroup{Name: "x", Folder: "x"})
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY {
		t.Errorf("a write while the lock is held = %v, want busy (the lock really was held)", err)
	}
	release()
	if after := sqlitetest.QueryFile(t, path, "SELECT version, name, applied FROM schema_version ORDER BY version"); !reflect.DeepEqual(after, before) {
		t.Errorf("the ledger changed: %v → %v", before, after)
	}
}

// TestCentralOpenRefusals: what OpenCentral will not open, and with which
// code.
func TestCentralOpenRefusals(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, err := sqlite.OpenCentral(ctx, filepath.Join(dir, "missing.db"), sqlite.CentralOptions{ReadOnly: true})
	wantCodeT(t, "read-only missing file", err, sessiondb.ENOTFOUND)
	_, err = sqlite.OpenCentral(ctx, "", sqlite.CentralOptions{})
	wantCodeT(t, "empty path", err, sessiondb.EINVALID)
	_, err = sqlite.OpenCentral(ctx, dir, sqlite.CentralOptions{})
	wantCodeT(t, "a directory", err, sessiondb.EINVALID)
	hermes := filepath.Join(dir, "state.db")
	s, err := sqlite.Open(ctx, hermes, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = sqlite.OpenCentral(ctx, hermes, sqlite.CentralOptions{})
	wantCodeT(t, "a Hermes state.db", err, sessiondb.EINVALID)
	half := filepath.Join(dir, "half.db")
	buildNanoClawFile(t, half, nanoClawLedger[:10])
	_, err = sqlite.OpenCentral(ctx, half, sqlite.CentralOptions{ReadOnly: true})
	wantCodeT(t, "read-only file that needs migrating", err, sessiondb.EINVALID)
	ro, err := sqlite.OpenCentral(ctx, filepath.Join(dir, "v2.db"), sqlite.CentralOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	ro, err = sqlite.OpenCentral(ctx, filepath.Join(dir, "v2.db"), sqlite.CentralOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a migrated file: %v", err)
	}
	defer ro.Close()
	_, err = ro.CreateAgentGroup(ctx, sessiondb.NewAgentGroup{Name: "x", Folder: "x"})
	wantCodeT(t, "write through a read-only open", err, sessiondb.EINVALID)
	if list, err := ro.ListAgentGroups(ctx); err != nil || len(list) != 0 {
		t.Errorf("read-only listing = %v, %v", list, err)
	}
}

func noErrT(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantCodeT(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := sessiondb.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}
