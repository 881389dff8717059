-- Lanes' shared state: operator pauses and brokers' reported state.
CREATE TABLE IF NOT EXISTS herald_lane_state (
  lane VARCHAR(191) NOT NULL,
  paused BOOLEAN NOT NULL DEFAULT FALSE,
  paused_at DATETIME(6) NULL,
  broker VARCHAR(191) NOT NULL DEFAULT '',
  broker_up BOOLEAN NOT NULL DEFAULT TRUE,
  broker_since DATETIME(6) NULL,
  broker_error VARCHAR(1000) NOT NULL DEFAULT '',
  broker_node VARCHAR(191) NOT NULL DEFAULT '',
  PRIMARY KEY (lane)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
