-- Migration 2: what a new engine needs to re-adopt a hibernated session.
ALTER TABLE sessions ADD COLUMN awake_ms INTEGER NOT NULL DEFAULT 0;      -- lifetime used
ALTER TABLE sessions ADD COLUMN hibernated_ms INTEGER;                    -- when it went to disk
ALTER TABLE sessions ADD COLUMN lifetime_ms INTEGER NOT NULL DEFAULT 0;   -- its awake-time allowance
