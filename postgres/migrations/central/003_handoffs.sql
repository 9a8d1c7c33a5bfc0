-- Hand-offs (issue 11): inbound rows routed by one host for a session that
-- another host serves, queued until that host writes them into the
-- session's mailbox on its own machine.
CREATE TABLE session_handoffs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id     text NOT NULL,
    agent_group_id text NOT NULL,
    row_id         text NOT NULL,
    row_data       bytea NOT NULL,
    wake           boolean NOT NULL,
    created_at     text NOT NULL,
    UNIQUE (session_id, row_id)
);
CREATE INDEX session_leases_host ON session_leases (host, expires_at);
