-- The projection table (docs/projector.md): one row per (projection, tenant,
-- event id), the dedupe key. failed and dead rows keep the event so that it
-- can be replayed after its source forgot it. The state index serves status
-- counts, the failed-row sweep and retention of done rows. Times are UTC.
CREATE TABLE IF NOT EXISTS `{{table}}` (
  projection VARCHAR(64) NOT NULL,
  tenant VARCHAR(64) NOT NULL DEFAULT '',
  event_id VARCHAR(64) NOT NULL,
  state VARCHAR(16) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  last_error VARCHAR(1000) NOT NULL DEFAULT '',
  lease_until DATETIME(6) NULL,
  next_attempt_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  updated_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  event_type VARCHAR(255) NOT NULL DEFAULT '',
  topic VARCHAR(255) NOT NULL DEFAULT '',
  partition_key VARCHAR(255) NOT NULL DEFAULT '',
  headers TEXT NOT NULL DEFAULT ('{}'),
  payload LONGBLOB NULL,
  PRIMARY KEY (projection, tenant, event_id),
  KEY state (projection, state, updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
