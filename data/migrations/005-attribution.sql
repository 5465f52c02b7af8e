-- Migration 5 (attribution): an event names who acted and the request that
-- asked. actor is a principal's name (an agent's token, the operator's), the
-- embedded console's "console", a policy clock's "policy:idle",
-- "policy:ttl", "policy:retention" or "policy:images_budget", or "engine"
-- for what the engine did of its own accord (a reap, a dead sandbox);
-- request_id is the daemon's audit request id of the call that acted ("" for
-- none). Rows written before this migration say '' for both: not known.
ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
