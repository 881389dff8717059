-- Herald's own tables, shared by every outbox table in the database.
CREATE TABLE IF NOT EXISTS herald_locks (
  name VARCHAR(191) NOT NULL,
  locked_until DATETIME(6) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
