-- Log lanes (docs/loglanes.md, package store/mysql/binlog): each lane's
-- position in the binary log (the file and the offset after the last
-- settled transaction; position is the two as one number, file index << 32
-- | offset, so that a write never moves it back), and the lease that lets
-- one reader at a time relay it.
CREATE TABLE IF NOT EXISTS herald_log_lanes (
  lane VARCHAR(255) NOT NULL,
  table_name VARCHAR(64) NOT NULL DEFAULT '',
  log_file VARCHAR(255) NOT NULL DEFAULT '',
  position BIGINT NOT NULL DEFAULT 0,
  owner VARCHAR(255) NOT NULL DEFAULT '',
  lease_until DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  updated_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (lane)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Delivered rows of log lanes not yet marked: one row per recorded batch,
-- written with its position, a JSON array of [row id, receipt] pairs,
-- applied to the outbox rows in bulk off the hot path and then deleted.
CREATE TABLE IF NOT EXISTS herald_log_marks (
  id BIGINT NOT NULL AUTO_INCREMENT,
  lane VARCHAR(255) NOT NULL,
  table_name VARCHAR(64) NOT NULL,
  marks LONGTEXT NOT NULL,
  PRIMARY KEY (id),
  KEY lane (lane, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
