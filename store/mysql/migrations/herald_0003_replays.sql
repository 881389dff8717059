-- Replay history: who replayed which event, from which state, when and why
-- (store.QueryReplayer). One row per event per replay.
CREATE TABLE IF NOT EXISTS herald_replays (
  id BIGINT NOT NULL AUTO_INCREMENT,
  table_name VARCHAR(64) NOT NULL,
  event_id VARCHAR(64) NOT NULL,
  row_id BIGINT NOT NULL,
  from_status VARCHAR(16) NOT NULL,
  replayed_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  replayed_by VARCHAR(255) NOT NULL DEFAULT '',
  reason VARCHAR(1000) NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  KEY event (table_name, event_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
