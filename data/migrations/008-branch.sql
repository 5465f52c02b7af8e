-- Migration 8 (density, issue 21): a session branched from another
-- (bh_session_branch) names its parent's fingerprint. Its chain goes on
-- from the parent's record adopted_after (digest adopted_after_sha256), the
-- columns migration 7 made for an adopted chain: a child's first record
-- follows its parent's last. '' for every other session.
ALTER TABLE sessions ADD COLUMN branched_from TEXT NOT NULL DEFAULT '';
