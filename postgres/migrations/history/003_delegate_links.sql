-- A delete takes a session's delegate subagents with it, as Hermes'
-- delete_session does, and finds them by the _delegate_from marker in
-- model_config (sessiondb.LinksSQL). This partial index holds only the
-- sessions whose model_config may hold the marker, so finding them reads
-- those few rows, not every session.
CREATE INDEX IF NOT EXISTS sessions_delegate_links ON sessions (id) WHERE model_config LIKE '%delegate%';
