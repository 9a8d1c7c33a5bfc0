-- janebot's subagent store (spec/control-plane.md part B): one row per
-- Slack thread's coding subagent. Times are epoch milliseconds, janebot's
-- own form; status is one of the three stored words.
CREATE TABLE subagent_sessions (
    id text PRIMARY KEY,
    thread_key text NOT NULL UNIQUE,
    channel_id text NOT NULL,
    thread_ts text NOT NULL,
    sandbox_name text NOT NULL,
    pi_session_file text NOT NULL,
    status text NOT NULL CHECK (status IN ('idle', 'running', 'error')),
    running_job_id text,
    last_job_id text,
    last_error text,
    turns bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);

-- Listings newest first (keyset on updated_at, id), of every channel and
-- of one; pruning by age; the running records to reconcile.
CREATE INDEX subagent_sessions_updated ON subagent_sessions (updated_at DESC, id DESC);
CREATE INDEX subagent_sessions_channel ON subagent_sessions (channel_id, updated_at DESC, id DESC);
CREATE INDEX subagent_sessions_running ON subagent_sessions (id) WHERE status = 'running';
