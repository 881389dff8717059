-- Log lanes (docs/loglanes.md): each lane's position in the database's log
-- (the end LSN of the last settled transaction, as a number), its slot, and
-- the lease that lets one reader at a time relay it.
CREATE TABLE IF NOT EXISTS herald_log_lanes (
  lane TEXT PRIMARY KEY,
  slot TEXT NOT NULL,
  table_name TEXT NOT NULL DEFAULT '',
  position BIGINT NOT NULL DEFAULT 0,
  owner TEXT NOT NULL DEFAULT '',
  lease_until TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- Delivered rows of log lanes not yet marked: one row per recorded batch,
-- written with its position (narrow, cheap), applied to the outbox rows in
-- bulk off the hot path and then deleted.
CREATE TABLE IF NOT EXISTS herald_log_marks (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lane TEXT NOT NULL,
  table_name TEXT NOT NULL,
  ids BIGINT[] NOT NULL,
  receipts TEXT[] NOT NULL
);
