-- The columns and the per-session table that Hermes added up to its schema
-- 21 (docs/hermes-versions.md), so that a session moved here from a newer
-- Hermes' state.db, and back, keeps every field. Types as in 001: integers
-- bigint, REAL double precision, JSON as text. Defaults are Hermes' own.
-- Hermes' live state tables (gateway_routing, compression_locks,
-- async_delegations) are not per-session history and have no place here.

ALTER TABLE sessions
    ADD COLUMN api_call_count bigint DEFAULT 0,
    -- The gateway's peer and its metadata (v17, v18).
    ADD COLUMN session_key text,
    ADD COLUMN chat_id text,
    ADD COLUMN chat_type text,
    ADD COLUMN thread_id text,
    ADD COLUMN display_name text,
    ADD COLUMN origin_json text,
    ADD COLUMN expiry_finalized bigint DEFAULT 0,
    -- Where the session ran (reconciled columns).
    ADD COLUMN cwd text,
    ADD COLUMN git_branch text,
    ADD COLUMN git_repo_root text,
    -- Cross-platform handoff and compression state.
    ADD COLUMN handoff_state text,
    ADD COLUMN handoff_platform text,
    ADD COLUMN handoff_error text,
    ADD COLUMN compression_failure_cooldown_until double precision,
    ADD COLUMN compression_failure_error text,
    ADD COLUMN compression_fallback_streak bigint NOT NULL DEFAULT 0,
    ADD COLUMN rewind_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN archived bigint NOT NULL DEFAULT 0;

ALTER TABLE messages
    ADD COLUMN effect_disposition text,
    ADD COLUMN reasoning_content text,
    ADD COLUMN codex_message_items text,
    ADD COLUMN platform_message_id text,
    ADD COLUMN observed bigint DEFAULT 0,
    -- 0: hidden from the live conversation; with compacted = 1 summarised
    -- away by an in-place compaction, else taken back by a rewind.
    ADD COLUMN active bigint NOT NULL DEFAULT 1,
    ADD COLUMN compacted bigint NOT NULL DEFAULT 0;

-- Tokens and cost by the model and billing route they were spent on (v20),
-- in Hermes' current shape; deleted with the session.
CREATE TABLE session_model_usage (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    model text NOT NULL,
    billing_provider text NOT NULL DEFAULT '',
    billing_base_url text NOT NULL DEFAULT '',
    billing_mode text NOT NULL DEFAULT '',
    api_call_count bigint NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    estimated_cost_usd double precision NOT NULL DEFAULT 0,
    actual_cost_usd double precision NOT NULL DEFAULT 0,
    cost_status text,
    cost_source text,
    first_seen double precision,
    last_seen double precision,
    PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode)
);
CREATE INDEX session_model_usage_model ON session_model_usage (model);
