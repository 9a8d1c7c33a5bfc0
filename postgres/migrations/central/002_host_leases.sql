-- Host leases (issue 11): which host daemon serves each agent session, and
-- which inbound events a host has taken for routing.
CREATE TABLE session_leases (
    session_id text PRIMARY KEY,
    host       text NOT NULL,
    expires_at text NOT NULL,
    epoch      bigint NOT NULL
);
CREATE TABLE routed_events (
    event_key text PRIMARY KEY,
    host      text NOT NULL,
    routed_at text NOT NULL
);
CREATE INDEX routed_events_at ON routed_events (routed_at);
