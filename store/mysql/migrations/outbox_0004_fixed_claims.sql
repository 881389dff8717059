-- Claims that rewrite a row in place (issue 11; see version 3 for marks).
-- A claim sets status from 'pending' to 'in_flight' (7 to 9 bytes) and
-- lease_owner from '' to the worker's name: both grow the row, so InnoDB
-- deleted and reinserted every claimed record. Measured on MariaDB 10.11
-- with 1 KiB rows, by SQL alone: updating 1,000 rows that way took 36 ms
-- (median of 20), with both columns already at their claimed size 5.5 ms.
-- Version 4 makes new rows start at that size:
--
-- * status defaults to 'pending' padded with spaces to 9 bytes, the length
--   of 'in_flight' and 'delivered';
-- * lease_owner defaults to 64 spaces, and a claim writes the owner padded
--   with spaces to 64 bytes (longer names are stored as they are).
--
-- The table's collation (utf8mb4_bin) is PAD SPACE: 'pending  ' = 'pending'
-- and lease_owner = '' still hold in every comparison and index, so queries
-- written against the documented values, Herald's and users', are
-- unchanged. A plain SELECT shows the trailing spaces; Herald trims them.
-- Rows written before the upgrade, and rows whose INSERT names status or
-- lease_owner, grow once, at their first claim, as before.
--
-- Locking: each ALTER changes a default only (INSTANT): no row is read or
-- written, each holds the table's exclusive metadata lock for a moment.
-- Relays of an older build keep working on an upgraded table (their claims
-- grow rows as before).
ALTER TABLE `{{table}}`
  ALTER COLUMN status SET DEFAULT 'pending  ',
  ALGORITHM=INSTANT;
ALTER TABLE `{{table}}`
  ALTER COLUMN lease_owner SET DEFAULT (REPEAT(' ', 64)),
  ALGORITHM=INSTANT;
