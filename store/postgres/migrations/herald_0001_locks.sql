-- Herald's own tables, shared by every outbox table in the database.
CREATE TABLE IF NOT EXISTS herald_locks (
  name TEXT PRIMARY KEY,
  locked_until TIMESTAMPTZ NOT NULL
);
