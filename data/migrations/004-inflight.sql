-- Migration 4 (inflight): a cell's intent, committed before it is dispatched
-- to the init, so a kill -9 during the call leaves "this cell was running".
-- The record that answers the call deletes its intent in the same
-- transaction; an intent still here once its engine is gone is a finding
-- (bh_leak "interrupted"), and stays for the timeline after it is reaped
-- (reaped_ms set), until the store's history prune takes its session.
CREATE TABLE inflight (
  session      TEXT NOT NULL,
  sequence     INTEGER NOT NULL,
  code_sha256  TEXT NOT NULL,
  code         BLOB,                  -- capped as records' code is; NULL when the store keeps digests only
  language     TEXT NOT NULL DEFAULT '',
  principal    TEXT NOT NULL DEFAULT '',  -- who asked, and the owner that opened the session
  owner        TEXT NOT NULL DEFAULT '',
  engine_pid   INTEGER NOT NULL,
  started_ms   INTEGER NOT NULL,
  reaped_ms    INTEGER,
  PRIMARY KEY (session, sequence)
) WITHOUT ROWID; -- one b-tree, not a table and its key's index: fewer pages per commit on the call path
