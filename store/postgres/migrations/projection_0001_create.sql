-- The projection table (docs/projector.md): one row per (projection, tenant,
-- event id), the dedupe key. failed and dead rows keep the event so that it
-- can be replayed after its source forgot it. The state index serves status
-- counts, the failed-row sweep and retention of done rows.
CREATE TABLE IF NOT EXISTS "{{table}}" (
  projection TEXT NOT NULL,
  tenant TEXT NOT NULL DEFAULT '',
  event_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('processing', 'failed', 'done', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  lease_until TIMESTAMPTZ,
  next_attempt_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  event_type TEXT NOT NULL DEFAULT '',
  topic TEXT NOT NULL DEFAULT '',
  partition_key TEXT NOT NULL DEFAULT '',
  headers TEXT NOT NULL DEFAULT '{}',
  payload BYTEA,
  PRIMARY KEY (projection, tenant, event_id)
);
CREATE INDEX IF NOT EXISTS "{{table}}_state" ON "{{table}}" (projection, state, updated_at);
