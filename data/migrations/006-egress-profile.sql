-- Migration 6 (egress, issue 18): the egress profile a session holds for
-- its life (OpenSession's grantProfile), so that a hibernated session the
-- next engine re-adopts holds it again at wake. '' for none (and for rows
-- written before this migration). The name only: the profile itself lives
-- in the daemon's profiles file and is looked up again at wake.
ALTER TABLE sessions ADD COLUMN egress_profile TEXT NOT NULL DEFAULT '';
