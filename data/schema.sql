-- bulkhead's store, migration 1. The session id (a capability) is never
-- stored: sessions are keyed by its SHA-256 fingerprint.

CREATE TABLE sessions (
  fingerprint     TEXT PRIMARY KEY,
  sandbox         TEXT NOT NULL UNIQUE,   -- the runtime's container name
  runtime         TEXT NOT NULL,          -- crun | runsc
  tier            TEXT NOT NULL,
  floor           TEXT NOT NULL DEFAULT '',
  principal       TEXT NOT NULL DEFAULT '',
  owner           TEXT NOT NULL DEFAULT '', -- a keyed digest computed by the client
  run_key         TEXT NOT NULL DEFAULT '',
  state           TEXT NOT NULL,          -- opening ready busy ending ended failed
  engine_pid      INTEGER NOT NULL,
  lease_until_ms  INTEGER NOT NULL,       -- an intent row older than its lease is recoverable
  created_ms      INTEGER NOT NULL,
  expires_ms      INTEGER NOT NULL,
  last_call_ms    INTEGER,
  ended_ms        INTEGER,
  end_reason      TEXT,
  end_detail      TEXT,
  calls           INTEGER NOT NULL DEFAULT 0,
  last_record_sha256 TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sessions_live ON sessions(state) WHERE state NOT IN ('ended');

CREATE TABLE records (
  id              INTEGER PRIMARY KEY,
  version         INTEGER NOT NULL,
  request_sha256  TEXT NOT NULL,
  result_sha256   TEXT NOT NULL,
  unanswered      TEXT NOT NULL DEFAULT '',
  provider        TEXT NOT NULL,
  isolation       TEXT NOT NULL,
  environment     TEXT NOT NULL,
  policy          TEXT NOT NULL DEFAULT '',
  software_identity TEXT NOT NULL DEFAULT '',
  software_rule_id  TEXT NOT NULL DEFAULT '',
  started_unix_ms INTEGER NOT NULL,
  ended_unix_ms   INTEGER NOT NULL,
  session         TEXT NOT NULL DEFAULT '',
  sequence        INTEGER NOT NULL DEFAULT 0,
  previous_sha256 TEXT NOT NULL DEFAULT '',
  record_sha256   TEXT NOT NULL UNIQUE,
  -- forensics (not part of the digest): kept unless the store keeps digests only
  language        TEXT NOT NULL DEFAULT '',
  exit_code       INTEGER,
  flags           TEXT NOT NULL DEFAULT '',
  duration_us     INTEGER,
  code            BLOB,
  stdout_prefix   BLOB,
  stderr_prefix   BLOB
);
CREATE UNIQUE INDEX records_chain ON records(session, sequence) WHERE session != '';
CREATE INDEX records_time ON records(started_unix_ms);

CREATE TABLE events (
  id        INTEGER PRIMARY KEY,
  at_ms     INTEGER NOT NULL,
  kind      TEXT NOT NULL,       -- state, orphan_reaped, reaped, ...
  session   TEXT NOT NULL DEFAULT '',
  sandbox   TEXT NOT NULL DEFAULT '',
  detail    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_time ON events(at_ms);
