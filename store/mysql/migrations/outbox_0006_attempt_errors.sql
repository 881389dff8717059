-- The errors of the last failed attempts (store.Record.Errors). Up to
-- version 5 a row kept only its last error; version 6 adds attempt_errors,
-- a JSON array of the last store.MaxAttemptErrors failures ({"n": attempt,
-- "at": Unix ms, "e": error}), which Retry and Kill append to in the
-- statement that marks the failure. NULL until a row first fails; a
-- delivery never writes it. INSERTs that list their columns (docs/sql.md)
-- are unchanged.
--
-- Locking: adding a nullable column without a default at the end of the
-- table changes its definition only (INSTANT): no row is read or written,
-- and the ALTER holds the table's exclusive metadata lock for a moment.
-- MariaDB adds a column instantly only to a table without indexes on
-- virtual columns; otherwise it rebuilds the table and blocks writes
-- meanwhile (LOCK=SHARED). So the indexes ordered and tenant lanes read
-- (version 5: ordered_claim, tenant_claim, key_order, all on virtual
-- columns) are dropped first, whatever lanes the table serves, and
-- Store.MigrateFor (`herald migrate` with the lanes configured) builds
-- the ones its lanes read again afterwards, online (INPLACE, LOCK=NONE),
-- as it does for any table that lacks them. While they are being built,
-- ordered and tenant lanes' claims fail naming the index (the relay
-- retries); plain lanes go on. A crash halfway leaves indexes missing or
-- the column added: the next migration drops what is left (a missing
-- index is no error), finds the column there (appliedBefore) and rebuilds
-- the indexes the lanes read. Relays of an older build keep working on an
-- upgraded table (they do not write the column).
ALTER TABLE `{{table}}` DROP INDEX ordered_claim, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE `{{table}}` DROP INDEX tenant_claim, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE `{{table}}` DROP INDEX key_order, ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE `{{table}}` ADD COLUMN attempt_errors TEXT NULL, ALGORITHM=INSTANT;
