-- The outbox table (docs/sql.md). Times are UTC from the database clock.
-- Indexes: claim serves the claim's ORDER BY directly (one ready status);
-- tenant_claim the same for lanes limited to one tenant; ordered_claim
-- serves ordered lanes, which take ready rows in id order; key_order finds
-- the earlier unfinished rows of a partition key for ordered lanes.
CREATE TABLE IF NOT EXISTS `{{table}}` (
  id BIGINT NOT NULL AUTO_INCREMENT,
  event_id VARCHAR(64) NOT NULL DEFAULT (UUID()),
  tenant VARCHAR(64) NOT NULL DEFAULT '',
  topic VARCHAR(255) NOT NULL,
  event_type VARCHAR(255) NOT NULL,
  partition_key VARCHAR(255) NOT NULL DEFAULT '',
  headers TEXT NOT NULL DEFAULT ('{}'),
  payload LONGBLOB NOT NULL DEFAULT (''),
  status VARCHAR(16) NOT NULL DEFAULT 'pending',
  attempts INT NOT NULL DEFAULT 0,
  last_error VARCHAR(1000) NOT NULL DEFAULT '',
  lease_owner VARCHAR(255) NOT NULL DEFAULT '',
  lease_token BIGINT NOT NULL DEFAULT 0,
  receipt TEXT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  available_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  delivered_at DATETIME(6) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY event_id (event_id),
  KEY claim (status, available_at, id),
  KEY tenant_claim (tenant, status, available_at, id),
  KEY ordered_claim (status, id, available_at),
  KEY key_order (partition_key, tenant, status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
