-- The trigram index serves one query: the substring search a CJK query
-- falls back to when the word index finds nothing (likeSearch). Every term
-- of that search must occur, and one of them holds a CJK code point, so
-- only rows holding one can match. Indexing the other rows cost every
-- append and import their trigrams (about two thirds of an insert's time
-- on text of a thousand characters) for a search that never reads them.
--
-- sessiondb_has_cjk is the SQL twin of sessiondb.ContainsCJK; a test holds
-- them to the same code points.
CREATE OR REPLACE FUNCTION sessiondb_has_cjk(t text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT t ~ '[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\U00020000-\U0002a6df]' $$;

DROP INDEX IF EXISTS messages_trgm;
CREATE INDEX messages_trgm ON messages USING gin (content {{trgm}}.gin_trgm_ops) WHERE sessiondb_has_cjk(content);
