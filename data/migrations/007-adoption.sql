-- Migration 7 (fleet, issue 20): a hibernated session adopted from another
-- engine (bh_engine_adopt_hibernated). Its chain began in that engine's
-- store: this store's first record of it follows record adopted_after
-- (digest adopted_after_sha256) of host origin_host. 0, '' and '' for a
-- session opened here (and for rows written before this migration).
ALTER TABLE sessions ADD COLUMN origin_host TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN adopted_after INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN adopted_after_sha256 TEXT NOT NULL DEFAULT '';
