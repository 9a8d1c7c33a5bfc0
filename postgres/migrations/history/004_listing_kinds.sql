-- Listings tell a session's kind from markers in model_config, as Hermes'
-- list_sessions_rich and get_compression_tip do: _delegate_from for a
-- delegate subagent, _branched_from for a /branch. model_config is text
-- and may not be JSON (Hermes never checks it); a cast would then fail the
-- whole listing. This function reads one member, or NULL when the text is
-- not a JSON object or lacks it, so one bad row never fails a listing.
CREATE OR REPLACE FUNCTION sessiondb_config_member(cfg text, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF cfg IS NULL OR strpos(cfg, key) = 0 THEN
        RETURN NULL;
    END IF;
    RETURN (cfg::jsonb) ->> key;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
