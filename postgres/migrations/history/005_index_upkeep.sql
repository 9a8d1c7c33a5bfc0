-- Two changes that make each insert cheaper.
--
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

-- sessiondb_fts_text (001) turned every run of ASCII characters other than
-- letters and digits into one space, spaces included: the regular
-- expression replaced each gap between words, and that was a fifth of an
-- insert's time. Spaces now stay as they are: PostgreSQL's parser reads a
-- run of spaces as it reads one, so every message's tsvector is the same
-- as before, and the vectors already stored stay right. A test holds the
-- two forms to the same vectors.
CREATE OR REPLACE FUNCTION sessiondb_fts_text(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT regexp_replace(coalesce(t, ''), '[\x01-\x1f\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+', ' ', 'g') $$;
