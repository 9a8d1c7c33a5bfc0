-- The control plane's central registry (spec/control-plane.md part A):
-- NanoClaw's data/v2.db as it stands after NanoClaw's thirteen migrations
-- and ours, in PostgreSQL form. Columns keep the contract's forms:
-- timestamps are NanoClaw's ISO-8601 text, flags integers, JSON text.
-- This schema belongs to the registry alone: its sessions table is the
-- agent session registry, not the history store's sessions.

CREATE TABLE agent_groups (
    id             text PRIMARY KEY,
    name           text NOT NULL,
    folder         text NOT NULL UNIQUE,
    agent_provider text,
    created_at     text NOT NULL
);

CREATE TABLE messaging_groups (
    id                    text PRIMARY KEY,
    channel_type          text NOT NULL,
    platform_id           text NOT NULL,
    name                  text,
    is_group              integer DEFAULT 0,
    unknown_sender_policy text NOT NULL DEFAULT 'strict',
    created_at            text NOT NULL,
    denied_at             text,
    UNIQUE (channel_type, platform_id)
);

CREATE TABLE messaging_group_agents (
    id                     text PRIMARY KEY,
    messaging_group_id     text NOT NULL REFERENCES messaging_groups (id),
    agent_group_id         text NOT NULL REFERENCES agent_groups (id),
    session_mode           text DEFAULT 'shared',
    priority               integer DEFAULT 0,
    created_at             text NOT NULL,
    engage_mode            text,
    engage_pattern         text,
    sender_scope           text,
    ignored_message_policy text,
    UNIQUE (messaging_group_id, agent_group_id)
);
CREATE INDEX messaging_group_agents_agent ON messaging_group_agents (agent_group_id);

CREATE TABLE users (
    id           text PRIMARY KEY,
    kind         text NOT NULL,
    display_name text,
    created_at   text NOT NULL
);

-- NanoClaw's key is (user_id, role, agent_group_id); PostgreSQL keys
-- cannot hold the NULL of a global grant, so two unique indexes say the
-- same: one grant per scope, and one global grant per user and role.
CREATE TABLE user_roles (
    user_id        text NOT NULL REFERENCES users (id),
    role           text NOT NULL,
    agent_group_id text REFERENCES agent_groups (id),
    granted_by     text REFERENCES users (id),
    granted_at     text NOT NULL
);
CREATE UNIQUE INDEX user_roles_scoped ON user_roles (user_id, role, agent_group_id) WHERE agent_group_id IS NOT NULL;
CREATE UNIQUE INDEX user_roles_global ON user_roles (user_id, role) WHERE agent_group_id IS NULL;
CREATE INDEX user_roles_scope ON user_roles (agent_group_id, role);

CREATE TABLE agent_group_members (
    user_id        text NOT NULL REFERENCES users (id),
    agent_group_id text NOT NULL REFERENCES agent_groups (id),
    added_by       text REFERENCES users (id),
    added_at       text NOT NULL,
    PRIMARY KEY (user_id, agent_group_id)
);
CREATE INDEX agent_group_members_group ON agent_group_members (agent_group_id);

CREATE TABLE user_dms (
    user_id            text NOT NULL REFERENCES users (id),
    channel_type       text NOT NULL,
    messaging_group_id text NOT NULL REFERENCES messaging_groups (id),
    resolved_at        text NOT NULL,
    PRIMARY KEY (user_id, channel_type)
);

CREATE TABLE sessions (
    id                 text PRIMARY KEY,
    agent_group_id     text NOT NULL REFERENCES agent_groups (id),
    messaging_group_id text REFERENCES messaging_groups (id),
    thread_id          text,
    agent_provider     text,
    status             text DEFAULT 'active',
    container_status   text DEFAULT 'stopped',
    last_active        text,
    created_at         text NOT NULL
);
CREATE INDEX sessions_agent_group ON sessions (agent_group_id);
CREATE INDEX sessions_lookup ON sessions (messaging_group_id, thread_id);
-- The resolver's two lookups, over active sessions only.
CREATE INDEX sessions_active_chat ON sessions (messaging_group_id, agent_group_id, thread_id) WHERE status = 'active';
CREATE INDEX sessions_active_newest ON sessions (agent_group_id, created_at) WHERE status = 'active';
CREATE INDEX sessions_created ON sessions (created_at, id);

CREATE TABLE pending_questions (
    question_id    text PRIMARY KEY,
    session_id     text NOT NULL REFERENCES sessions (id),
    message_out_id text NOT NULL,
    platform_id    text,
    channel_type   text,
    thread_id      text,
    title          text NOT NULL,
    options_json   text NOT NULL,
    created_at     text NOT NULL
);
CREATE INDEX pending_questions_session ON pending_questions (session_id);

CREATE TABLE pending_approvals (
    approval_id         text PRIMARY KEY,
    session_id          text REFERENCES sessions (id),
    request_id          text NOT NULL,
    action              text NOT NULL,
    payload             text NOT NULL,
    created_at          text NOT NULL,
    agent_group_id      text REFERENCES agent_groups (id),
    channel_type        text,
    platform_id         text,
    platform_message_id text,
    expires_at          text,
    status              text NOT NULL DEFAULT 'pending',
    title               text NOT NULL DEFAULT '',
    options_json        text NOT NULL DEFAULT '[]'
);
CREATE INDEX pending_approvals_action_status ON pending_approvals (action, status);
CREATE INDEX pending_approvals_session ON pending_approvals (session_id);

CREATE TABLE agent_destinations (
    agent_group_id text NOT NULL REFERENCES agent_groups (id),
    local_name     text NOT NULL,
    target_type    text NOT NULL,
    target_id      text NOT NULL,
    created_at     text NOT NULL,
    PRIMARY KEY (agent_group_id, local_name)
);
CREATE INDEX agent_dest_target ON agent_destinations (target_type, target_id);

CREATE TABLE unregistered_senders (
    channel_type       text NOT NULL,
    platform_id        text NOT NULL,
    user_id            text,
    sender_name        text,
    reason             text NOT NULL,
    messaging_group_id text,
    agent_group_id     text,
    message_count      integer NOT NULL DEFAULT 1,
    first_seen         text NOT NULL,
    last_seen          text NOT NULL,
    PRIMARY KEY (channel_type, platform_id)
);
CREATE INDEX unregistered_senders_last_seen ON unregistered_senders (last_seen);

CREATE TABLE pending_sender_approvals (
    id                 text PRIMARY KEY,
    messaging_group_id text NOT NULL REFERENCES messaging_groups (id),
    agent_group_id     text NOT NULL REFERENCES agent_groups (id),
    sender_identity    text NOT NULL,
    sender_name        text,
    original_message   text NOT NULL,
    approver_user_id   text NOT NULL,
    created_at         text NOT NULL,
    title              text NOT NULL DEFAULT '',
    options_json       text NOT NULL DEFAULT '[]',
    UNIQUE (messaging_group_id, sender_identity)
);

CREATE TABLE pending_channel_approvals (
    messaging_group_id text PRIMARY KEY REFERENCES messaging_groups (id),
    agent_group_id     text NOT NULL REFERENCES agent_groups (id),
    original_message   text NOT NULL,
    approver_user_id   text NOT NULL,
    created_at         text NOT NULL,
    title              text NOT NULL DEFAULT '',
    options_json       text NOT NULL DEFAULT '[]'
);

CREATE TABLE container_configs (
    agent_group_id          text PRIMARY KEY REFERENCES agent_groups (id) ON DELETE CASCADE,
    provider                text,
    model                   text,
    effort                  text,
    image_tag               text,
    assistant_name          text,
    max_messages_per_prompt integer,
    skills                  text NOT NULL DEFAULT '"all"',
    mcp_servers             text NOT NULL DEFAULT '{}',
    packages_apt            text NOT NULL DEFAULT '[]',
    packages_npm            text NOT NULL DEFAULT '[]',
    additional_mounts       text NOT NULL DEFAULT '[]',
    cli_scope               text NOT NULL DEFAULT 'group',
    updated_at              text NOT NULL
);
