package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/sqlitedb"
)

// The central registry's migrations (spec/control-plane.md A2): NanoClaw's
// list in NanoClaw's order, then ours under names beginning "sessiondb-".
// A migration's identity is its name; the ledger's version column is the
// order it was applied in. Ours only add tables, nullable or defaulted
// columns and partial indexes, so NanoClaw keeps working on a file we
// migrated. NanoClaw's own steps are written so that running one on a file
// that already has its effect (a ledger edited by hand, a table made by a
// module) changes nothing: CREATE ... IF NOT EXISTS and ADD COLUMN only
// where table_info lacks the column.

// centralMigration is one named step.
type centralMigration struct {
	name string
	up   func(tx *sqlitedb.Tx, now time.Time) error
}

// centralMigrations is the ledger list, in order.
var centralMigrations = []centralMigration{
	{"initial-v2-schema", script(ddlInitial)},
	{"chat-sdk-state", script(ddlChatSDK)},
	{"pending-approvals", script(ddlPendingApprovals)},
	{"agent-destinations", migrateAgentDestinations},
	{"pending-approvals-title-options", addColumns("pending_approvals",
		"title TEXT NOT NULL DEFAULT ''", "options_json TEXT NOT NULL DEFAULT '[]'")},
	{"dropped-messages", script(ddlDroppedMessages)},
	{"drop-pending-credentials", script(`DROP INDEX IF EXISTS idx_pending_credentials_status;
DROP TABLE IF EXISTS pending_credentials;`)},
	{"engage-modes", migrateEngageModes},
	{"pending-sender-approvals", script(ddlPendingSenderApprovals)},
	{"channel-registration", migrateChannelRegistration},
	{"approval-render-metadata", func(tx *sqlitedb.Tx, now time.Time) error {
		for _, table := range []string{"pending_channel_approvals", "pending_sender_approvals"} {
			if err := addColumns(table, "title TEXT NOT NULL DEFAULT ''", "options_json TEXT NOT NULL DEFAULT '[]'")(tx, now); err != nil {
				return err
			}
		}
		return nil
	}},
	{"container-configs", script(ddlContainerConfigs)},
	{"cli-scope", addColumns("container_configs", "cli_scope TEXT NOT NULL DEFAULT 'group'")},

	// Ours. SQLite's primary key lets (user, role, NULL) repeat, so global
	// grants could be doubled; GrantRole is idempotent, and this index
	// makes the file say so too (after dropping the repeats, keeping the
	// first).
	{"sessiondb-user-roles-global-unique", script(`DELETE FROM user_roles
 WHERE agent_group_id IS NULL
   AND rowid NOT IN (SELECT MIN(rowid) FROM user_roles WHERE agent_group_id IS NULL GROUP BY user_id, role);
CREATE UNIQUE INDEX IF NOT EXISTS idx_user_roles_global ON user_roles(user_id, role) WHERE agent_group_id IS NULL;`)},
	// The resolver's two lookups, over active sessions only: (chat, agent,
	// thread) and an agent group's newest.
	{"sessiondb-sessions-active-indexes", script(`CREATE INDEX IF NOT EXISTS idx_sessions_active_chat
  ON sessions(messaging_group_id, agent_group_id, thread_id) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS idx_sessions_active_newest
  ON sessions(agent_group_id, created_at) WHERE status = 'active';`)},
}

// nanoClawMigrations is how many entries of centralMigrations are
// NanoClaw's: a file whose ledger lacks one of them cannot be read as the
// current schema.
const nanoClawMigrations = 13

const ddlLedger = `CREATE TABLE IF NOT EXISTS schema_version (
  version INTEGER PRIMARY KEY,
  name    TEXT NOT NULL,
  applied TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_schema_version_name ON schema_version(name);`

// ddlInitial is NanoClaw's first schema. messaging_group_agents still has
// trigger_rules and response_scope here; engage-modes replaces them.
const ddlInitial = `CREATE TABLE IF NOT EXISTS agent_groups (
  id             TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  folder         TEXT NOT NULL UNIQUE,
  agent_provider TEXT,
  created_at     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messaging_groups (
  id                    TEXT PRIMARY KEY,
  channel_type          TEXT NOT NULL,
  platform_id           TEXT NOT NULL,
  name                  TEXT,
  is_group              INTEGER DEFAULT 0,
  unknown_sender_policy TEXT NOT NULL DEFAULT 'strict',
  created_at            TEXT NOT NULL,
  UNIQUE(channel_type, platform_id)
);
CREATE TABLE IF NOT EXISTS messaging_group_agents (
  id                 TEXT PRIMARY KEY,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id),
  agent_group_id     TEXT NOT NULL REFERENCES agent_groups(id),
  trigger_rules      TEXT,
  response_scope     TEXT DEFAULT 'all',
  session_mode       TEXT DEFAULT 'shared',
  priority           INTEGER DEFAULT 0,
  created_at         TEXT NOT NULL,
  UNIQUE(messaging_group_id, agent_group_id)
);
CREATE TABLE IF NOT EXISTS users (
  id           TEXT PRIMARY KEY,
  kind         TEXT NOT NULL,
  display_name TEXT,
  created_at   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS user_roles (
  user_id        TEXT NOT NULL REFERENCES users(id),
  role           TEXT NOT NULL,
  agent_group_id TEXT REFERENCES agent_groups(id),
  granted_by     TEXT REFERENCES users(id),
  granted_at     TEXT NOT NULL,
  PRIMARY KEY (user_id, role, agent_group_id)
);
CREATE INDEX IF NOT EXISTS idx_user_roles_scope ON user_roles(agent_group_id, role);
CREATE TABLE IF NOT EXISTS agent_group_members (
  user_id        TEXT NOT NULL REFERENCES users(id),
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
  added_by       TEXT REFERENCES users(id),
  added_at       TEXT NOT NULL,
  PRIMARY KEY (user_id, agent_group_id)
);
CREATE TABLE IF NOT EXISTS user_dms (
  user_id            TEXT NOT NULL REFERENCES users(id),
  channel_type       TEXT NOT NULL,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id),
  resolved_at        TEXT NOT NULL,
  PRIMARY KEY (user_id, channel_type)
);
CREATE TABLE IF NOT EXISTS sessions (
  id                 TEXT PRIMARY KEY,
  agent_group_id     TEXT NOT NULL REFERENCES agent_groups(id),
  messaging_group_id TEXT REFERENCES messaging_groups(id),
  thread_id          TEXT,
  agent_provider     TEXT,
  status             TEXT DEFAULT 'active',
  container_status   TEXT DEFAULT 'stopped',
  last_active        TEXT,
  created_at         TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_sessions_agent_group ON sessions(agent_group_id);
CREATE INDEX IF NOT EXISTS idx_sessions_lookup ON sessions(messaging_group_id, thread_id);
CREATE TABLE IF NOT EXISTS pending_questions (
  question_id    TEXT PRIMARY KEY,
  session_id     TEXT NOT NULL REFERENCES sessions(id),
  message_out_id TEXT NOT NULL,
  platform_id    TEXT,
  channel_type   TEXT,
  thread_id      TEXT,
  title          TEXT NOT NULL,
  options_json   TEXT NOT NULL,
  created_at     TEXT NOT NULL
);`

const ddlChatSDK = `CREATE TABLE IF NOT EXISTS chat_sdk_kv (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  expires_at INTEGER
);
CREATE TABLE IF NOT EXISTS chat_sdk_subscriptions (
  thread_id     TEXT PRIMARY KEY,
  subscribed_at TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS chat_sdk_locks (
  thread_id  TEXT PRIMARY KEY,
  token      TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_sdk_lists (
  key        TEXT NOT NULL,
  idx        INTEGER NOT NULL,
  value      TEXT NOT NULL,
  expires_at INTEGER,
  PRIMARY KEY (key, idx)
);`

const ddlPendingApprovals = `CREATE TABLE IF NOT EXISTS pending_approvals (
  approval_id         TEXT PRIMARY KEY,
  session_id          TEXT REFERENCES sessions(id),
  request_id          TEXT NOT NULL,
  action              TEXT NOT NULL,
  payload             TEXT NOT NULL,
  created_at          TEXT NOT NULL,
  agent_group_id      TEXT REFERENCES agent_groups(id),
  channel_type        TEXT,
  platform_id         TEXT,
  platform_message_id TEXT,
  expires_at          TEXT,
  status              TEXT NOT NULL DEFAULT 'pending',
  title               TEXT NOT NULL DEFAULT '',
  options_json        TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS idx_pending_approvals_action_status ON pending_approvals(action, status);`

const ddlAgentDestinations = `CREATE TABLE IF NOT EXISTS agent_destinations (
  agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
  local_name     TEXT NOT NULL,
  target_type    TEXT NOT NULL,
  target_id      TEXT NOT NULL,
  created_at     TEXT NOT NULL,
  PRIMARY KEY (agent_group_id, local_name)
);
CREATE INDEX IF NOT EXISTS idx_agent_dest_target ON agent_destinations(target_type, target_id);`

const ddlDroppedMessages = `CREATE TABLE IF NOT EXISTS unregistered_senders (
  channel_type       TEXT NOT NULL,
  platform_id        TEXT NOT NULL,
  user_id            TEXT,
  sender_name        TEXT,
  reason             TEXT NOT NULL,
  messaging_group_id TEXT,
  agent_group_id     TEXT,
  message_count      INTEGER NOT NULL DEFAULT 1,
  first_seen         TEXT NOT NULL,
  last_seen          TEXT NOT NULL,
  PRIMARY KEY (channel_type, platform_id)
);
CREATE INDEX IF NOT EXISTS idx_unregistered_senders_last_seen ON unregistered_senders(last_seen);`

const ddlPendingSenderApprovals = `CREATE TABLE IF NOT EXISTS pending_sender_approvals (
  id                 TEXT PRIMARY KEY,
  messaging_group_id TEXT NOT NULL REFERENCES messaging_groups(id),
  agent_group_id     TEXT NOT NULL REFERENCES agent_groups(id),
  sender_identity    TEXT NOT NULL,
  sender_name        TEXT,
  original_message   TEXT NOT NULL,
  approver_user_id   TEXT NOT NULL,
  created_at         TEXT NOT NULL,
  UNIQUE(messaging_group_id, sender_identity)
);
CREATE INDEX IF NOT EXISTS idx_pending_sender_approvals_mg ON pending_sender_approvals(messaging_group_id);`

const ddlPendingChannelApprovals = `CREATE TABLE IF NOT EXISTS pending_channel_approvals (
  messaging_group_id TEXT PRIMARY KEY REFERENCES messaging_groups(id),
  agent_group_id     TEXT NOT NULL REFERENCES agent_groups(id),
  original_message   TEXT NOT NULL,
  approver_user_id   TEXT NOT NULL,
  created_at         TEXT NOT NULL
);`

const ddlContainerConfigs = `CREATE TABLE IF NOT EXISTS container_configs (
  agent_group_id          TEXT PRIMARY KEY REFERENCES agent_groups(id) ON DELETE CASCADE,
  provider                TEXT,
  model                   TEXT,
  effort                  TEXT,
  image_tag               TEXT,
  assistant_name          TEXT,
  max_messages_per_prompt INTEGER,
  skills                  TEXT NOT NULL DEFAULT '"all"',
  mcp_servers             TEXT NOT NULL DEFAULT '{}',
  packages_apt            TEXT NOT NULL DEFAULT '[]',
  packages_npm            TEXT NOT NULL DEFAULT '[]',
  additional_mounts       TEXT NOT NULL DEFAULT '[]',
  updated_at              TEXT NOT NULL
);`

// script is a migration that runs one SQL script.
func script(sql string) func(*sqlitedb.Tx, time.Time) error {
	return func(tx *sqlitedb.Tx, _ time.Time) error { return tx.ExecScript(sql) }
}

// addColumns is a migration that adds each column ("name TYPE ...") the
// table lacks.
func addColumns(table string, defs ...string) func(*sqlitedb.Tx, time.Time) error {
	return func(tx *sqlitedb.Tx, _ time.Time) error {
		have, err := tableColumns(tx.Context(), tx, table)
		if err != nil {
			return err
		}
		for _, def := range defs {
			name, _, _ := strings.Cut(def, " ")
			if have[name] {
				continue
			}
			if err := tx.ExecScript("ALTER TABLE " + table + " ADD COLUMN " + def); err != nil {
				return err
			}
		}
		return nil
	}
}

// tableColumns returns the names of table's columns (none when the table
// does not exist).
func tableColumns(ctx context.Context, q sqlitedb.Querier, table string) (map[string]bool, error) {
	return valueSet[string](ctx, q, "SELECT name FROM pragma_table_info(?)", table)
}

// valueSet runs a one-column query and returns its values as a set.
func valueSet[T comparable](ctx context.Context, q sqlitedb.Querier, query string, args ...any) (map[T]bool, error) {
	vs, err := sqlitedb.Append(ctx, q, query, args, nil, sqlitedb.Value[T])
	if err != nil {
		return nil, err
	}
	set := make(map[T]bool, len(vs))
	for _, v := range vs {
		set[v] = true
	}
	return set, nil
}

// migrateAgentDestinations creates agent_destinations and gives every
// existing wiring a channel destination (spec A8's naming, collisions
// counted per agent group), as NanoClaw's migration does.
func migrateAgentDestinations(tx *sqlitedb.Tx, now time.Time) error {
	if err := tx.ExecScript(ddlAgentDestinations); err != nil {
		return err
	}
	type wired struct{ ag, mg, channel, name string }
	rows, err := sqlitedb.Append(tx.Context(), tx, `SELECT mga.agent_group_id, mga.messaging_group_id, mg.channel_type, COALESCE(mg.name, '')
FROM messaging_group_agents mga JOIN messaging_groups mg ON mg.id = mga.messaging_group_id
ORDER BY mga.rowid`, nil, nil, func(r sqlitedb.Row) (wired, error) {
		var w wired
		err := r.Scan(&w.ag, &w.mg, &w.channel, &w.name)
		return w, err
	})
	if err != nil {
		return err
	}
	taken := map[string]map[string]bool{}
	for _, w := range rows {
		if taken[w.ag] == nil {
			names, err := sqlitedb.Append(tx.Context(), tx, "SELECT local_name FROM agent_destinations WHERE agent_group_id = ?", []any{w.ag}, nil, sqlitedb.Value[string])
			if err != nil {
				return err
			}
			taken[w.ag] = map[string]bool{}
			for _, n := range names {
				taken[w.ag][n] = true
			}
		}
		base := sessiondb.DestinationBaseName(sessiondb.MessagingGroup{ID: w.mg, ChannelType: w.channel, Name: w.name})
		name := sessiondb.UniqueLocalName(base, func(n string) bool { return taken[w.ag][n] })
		taken[w.ag][name] = true
		if _, err := tx.Exec(`INSERT INTO agent_destinations (agent_group_id, local_name, target_type, target_id, created_at)
VALUES (?, ?, 'channel', ?, ?)`, w.ag, name, w.mg, sessiondb.FormatTimestamp(now)); err != nil {
			return err
		}
	}
	return nil
}

// migrateEngageModes replaces trigger_rules and response_scope with the
// four engage columns, backfilled per wiring as NanoClaw's migration does
// (spec A3): a non-empty trigger_rules.pattern → pattern mode with it;
// requiresTrigger false or response_scope 'all' → pattern '.'; else
// mention. sender_scope is known for response_scope 'allowlisted', else
// all; ignored_message_policy drop.
func migrateEngageModes(tx *sqlitedb.Tx, now time.Time) error {
	cols, err := tableColumns(tx.Context(), tx, "messaging_group_agents")
	if err != nil {
		return err
	}
	if err := addColumns("messaging_group_agents", "engage_mode TEXT", "engage_pattern TEXT", "sender_scope TEXT", "ignored_message_policy TEXT")(tx, now); err != nil {
		return err
	}
	if !cols["trigger_rules"] && !cols["response_scope"] {
		return nil
	}
	rulesCol, scopeCol := "NULL", "NULL"
	if cols["trigger_rules"] {
		rulesCol = "trigger_rules"
	}
	if cols["response_scope"] {
		scopeCol = "response_scope"
	}
	type legacy struct {
		id           string
		rules, scope sql.NullString
	}
	rows, err := sqlitedb.Append(tx.Context(), tx, fmt.Sprintf("SELECT id, %s, %s FROM messaging_group_agents", rulesCol, scopeCol), nil, nil,
		func(r sqlitedb.Row) (legacy, error) {
			var l legacy
			err := r.Scan(&l.id, &l.rules, &l.scope)
			return l, err
		})
	if err != nil {
		return err
	}
	for _, l := range rows {
		mode, pattern, scope := legacyEngage(l.rules.String, l.scope)
		if _, err := tx.Exec(`UPDATE messaging_group_agents
SET engage_mode = ?, engage_pattern = ?, sender_scope = ?, ignored_message_policy = 'drop' WHERE id = ?`,
			mode, nullStr(pattern), scope, l.id); err != nil {
			return err
		}
	}
	for _, c := range []string{"trigger_rules", "response_scope"} {
		if cols[c] {
			if err := tx.ExecScript("ALTER TABLE messaging_group_agents DROP COLUMN " + c); err != nil {
				return err
			}
		}
	}
	return nil
}

// legacyEngage maps a pre-engage-modes wiring to its engage columns.
func legacyEngage(triggerRules string, responseScope sql.NullString) (mode sessiondb.EngageMode, pattern string, scope sessiondb.SenderScope) {
	var rules map[string]any
	if triggerRules != "" {
		// Not JSON, or not an object: read as no rules, as NanoClaw does.
		_ = json.Unmarshal([]byte(triggerRules), &rules)
	}
	scope = sessiondb.ScopeAll
	if responseScope.Valid && responseScope.String == "allowlisted" {
		scope = sessiondb.ScopeKnown
	}
	if p, ok := rules["pattern"].(string); ok && p != "" {
		return sessiondb.EngagePattern, p, scope
	}
	if rt, ok := rules["requiresTrigger"].(bool); (ok && !rt) || (responseScope.Valid && responseScope.String == "all") {
		return sessiondb.EngagePattern, sessiondb.MatchEverything, scope
	}
	return sessiondb.EngageMention, "", scope
}

// migrateChannelRegistration adds messaging_groups.denied_at and the
// unknown-channel approvals table.
func migrateChannelRegistration(tx *sqlitedb.Tx, now time.Time) error {
	if err := addColumns("messaging_groups", "denied_at TEXT")(tx, now); err != nil {
		return err
	}
	return tx.ExecScript(ddlPendingChannelApprovals)
}

// appliedMigrations reads the ledger's names; a file without a ledger has
// none.
func appliedMigrations(ctx context.Context, q sqlitedb.Querier) (map[string]bool, error) {
	exists, err := sqlitedb.Append(ctx, q, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'", nil, nil, sqlitedb.Value[string])
	if err != nil || len(exists) == 0 {
		return map[string]bool{}, err
	}
	// A state.db (Hermes) also has a schema_version table, without names.
	cols, err := tableColumns(ctx, q, "schema_version")
	if err != nil {
		return nil, err
	}
	if !cols["name"] {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "its schema_version table has no name column: not a NanoClaw central database (a Hermes state.db?)")
	}
	return valueSet[string](ctx, q, "SELECT name FROM schema_version")
}

// pendingMigrations lists, in order, the migrations applied lacks.
func pendingMigrations(applied map[string]bool) []centralMigration {
	var out []centralMigration
	for _, m := range centralMigrations {
		if !applied[m.name] {
			out = append(out, m)
		}
	}
	return out
}

// applyMigration runs m in the open write transaction unless the ledger
// already names it (another process got there first), and records it as
// the next version.
func applyMigration(tx *sqlitedb.Tx, m centralMigration, now time.Time) error {
	if err := tx.ExecScript(ddlLedger); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow("SELECT COUNT(*) FROM schema_version WHERE name = ?", m.name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if err := m.up(tx, now); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	_, err := tx.Exec("INSERT INTO schema_version (version, name, applied) VALUES ((SELECT COALESCE(MAX(version), 0) + 1 FROM schema_version), ?, ?)",
		m.name, sessiondb.FormatTimestamp(now))
	return err
}
