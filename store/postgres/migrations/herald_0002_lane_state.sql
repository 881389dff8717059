-- Lanes' shared state: operator pauses and brokers' reported state.
CREATE TABLE IF NOT EXISTS herald_lane_state (
  lane TEXT PRIMARY KEY,
  paused BOOLEAN NOT NULL DEFAULT FALSE,
  paused_at TIMESTAMPTZ,
  broker TEXT NOT NULL DEFAULT '',
  broker_up BOOLEAN NOT NULL DEFAULT TRUE,
  broker_since TIMESTAMPTZ,
  broker_error TEXT NOT NULL DEFAULT '',
  broker_node TEXT NOT NULL DEFAULT ''
);
