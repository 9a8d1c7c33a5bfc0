-- A marker in model_config may be written with JSON escapes in its key
-- ("\u005fbranched_from"): the cast to jsonb reads it as the marker, as
-- Hermes' json_extract does, but its plain text does not show it. The
-- function reads the member whenever the text holds the key or any
-- backslash (rare in a model_config); the listings' SQL (configMemberSQL)
-- asks it on the same condition.
CREATE OR REPLACE FUNCTION sessiondb_config_member(cfg text, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF cfg IS NULL OR (strpos(cfg, key) = 0 AND strpos(cfg, E'\\') = 0) THEN
        RETURN NULL;
    END IF;
    RETURN (cfg::jsonb) ->> key;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
